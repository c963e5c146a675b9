"""A user's server for the command-line tests: ``presa-trio serve tests.e2e.pausing_server:server``.

``pause`` reports progress at once (so the client knows it is running),
then sleeps for ``seconds``: a request that is in flight for as long as a
test needs.
"""

from __future__ import annotations

from typing import Any

import trio

from presa_trio.server import RequestContext, Server

server = Server("pausing", "1.0.0")
SECONDS = {
    "type": "object",
    "properties": {"seconds": {"type": "number"}},
    "required": ["seconds"],
}


@server.tool(description="Reports progress, then sleeps for `seconds`", input_schema=SECONDS)
async def pause(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    await ctx.report_progress(0, total=1)
    await trio.sleep(arguments["seconds"])
    return "rested"
