"""A user's server for the store fault tests: ``presa-trio serve tests.e2e.emitting_server:server``.

``tick`` is always a task (run it with ``--task-events``): it emits
``count`` events ``com.example.tick {"n": n}``, one every ``every``
seconds, catches every :class:`~presa_trio.server.EmitFailed`, and answers
with the ``n`` of each emit that raised, as JSON text: what the tool was
told, to hold against what the task's log holds.
"""

from __future__ import annotations

import json
from typing import Any

import trio

from presa_trio.server import EmitFailed, RequestContext, Server
from presa_trio.tasks import Policy, TasksExtension

TICK = "com.example.tick"

server = Server("emitting", "1.0.0")
tasks = server.add_extension(TasksExtension())


@tasks.tool(
    Policy.REQUIRED,
    description="Emits `count` events, one every `every` seconds; answers which failed",
    input_schema={
        "type": "object",
        "properties": {"count": {"type": "integer"}, "every": {"type": "number"}},
        "required": ["count", "every"],
    },
)
async def tick(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    failed = []
    for n in range(arguments["count"]):
        try:
            await ctx.emit(TICK, {"n": n})
        except EmitFailed:
            failed.append(n)
        await trio.sleep(arguments["every"])
    return json.dumps({"failed": failed})
