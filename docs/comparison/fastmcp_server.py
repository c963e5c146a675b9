from dataclasses import dataclass

from fastmcp import Context, FastMCP

mcp = FastMCP("compare")


@dataclass
class Weather:
    city: str
    celsius: float


@mcp.tool
async def greet(name: str, times: int = 1) -> str:
    """Greets someone by name."""
    return " ".join([f"Hello, {name}!"] * times)


@mcp.tool
async def weather(city: str) -> Weather:
    """Today's weather in a city."""
    return Weather(city=city, celsius=21.5)


@mcp.resource("notes://today")
async def today() -> str:
    """Today's notes."""
    return "Nothing planned."


@mcp.prompt
async def summarise(text: str) -> str:
    """Asks the model to summarise a text."""
    return f"Summarise this: {text}"


@mcp.tool(task=True)
async def delete(path: str, ctx: Context) -> str:
    """Asks before deleting a file."""
    await ctx.report_progress(1, 2, f"looking at {path}")
    answer = await ctx.elicit(f"Delete {path}?", response_type=bool)
    if answer.action != "accept" or not answer.data:
        return "kept"
    await ctx.report_progress(2, 2, f"deleting {path}")
    return "deleted"


if __name__ == "__main__":
    mcp.run(transport="http", port=3000)
