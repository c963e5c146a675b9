"""The stdio edge in-process: lines in, lines out, one JSON message per line."""

from __future__ import annotations

import json
from typing import Any

from trio.testing import MemoryReceiveStream, MemorySendStream

from presa_trio.server import Dispatcher, RequestContext, Server
from presa_trio.stdio import StdioServer
from presa_trio.wire import models
from presa_trio.wire.errors import INTERNAL_ERROR, PARSE_ERROR
from tests.mcp_client import request


async def serve_lines(
    server: Server, messages: list[bytes], **options: Any
) -> list[dict[str, Any]]:
    """Run a stdio server over ``messages`` until end of input; its output lines."""
    stdin = MemoryReceiveStream()
    stdin.put_data(b"".join(messages))
    stdin.put_eof()
    stdout = MemorySendStream()
    await StdioServer(Dispatcher.for_server(server), stdin, stdout, **options).serve()
    return [json.loads(line) for line in stdout.get_data_nowait().splitlines()]


async def test_a_result_json_cannot_hold_is_an_internal_error() -> None:
    """presa-defined (wire §12: an unexpected fault is -32603 with a generic message):
    a tool whose result holds NaN gets -32603 on stdio too, and the server goes on."""
    server = Server("nan", "1.0.0")

    @server.tool(description="Returns a value JSON cannot hold")
    async def broken(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        return models.CallToolResult([], structured_content={"x": float("nan")})

    out = await serve_lines(
        server,
        [
            json.dumps(request("tools/call", {"name": "broken"}, request_id=1)).encode() + b"\n",
            b"{not json\n",
            json.dumps(request("server/discover", request_id=2)).encode() + b"\n",
        ],
    )
    by_id = {m["id"]: m for m in out}
    assert by_id[1]["error"] == {"code": INTERNAL_ERROR, "message": "Internal error"}
    assert by_id[None]["error"]["code"] == PARSE_ERROR
    assert by_id[2]["result"]["resultType"] == "complete"
