"""End to end: every class of store failure, at every call site, on a real server.

Rules of this file: a real hypercorn on port 0 and httpx over loopback; the
store is a real one (memory, SQLite) wrapped by :class:`FaultyStore`, which
raises one armed error, once, at one call site. Each case then shows the
failure policy of docs/tasks.md from the outside: only the task that met
the failure fails (or nothing does), and ``server/discover``, the tasks
already running and new tasks keep working; the server never answers 503.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TaskRunner, TasksExtension
from presa_trio.tasks.events import EventWindow, NewEvent, Retention, TaskEvent
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import (
    Counts,
    Deliver,
    DeliverAppend,
    Limits,
    StoreDefect,
    StoredTask,
    StoreError,
    StoreRefused,
    StoreUnavailable,
    TaskStore,
)
from presa_trio.wire.mrtr import Elicitation
from tests.e2e.gates import Gates
from tests.e2e.harness import ServeApp, Served, TaskClient

CONFIRM = Elicitation("Go ahead?", {"type": "object", "properties": {}})
SITES = ["create", "get", "compare_and_set", "renew", "claim_expired", "release", "watch"]
CLASSES: dict[str, type[StoreError]] = {
    "unavailable": StoreUnavailable,
    "refused": StoreRefused,
    "defect": StoreDefect,
}


@attrs.define(eq=False, repr=False)
class FaultyStore:
    """A real store; :meth:`arm` makes the next call at one site raise one error.

    ``compare_and_set`` faults only a worker's own write (one with a
    ``fence``); ``watch`` fails its running watch, which the runner starts
    again.
    """

    inner: TaskStore
    _armed: dict[str, StoreError] = attrs.field(factory=dict)
    _tripped: dict[str, trio.Event] = attrs.field(factory=dict)
    _break_watch: trio.Event = attrs.field(factory=trio.Event)

    def arm(self, site: str, error: StoreError) -> trio.Event:
        """Raise ``error`` at the next call of ``site``; the Event is set once it was raised."""
        self._armed[site] = error
        self._tripped[site] = trio.Event()
        if site == "watch":
            self._break_watch.set()
        return self._tripped[site]

    def _trip(self, site: str) -> None:
        error = self._armed.pop(site, None)
        if error is not None:
            self._tripped[site].set()
            raise error

    async def create(self, stored: StoredTask, limits: Limits, now_ms: int) -> None:
        self._trip("create")
        await self.inner.create(stored, limits, now_ms)

    async def get(self, scope: str, task_id: str, now_ms: int) -> StoredTask:
        self._trip("get")
        return await self.inner.get(scope, task_id, now_ms)

    async def read(self, task_id: str) -> StoredTask | None:
        return await self.inner.read(task_id)

    async def compare_and_set(
        self, scope: str, task: Task, expected_revision: int, *, fence: int | None = None
    ) -> None:
        if fence is not None:
            self._trip("compare_and_set")
        await self.inner.compare_and_set(scope, task, expected_revision, fence=fence)

    async def renew(
        self, owner: str, held: Mapping[str, int], expires_ms: int, now_ms: int
    ) -> set[str]:
        self._trip("renew")
        return await self.inner.renew(owner, held, expires_ms, now_ms)

    async def claim_expired(
        self, owner: str, now_ms: int, expires_ms: int, limit: int
    ) -> list[StoredTask]:
        self._trip("claim_expired")
        return await self.inner.claim_expired(owner, now_ms, expires_ms, limit)

    async def release(self, owner: str) -> None:
        self._trip("release")
        await self.inner.release(owner)

    async def expire(self, now_ms: int) -> list[str]:
        return await self.inner.expire(now_ms)

    async def counts(self, scope: str | None = None) -> Counts:
        return await self.inner.counts(scope)

    async def watch(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.inner.watch, deliver)
            task_status.started()
            await self._break_watch.wait()
            self._break_watch = trio.Event()
            self._trip("watch")

    # Task event logs (--task-events): passed through, never faulted here.

    async def append_events(
        self,
        task_id: str,
        events: Sequence[NewEvent],
        now_ms: int,
        retention: Retention,
        *,
        closing: bool = False,
    ) -> list[TaskEvent]:
        return await self.inner.append_events(task_id, events, now_ms, retention, closing=closing)

    async def read_events(self, task_id: str, after: int, limit: int) -> EventWindow:
        return await self.inner.read_events(task_id, after, limit)

    async def prune_events(self, now_ms: int, retention: Retention) -> None:
        await self.inner.prune_events(now_ms, retention)

    async def watch_events(
        self,
        deliver: DeliverAppend,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        await self.inner.watch_events(deliver, task_status=task_status)


def build(store: FaultyStore, gates: Gates) -> McpApp:
    server = Server("failure-boundaries", "1.0.0")
    # Short leases: renewal every 0.5 s, recovery every 0.75 s; long enough
    # that a renewal that fails once (and its loop's restart) loses no lease.
    tasks = TasksExtension(TaskRunner(store, lease_ms=1_500))
    server.add_extension(tasks)

    @tasks.tool(Policy.REQUIRED, description="Waits for its label's gate, if any, then answers.")
    async def work(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        label = arguments.get("label")
        if label is not None:
            await gates[label].wait()
        return f"done {label}"

    @tasks.tool(Policy.REQUIRED, description="Asks to confirm, then answers.")
    async def confirm(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.ask({"go": CONFIRM})
        return "confirmed"

    return McpApp.for_server(server)


@pytest.fixture(params=["memory", "sqlite"])
async def inner_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    url = "memory:" if request.param == "memory" else f"sqlite:///{tmp_path / 'tasks.db'}"
    async with open_store(url) as store:
        yield store


async def still_serving(client: TaskClient, gates: Gates, bystander: str) -> None:
    """discover answers; the task running before the fault ends well; a new one does too."""
    discovered = await client.send("server/discover")
    assert "result" in discovered
    gates["bystander"].set()
    assert (await client.settled(bystander))["status"] == "completed"
    fresh = await client.create("work")
    assert (await client.settled(fresh))["result"]["content"][0]["text"] == "done None"


def check_request_error(answer: dict[str, Any], kind: str) -> None:
    """A request that met the store's failure: -32603, and what the class says."""
    error = answer["error"]
    assert error["code"] == -32603
    if kind == "unavailable":
        assert error["data"] == {"retryable": True}
    elif kind == "refused":
        assert error["data"] == {"retryable": False}
        assert error["message"].startswith("Could not store the request: ")
    else:
        assert set(error["data"]) == {"incident"}
        assert "test: defect" not in error["message"]


