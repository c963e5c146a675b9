"""A server built with the official Python SDK's ``MCPServer``, on a loopback port.

Run as ``python tests/client/sdk_server.py``: it binds a free port, prints
``serving http://127.0.0.1:PORT/mcp`` on stderr (the line
:mod:`tests.e2e.serve_process` waits for) and serves the SDK's Streamable
HTTP app with uvicorn. The SDK answers 2026-07-28 requests (those whose
``MCP-Protocol-Version`` is not an ``initialize``-era version) statelessly,
one exchange per request, and a tool may return ``InputRequiredResult`` for
a multi round-trip. ``--legacy`` serves the same app to clients of the
initialize era only: every request is passed on as if it said
``MCP-Protocol-Version: 2025-11-25``, as a server written before 2026-07-28
would read it.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

server = MCPServer("sdk-fixture", version="2.3.0")

NAME_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


@server.tool(description="Adds two integers.")
def add(a: int, b: int) -> str:
    return str(a + b)


@server.tool(description="Asks for a name over a multi round-trip, then greets.")
def greet(ctx: Context) -> str | InputRequiredResult:
    answer = (ctx.input_responses or {}).get("who")
    if answer is None:
        question = ElicitRequestFormParams(
            message="Whom shall I greet?", requested_schema=NAME_FORM
        )
        return InputRequiredResult(input_requests={"who": ElicitRequest(params=question)})
    content = getattr(answer, "content", None) or {}
    return f"Hello, {content.get('name')}!"


@server.resource("note://today", description="A note for today.")
def today() -> str:
    return "Water the plants."


@server.prompt(description="Asks for a haiku about a topic.")
def haiku(topic: str) -> str:
    return f"Write a haiku about {topic}."


def legacy_only(app: Any) -> Any:
    """The app, as a server of the initialize era sees every request."""

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = [(k, v) for k, v in scope["headers"] if k != b"mcp-protocol-version"]
            scope = {**scope, "headers": [*headers, (b"mcp-protocol-version", b"2025-11-25")]}
        await app(scope, receive, send)

    return asgi


def main() -> None:
    app = server.streamable_http_app(stateless_http="--legacy" not in sys.argv)
    serve_on_loopback(legacy_only(app) if "--legacy" in sys.argv else app)


def serve_on_loopback(app: Any) -> None:
    """Serve ``app`` with uvicorn on a free loopback port, after saying where."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    print(f"serving http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
