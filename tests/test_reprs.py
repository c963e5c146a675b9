"""Service objects have short reprs that do not grow with what they hold."""

from __future__ import annotations

from typing import Any

from presa_trio.demo import build_app
from presa_trio.tasks import TasksExtension
from presa_trio.testing import running

DECLARED: dict[str, Any] = {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}


def reprs(app: Any) -> list[str]:
    server = app.dispatcher.server
    tasks = next(e for e in server.extensions if isinstance(e, TasksExtension))
    return [
        repr(o)
        for o in (
            app,
            app.dispatcher,
            server,
            server.changes,
            tasks,
            tasks.runner,
            tasks.runner.store,
        )
    ]


async def test_service_reprs_stay_short_as_tasks_accumulate() -> None:
    """presa-defined: Trio names tasks and cancel reasons after reprs; a repr that
    listed every stored task made each creation slower than the last (it was
    quadratic). Each service object's repr is the same before and after tasks."""
    app = build_app()
    before = reprs(app)
    async with running(app) as client:
        for _ in range(20):
            await client.call("tools/call", {"name": "confirm_delete"}, capabilities=DECLARED)
        after = reprs(app)
    assert [len(r) for r in after] == [len(r) for r in before]
    assert all(len(r) < 200 for r in after)