def check_task_outcome(result: dict[str, Any], kind: str) -> None:
    """The task whose own write met the store's failure, once terminal."""
    if kind == "unavailable":  # the write waited and tried again
        assert result["status"] == "completed"
        return
    assert result["status"] == "failed"
    error = result["error"]
    assert error["code"] == -32603
    if kind == "refused":
        assert error == {
            "code": -32603,
            "message": "Could not store the task's result: test: refused",
            "data": {"retryable": False},
        }
    else:
        assert set(error["data"]) == {"incident"}


@pytest.mark.parametrize("kind", list(CLASSES))
@pytest.mark.parametrize("site", SITES)
async def test_a_store_failure_ends_at_most_the_task_that_met_it(
    serve_app: ServeApp,
    task_client: Callable[[Served], TaskClient],
    inner_store: TaskStore,
    caplog: pytest.LogCaptureFixture,
    site: str,
    kind: str,
) -> None:
    """presa-defined (docs/tasks.md, the failure policy): a store error of each class
    (unavailable, refused data, defect) at each call site ends at most the task that
    met it: a request gets -32603 (retryable only for unavailable), a worker's write
    retries (unavailable) or fails its task saying what could not be stored
    (refused) or with an incident (defect), a background loop is logged and
    restarted; discover, the task running meanwhile and new tasks keep working."""
    caplog.set_level(logging.WARNING)
    store = FaultyStore(inner_store)
    gates = Gates()
    served, shutdown = await serve_app(build(store, gates))
    client = task_client(served)
    error = CLASSES[kind](f"test: {kind}")
    with trio.fail_after(20):
        bystander = await client.create("work", label="bystander")
        asking = await client.create("confirm")
        await client.reached(asking, "input_required")
        tripped = store.arm(site, error)
        if site == "create":
            check_request_error(await client.send("tools/call", name="work", arguments={}), kind)
        elif site == "get":
            check_request_error(await client.send("tasks/get", taskId=bystander), kind)
        elif site == "compare_and_set":
            victim = await client.create("work")
            check_task_outcome(await client.settled(victim), kind)
        elif site != "release":
            await tripped.wait()
        # The task waiting for input is woken by its answer (after a failed
        # watch, by the resync of the watch started again).
        answered = await client.send(
            "tasks/update",
            taskId=asking,
            inputResponses={"go": {"action": "accept", "content": {}}},
        )
        assert answered["result"]["resultType"] == "complete"
        assert (await client.settled(asking))["status"] == "completed"
        await still_serving(client, gates, bystander)
        shutdown.set()
        if site == "release":
            await tripped.wait()
    assert "the server cannot run" not in caplog.text
