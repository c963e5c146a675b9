"""A user's server for the shutdown tests: ``presa-trio serve tests.e2e.unread_server:server``.

``long_answer`` answers at once with ``size`` characters of text: a response
larger than the sockets between the server and a client that reads none of
it can hold, so the server's write of it waits on that client.
"""

from __future__ import annotations

from typing import Any

from presa_trio.server import RequestContext, Server

server = Server("unread", "1.0.0")
SIZE = {
    "type": "object",
    "properties": {"size": {"type": "integer"}},
    "required": ["size"],
}


@server.tool(description="Answers with `size` characters of text", input_schema=SIZE)
async def long_answer(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    size: int = arguments["size"]
    return "x" * size
