"""End to end: a serving process loads what serving needs, and not the rest.

The command line knows every command, but it imports a command's machinery
only when that command runs (presa_trio.cli.main): the client and httpx for the
client's commands, the reloader for ``--reload``, the stdio edge for
``stdio``, JOSE for JWT access tokens, sqlite3 or psycopg for their store
URLs. A module loaded for nothing is resident memory in every server process
(docs/performance.md, "Where the peak RSS goes").

The modules a process loaded are read from ``python -X importtime``, which
writes one line per module to stderr as it is imported: a real
``presa-trio serve`` on the memory store, after it answered a ``tools/call``,
and a real ``presa-trio stdio`` until its stdin ends.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterable

import httpx
import trio

from presa_trio.testing import request
from tests.e2e.harness import headers
from tests.e2e.serve_process import REPOSITORY, serving

#: Modules a server on the memory store, without ``--auth-*`` or ``--reload``, never uses.
NOT_FOR_SERVING = (
    "httpx",
    "presa_trio.client.commands",
    "presa_trio.client.transport",
    "presa_trio.cli.reload",
    "joserfc",
    "cryptography",
    "presa_trio.auth.jwt_tokens",
    "sqlite3",
    "presa_trio.tasks.stores.sqlite",
    "psycopg",
    "presa_trio.tasks.stores.postgres",
)
IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(?P<module>\S+)\s*$")


def imported(lines: Iterable[str]) -> set[str]:
    """The modules ``-X importtime`` lines name."""
    return {match["module"] for line in lines if (match := IMPORT_LINE.match(line))}


def loaded(modules: set[str], names: Iterable[str] = NOT_FOR_SERVING) -> list[str]:
    """The ``names`` among ``modules`` (a submodule's package is always imported first)."""
    return sorted(set(names) & modules)


def run_to_the_end(*arguments: str) -> tuple[int, set[str]]:
    """Run ``presa-trio ARGUMENTS`` with stdin at its end: its exit status and modules."""
    finished = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "presa_trio", *arguments],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        timeout=60,
        check=False,
    )
    return finished.returncode, imported(finished.stderr.splitlines())


async def test_serve_loads_neither_the_client_nor_unused_stores_or_auth() -> None:
    """presa-defined (command line): ``presa-trio serve`` on the memory store answers a
    tools/call having loaded hypercorn and the HTTP edge, and none of httpx, the
    client's commands, the reloader, JOSE, sqlite3 or psycopg."""
    command = [sys.executable, "-X", "importtime", "-m", "presa_trio", "serve", "--port", "0"]
    message = request("tools/call", {"name": "test_simple_text", "arguments": {}})
    async with serving(command) as served:
        with trio.fail_after(10):
            async with httpx.AsyncClient(timeout=5) as http:
                response = await http.post(served.url, json=message, headers=headers(message))
            await served.wait_for_line("presa_trio.access")
    assert response.status_code == 200
    assert "content" in response.json()["result"]
    modules = imported(served.lines)
    assert {"hypercorn.trio.run", "presa_trio.http.serving", "jsonschema_rs"} <= modules
    assert loaded(modules) == []


def test_stdio_loads_neither_the_client_nor_unused_stores() -> None:
    """presa-defined (command line): ``presa-trio stdio`` serves until its stdin ends
    without loading httpx, the client's commands, the reloader or an unused store."""
    status, modules = run_to_the_end("stdio")
    assert status == 0
    assert {"presa_trio.stdio", "presa_trio.server.dispatch"} <= modules
    assert loaded(modules) == []


def test_a_client_command_loads_the_client() -> None:
    """presa-defined (command line): the boundary is the command, not a missing
    feature: ``presa-trio list`` imports the client and httpx when it runs (here it
    finds nothing listening and says so in one line, exit 3)."""
    status, modules = run_to_the_end("list", "http://127.0.0.1:9/mcp")
    assert status == 3
    client = ("httpx", "presa_trio.client.commands")
    assert loaded(modules, client) == sorted(client)
