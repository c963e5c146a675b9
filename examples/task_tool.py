from typing import Any

import trio

from presa_trio.http import serve_http
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TasksExtension, ask
from presa_trio.wire.mrtr import Elicitation

server = Server("tasks-demo", "1.0.0")
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
tasks = TasksExtension()
server.add_extension(tasks)


@tasks.tool(Policy.OPTIONAL, description="Asks before deleting a file")
async def delete(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    answers = await ask(ctx, {"ok": Elicitation("Delete it?", CONFIRM)})
    return "deleted" if answers.elicitation("ok").action == "accept" else "kept"


if __name__ == "__main__":
    trio.run(serve_http, server)
