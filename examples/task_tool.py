import trio

from presa_trio.http import serve_http
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TasksExtension
from presa_trio.wire.mrtr import Elicitation

server = Server("tasks-demo", "1.0.0")
tasks = TasksExtension()
server.add_extension(tasks)
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


@tasks.tool(Policy.OPTIONAL, needs=["elicitation"])
async def delete(ctx: RequestContext, path: str) -> str:
    """Asks before deleting a file."""
    await ctx.set_status_message(f"looking at {path}")
    answers = await ctx.ask({"ok": Elicitation(f"Delete {path}?", CONFIRM)})
    if answers.elicitation("ok").action != "accept":
        return "kept"
    await ctx.set_status_message(f"deleting {path}")  # long work goes after the last ask
    return "deleted"


if __name__ == "__main__":
    trio.run(serve_http, server)
