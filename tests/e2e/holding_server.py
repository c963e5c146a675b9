"""A user's server whose tools say, in the log, when they start and how they end.

``presa-trio serve tests.e2e.holding_server:server --store …``: ``hold``
reports progress (so its response is an event stream), then waits for ever;
``hold_quiet`` waits for ever without a word (its response would be plain
JSON); both log ``hold <label> started`` and, when cancelled, ``hold <label>
cancelled``. ``task_hold`` is task-required: it logs the same, and ends with
``task_hold <label> done`` after ``seconds``. A test reads the lines to see
that a client's disconnect cancelled the request's work, and nothing else.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TaskRunner, TasksExtension
from presa_trio.tasks.stores.memory import MemoryStore

log = logging.getLogger("holding")
server = Server("holding", "1.0.0")
LABEL = {"type": "object", "properties": {"label": {"type": "string"}}}


async def held(label: str) -> None:
    log.info("hold %s started", label)
    try:
        await trio.sleep_forever()
    except trio.Cancelled:
        log.info("hold %s cancelled", label)
        raise


@server.tool(description="Reports progress, then waits for ever", input_schema=LABEL)
async def hold(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    await ctx.report_progress(0, total=1)
    await held(arguments["label"])
    return "never"


_tasks = TasksExtension(TaskRunner(MemoryStore()))
server.add_extension(_tasks)


@_tasks.tool(
    Policy.REQUIRED,
    description="A task that logs its start, and its end after `seconds`",
    input_schema={
        "type": "object",
        "properties": {"label": {"type": "string"}, "seconds": {"type": "number"}},
    },
)
async def task_hold(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    label = arguments["label"]
    log.info("task_hold %s started", label)
    try:
        await trio.sleep(arguments["seconds"])
    except trio.Cancelled:
        log.info("task_hold %s cancelled", label)
        raise
    log.info("task_hold %s done", label)
    return "done"


@server.tool(description="Waits for ever without a word", input_schema=LABEL)
async def hold_quiet(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    await held(arguments["label"])
    return "never"
