"""Shared pieces of the runner tests: a creating request, a recording store, a clock, jobs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import trio

from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Clock
from presa_trio.tasks.context import Job, WorkerContext
from presa_trio.tasks.events import LogAppend
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.testing import meta
from presa_trio.wire.meta import RequestMeta
from presa_trio.wire.tasks import Status

RESULT = {"content": [{"type": "text", "text": "done"}], "resultType": "complete"}


def creator(
    capabilities: Mapping[str, Any] | None = None,
    sent: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> RequestContext:
    """The context of a ``tools/call`` that creates a task; ``sent`` records its stream."""
    outbox = sent if sent is not None else []

    async def send(message: dict[str, Any]) -> None:
        outbox.append(message)

    parsed = RequestMeta.from_params({"_meta": meta(capabilities, **extra)})
    return RequestContext(7, "tools/call", parsed, Server("runner-test", "0"), send)


@attrs.define(eq=False)
class RecordingStore(MemoryStore):
    """The memory store, remembering the status of every successful write."""

    writes: list[tuple[str, Status]] = attrs.field(factory=list)

    async def compare_and_set(
        self,
        scope: str,
        task: Task,
        expected_revision: int,
        *,
        fence: int | None = None,
        events: LogAppend | None = None,
    ) -> None:
        await super().compare_and_set(scope, task, expected_revision, fence=fence, events=events)
        self.writes.append((task.task_id, task.status))

    def statuses(self, task_id: str) -> list[Status]:
        return [status for written, status in self.writes if written == task_id]


def trio_wall_ms() -> int:
    """Wall-clock milliseconds that follow Trio's clock, so MockClock moves TTLs."""
    return round(trio.current_time() * 1000)


#: The runner tests' clock: time moves only when the test moves Trio's clock.
TRIO_CLOCK = Clock(wall_ms=trio_wall_ms)


def gated(
    release: trio.Event,
    record: list[str],
    result: Any = RESULT,
    *,
    running: trio.Event | None = None,
) -> Job:
    """A job that waits for ``release``, then returns ``result``; it notes a cancel.

    ``running`` is set once the job has begun, for a test that must stop a
    worker mid-job rather than before its first step.
    """

    async def job(ctx: WorkerContext) -> Any:
        if running is not None:
            running.set()
        try:
            await release.wait()
        except trio.Cancelled:
            record.append("cancelled")
            raise
        return result

    return job
