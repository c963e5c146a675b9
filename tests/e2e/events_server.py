"""A user's server for the task event stream tests across processes:
``presa-trio serve tests.e2e.events_server:server --task-events --store …``.

``chatter`` emits steps as fast as its store takes them until it is
cancelled, then, having seen its cancellation, tries one more event (which
must never land). ``rounds`` asks for input ``rounds`` times, emitting a
few steps before each question, so its log is written by the process that
runs it and by the one that answers it.
"""

from __future__ import annotations

from typing import Any

import trio

from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TaskRunner, TasksExtension
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.wire.mrtr import Elicitation

STEP = "com.example.step"
LATE = "com.example.after_cancel"
OK = {"type": "object", "properties": {"ok": {"type": "boolean"}}}

server = Server("events", "1.0.0")
tasks = TasksExtension(TaskRunner(MemoryStore()))
server.add_extension(tasks)


@tasks.tool(Policy.REQUIRED, description="Emits steps until cancelled, then tries once more")
async def chatter(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    n = 0
    try:
        while True:
            await ctx.emit(STEP, {"n": n})
            n += 1
    finally:
        with trio.CancelScope(shield=True):
            await ctx.emit(LATE, {"n": n})


@tasks.tool(
    Policy.REQUIRED,
    description="Asks `rounds` times, emitting `steps` events before each question",
    input_schema={
        "type": "object",
        "properties": {"rounds": {"type": "integer"}, "steps": {"type": "integer"}},
    },
)
async def rounds(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    for round_ in range(arguments["rounds"]):
        for n in range(arguments["steps"]):
            await ctx.emit(STEP, {"round": round_, "n": n})
        await ctx.ask({f"r{round_}": Elicitation(f"Round {round_}?", OK)})
    return "done"
