"""A user's server for the task event stream tests across processes:
``presa-trio serve tests.e2e.events_server:server --task-events --store …``.

``chatter`` emits steps as fast as its store takes them until it is
cancelled, then, having seen its cancellation, tries one more event (which
must never land: :func:`assert_cancelled_log`). ``rounds`` asks for input
``rounds`` times, emitting a few steps before each question, so its log is
written by the process that runs it and by the one that answers it.
:func:`add_tools` puts both on any Tasks extension (the in-process tests
use it too).
"""

from __future__ import annotations

from typing import Any

import trio

from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TaskRunner, TasksExtension
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.wire.mrtr import Elicitation
from presa_trio.wire.tasks import STATUS_EVENT

STEP = "com.example.step"
LATE = "com.example.after_cancel"
OK = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


async def chatter(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    n = 0
    try:
        while True:
            await ctx.emit(STEP, {"n": n})
            n += 1
    finally:
        with trio.CancelScope(shield=True):
            await ctx.emit(LATE, {"n": n})


async def rounds(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    for round_ in range(arguments["rounds"]):
        for n in range(arguments["steps"]):
            await ctx.emit(STEP, {"round": round_, "n": n})
        await ctx.ask({f"r{round_}": Elicitation(f"Round {round_}?", OK)})
    return "done"


def add_tools(tasks: TasksExtension) -> None:
    """Register ``chatter`` and ``rounds`` as task-required tools of ``tasks``."""
    tasks.tool(Policy.REQUIRED, description="Emits steps until cancelled, then once more")(chatter)
    tasks.tool(
        Policy.REQUIRED,
        description="Asks `rounds` times, emitting `steps` events before each question",
        input_schema={
            "type": "object",
            "properties": {"rounds": {"type": "integer"}, "steps": {"type": "integer"}},
        },
    )(rounds)


def assert_cancelled_log(events: list[dict[str, Any]]) -> None:
    """A cancelled chatter's whole log: its run's status, its steps in order from 0, then
    ``cancelled``, last; never the event it tried once it had seen its cancellation."""
    kinds = [e["type"] for e in events]
    assert LATE not in kinds
    assert (kinds[0], kinds[-1], events[-1]["payload"]["status"]) == (
        STATUS_EVENT,
        STATUS_EVENT,
        "cancelled",
    )
    assert set(kinds[1:-1]) == {STEP}
    assert [e["payload"]["n"] for e in events[1:-1]] == list(range(len(events) - 2))
    assert [e["seq"] for e in events] == list(range(len(events)))


server = Server("events", "1.0.0")
_tasks = TasksExtension(TaskRunner(MemoryStore()))
server.add_extension(_tasks)
add_tools(_tasks)
