from typing import TypedDict

import trio

from presa_trio.http import serve_http
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TasksExtension, ask
from presa_trio.wire.mrtr import Elicitation

server = Server("compare", "1.0.0")
tasks = server.add_extension(TasksExtension())
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


class Weather(TypedDict):
    city: str
    celsius: float


@server.tool()
async def greet(ctx: RequestContext, name: str, times: int = 1) -> str:
    """Greets someone by name."""
    return " ".join([f"Hello, {name}!"] * times)


@server.tool()
async def weather(ctx: RequestContext, city: str) -> Weather:
    """Today's weather in a city."""
    return {"city": city, "celsius": 21.5}


@server.resource("notes://today")
async def today(ctx: RequestContext) -> str:
    """Today's notes."""
    return "Nothing planned."


@server.prompt()
async def summarise(ctx: RequestContext, text: str) -> str:
    """Asks the model to summarise a text."""
    return f"Summarise this: {text}"


@tasks.tool(Policy.OPTIONAL, needs=["elicitation"])
async def delete(ctx: RequestContext, path: str) -> str:
    """Asks before deleting a file."""
    await ctx.set_status_message(f"looking at {path}")
    answers = await ask(ctx, {"ok": Elicitation(f"Delete {path}?", CONFIRM)})
    if answers.elicitation("ok").action != "accept":
        return "kept"
    await ctx.set_status_message(f"deleting {path}")
    return "deleted"


if __name__ == "__main__":
    trio.run(serve_http, server)
