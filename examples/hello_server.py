from typing import Annotated

import trio

from presa_trio.http import serve_http
from presa_trio.server import Field, RequestContext, Server

server = Server("hello", "1.0.0")
Times = Annotated[int, Field(ge=1, le=10)]  # a bound: each greeting costs memory


@server.tool()
async def greet(ctx: RequestContext, name: str, times: Times = 1) -> str:
    """Greets someone by name."""
    return " ".join([f"Hello, {name}!"] * times)


if __name__ == "__main__":
    trio.run(serve_http, server)
