"""The client as a user runs it: ``python -m presa_trio …`` against real servers.

Every server here is a real process on a loopback port: ``presa-trio
serve`` (the demo, or a typed server of the tests' own), the official
Python SDK's ``MCPServer`` (:mod:`tests.client.sdk_server`), the same SDK
app as a server of the initialize era, and Python's ``http.server`` for a
server that is no MCP at all. The client runs as a
child process too, with stdin that is not a terminal, so every question it
cannot answer from its flags must end it with one line.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator

import pytest

from tests.client.helpers import (
    SDK_SERVER,
)
from tests.e2e.serve_process import ServeProcess, presa_serve, serving


@pytest.fixture
async def presa() -> AsyncIterator[ServeProcess]:
    async with presa_serve() as served:
        yield served


@pytest.fixture
async def typed() -> AsyncIterator[ServeProcess]:
    """``presa-trio serve`` of a user's typed server (:mod:`tests.client.typed_server`)."""
    async with presa_serve("tests.client.typed_server:server") as served:
        yield served


@pytest.fixture
async def sdk() -> AsyncIterator[ServeProcess]:
    async with serving([sys.executable, SDK_SERVER]) as served:
        yield served


@pytest.fixture
async def sdk_legacy() -> AsyncIterator[ServeProcess]:
    async with serving([sys.executable, SDK_SERVER, "--legacy"]) as served:
        yield served


#: Python's static file server, saying where it serves as presa does.
STATIC_SERVER = """
import http.server, sys
server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
print(f"serving http://127.0.0.1:{server.server_port}/mcp", file=sys.stderr, flush=True)
server.serve_forever()
"""


@pytest.fixture
async def not_mcp() -> AsyncIterator[ServeProcess]:
    """A web server that is no MCP server: it answers a POST with 501 and an HTML page."""
    async with serving([sys.executable, "-c", STATIC_SERVER]) as served:
        yield served


@pytest.fixture
def closed_port_url() -> str:
    """A loopback URL nothing listens on (a port the kernel just handed out, closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"
