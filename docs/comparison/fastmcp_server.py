from dataclasses import dataclass

from fastmcp import Context, FastMCP
from fastmcp_tasks import TasksExtension
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult

mcp = FastMCP("compare")
mcp.add_extension(TasksExtension())
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


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
async def delete(path: str, ctx: Context) -> str | InputRequiredResult:
    """Asks before deleting a file."""
    answer = (ctx.input_responses or {}).get("ok")
    if answer is None:
        await ctx.report_progress(1, 2, f"looking at {path}")
        ask = ElicitRequestFormParams(message=f"Delete {path}?", requested_schema=CONFIRM)
        return InputRequiredResult(input_requests={"ok": ElicitRequest(params=ask)})
    if not isinstance(answer, ElicitResult) or answer.action != "accept":
        return "kept"
    await ctx.report_progress(2, 2, f"deleting {path}")
    return "deleted"


if __name__ == "__main__":
    mcp.run(transport="http", port=3000)
