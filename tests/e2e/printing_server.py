"""A server that writes to stdout and reads stdin behind the protocol's back (for
``presa-trio stdio``).

It prints as it is imported; its ``stray`` tool prints, flushed and not,
and runs a child process that inherits stdout and writes to it; its
``read_stdin`` tool runs a child that inherits stdin and reads it to its
end, and answers with how many bytes the child read. What a real server's
``print()`` debugging, a chatty library or a helper program does.
"""

from __future__ import annotations

import sys
from typing import Any

import trio

from presa_trio.server import RequestContext, Server

print("printed while the server module was imported", flush=True)

server = Server("printing", "1.0.0")

#: What a child process reads from stdin and says on stdout.
COUNT_STDIN = "import sys; print(len(sys.stdin.buffer.read()))"


@server.tool(description="Prints to stdout, and runs a child that writes to it")
async def stray(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    print("printed by a tool, flushed", flush=True)
    print("printed by a tool, left in the buffer")
    await trio.run_process([sys.executable, "-c", "print('written by a child process')"])
    return "done"


@server.tool(description="Runs a child that reads stdin to its end; how many bytes it read")
async def read_stdin(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    child = await trio.run_process(
        [sys.executable, "-c", COUNT_STDIN], capture_stdout=True, check=False
    )
    return f"{child.returncode} {child.stdout.decode().strip()}"
