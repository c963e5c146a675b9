from typing import Any

import trio

from presa_trio.http import serve_http
from presa_trio.server import RequestContext, Server

server = Server("hello", "1.0.0")
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool(description="Greets someone by name", input_schema=NAME)
async def greet(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    return f"Hello, {arguments['name']}!"


if __name__ == "__main__":
    trio.run(serve_http, server)
