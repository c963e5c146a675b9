from typing import Annotated

from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit, MCPServer, Resolve
from mcp.server.mcpserver.resolve import ElicitationResult
from pydantic import BaseModel

server = MCPServer("compare")


class Weather(BaseModel):
    city: str
    celsius: float


class Confirm(BaseModel):
    ok: bool


@server.tool()
async def greet(name: str, times: int = 1) -> str:
    """Greets someone by name."""
    return " ".join([f"Hello, {name}!"] * times)


@server.tool()
async def weather(city: str) -> Weather:
    """Today's weather in a city."""
    return Weather(city=city, celsius=21.5)


@server.resource("notes://today")
async def today() -> str:
    """Today's notes."""
    return "Nothing planned."


@server.prompt()
async def summarise(text: str) -> str:
    """Asks the model to summarise a text."""
    return f"Summarise this: {text}"


def confirm(path: str) -> Elicit[Confirm]:
    return Elicit(f"Delete {path}?", Confirm)


@server.tool()
async def delete(
    path: str, ctx: Context, answer: Annotated[ElicitationResult[Confirm], Resolve(confirm)]
) -> str:
    """Asks before deleting a file."""
    await ctx.report_progress(1, 2, f"looking at {path}")
    if not isinstance(answer, AcceptedElicitation) or not answer.data.ok:
        return "kept"
    await ctx.report_progress(2, 2, f"deleting {path}")
    return "deleted"


if __name__ == "__main__":
    server.run("streamable-http", port=3000)
