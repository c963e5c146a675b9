"""Leases, fencing and recovery: two runners on one store, as two processes would be.

Each runner has its own owner id and watches the same store, so a claim,
a cancel or an answer made through one reaches the other only through the
store, as between processes. The stores are real: every kind of
``conftest.STORE_KINDS``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import attrs
import pytest
import trio

from presa_trio.server import RequestContext
from presa_trio.tasks import TaskRunner, model
from presa_trio.tasks.context import Job, WorkerContext
from presa_trio.tasks.housekeeping import INTERRUPTED
from presa_trio.tasks.stores.base import Lease, Limits, StoredTask, TaskStore, Work
from presa_trio.wire.mrtr import ListRoots
from presa_trio.wire.tasks import Status
from tests.tasks.helpers import RESULT, TRIO_CLOCK, creator, gated

ROOTS = {"roots": [{"uri": "file:///w"}]}
WORK = Work("asker", {}, "2026-07-28", {"roots": {}}, rerun=True)
LEASE_MS = 3000


@asynccontextmanager
async def running(store: TaskStore, job: Job | None = None) -> AsyncIterator[TaskRunner]:
    """A runner (one 'process') on ``store`` that revives stored work as ``job``."""
    runner = TaskRunner(store, TRIO_CLOCK, lease_ms=LEASE_MS)
    if job is not None:
        revived: tuple[Job, RequestContext] = (job, creator({"roots": {}}))
        runner.revive = lambda work: revived if work.tool == "asker" else None
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        yield runner
        nursery.cancel_scope.cancel()


async def until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition``; the SQLite store works in a thread, so Trio's
    ``wait_all_tasks_blocked`` cannot tell when it is done. Bounded as a hang guard."""
    with trio.fail_after(10):
        while not condition():  # noqa: ASYNC110 - a thread's progress has no Trio Event
            await trio.sleep(0.001)


async def until_status(runner: TaskRunner, task_id: str, status: Status) -> None:
    with trio.fail_after(10):
        while (await runner.get("s", task_id)).status is not status:  # noqa: ASYNC110
            await trio.sleep(0.001)


def two_questions(asked: list[str]) -> Job:
    """Asks ``first``, then ``second``; returns both answers."""

    async def job(ctx: WorkerContext) -> Any:
        answers: dict[str, Any] = {}
        for key in ("first", "second"):
            asked.append(key)
            answers[key] = (await ctx.ask({key: ListRoots()})).raw(key)
        return {"content": [], "answers": answers}

    return job


async def test_a_claimed_lease_stops_the_old_worker_and_it_writes_nothing(
    store: TaskStore,
) -> None:
    """presa-defined (leases with fencing): once another process claims the task,
    the first worker is stopped, and its outcome is never written. The lease is
    let go first, as if it had expired: a store may judge expiry on a clock of
    its own (PostgreSQL's), which no caller's now can move."""
    record: list[str] = []
    release = trio.Event()
    async with running(store) as first:
        began = trio.Event()
        task = await first.start("s", gated(release, record, running=began), creator())
        await began.wait()
        # The first runner's own recovery may claim the lapsed lease back
        # between the release and the claim: let it go again until the
        # other process holds it.
        claimed_now: list[StoredTask] = []
        while not claimed_now:
            await store.release(first.owner)
            now = TRIO_CLOCK.wall_ms()
            claimed_now = await store.claim_expired("another-process", now, now + LEASE_MS, 10)
        [claimed] = claimed_now
        await until(lambda: record == ["cancelled"])
        release.set()
        stored = await store.read(task.task_id)
        assert stored is not None
        assert (stored.task, stored.lease) == (task, claimed.lease)


def logged(caplog: pytest.LogCaptureFixture, task_id: str) -> list[str]:
    """The lines logged of ``task_id``, the id written as ``T``."""
    messages = [record.getMessage() for record in caplog.records]
    return [message.replace(task_id, "T") for message in messages if task_id in message]


async def test_a_rerunnable_task_runs_again_and_is_not_asked_twice(
    store: TaskStore, caplog: pytest.LogCaptureFixture
) -> None:
    """presa-defined (recovery, at least once): a task whose process stopped runs again
    in the next; the answer it already had is handed back, the request still open
    stays as it was, and answering it completes the task."""
    caplog.set_level(logging.INFO, "presa_trio.tasks")
    asked: list[str] = []
    async with running(store) as first:
        task = await first.start("s", two_questions(asked), creator({"roots": {}}), WORK)
        await until(lambda: asked == ["first"])
        await until_status(first, task.task_id, Status.INPUT_REQUIRED)
        await first.update("s", task.task_id, {"first": ROOTS})
        await until(lambda: asked == ["first", "second"])
        await until_status(first, task.task_id, Status.INPUT_REQUIRED)
        parked = await first.get("s", task.task_id)
        assert list(parked.input_requests) == ["second"]
        # A networked store shows a commit to tasks/get before the worker's own call
        # returns and logs it: the first run ends once its last write is logged.
        await until(lambda: logged(caplog, task.task_id).count("task T input_required") == 2)
    assert asked == ["first", "second"]

    async with running(store, two_questions(asked)) as second:
        await until(lambda: asked == ["first", "second", "first", "second"])
        assert await second.get("s", task.task_id) == parked
        await second.update("s", task.task_id, {"second": ROOTS})
        await until_status(second, task.task_id, Status.COMPLETED)
        done = await second.get("s", task.task_id)
    assert done.status is Status.COMPLETED
    assert done.result == {"content": [], "answers": {"first": ROOTS, "second": ROOTS}}
    lines = logged(caplog, task.task_id)
    # Writes are committed in the order the test makes them, but each is
    # logged by its own writer once its store call returns: with a networked
    # store, where a worker's write and a request's write wait in different
    # lanes, the later writer can log first. So each run's writes are
    # compared as a set of lines; the first run ended before the second began.
    first_run, second_run = lines[:4], lines[4:]
    assert first_run[0] == "task T created"
    assert sorted(first_run[1:]) == [
        "task T input_required",
        "task T input_required",
        "task T working",
    ]
    assert sorted(second_run) == ["task T completed", "task T recovered", "task T working"]


async def test_a_task_that_may_not_run_again_is_failed_with_the_reason(
    store: TaskStore,
) -> None:
    """presa-defined (recovery; spec-notes §44): a task whose tool is
    not re-runnable, or unknown to the next process, ends failed with -32603 saying
    its server stopped; it is not run again."""
    record: list[str] = []
    once = Work("asker", {}, "2026-07-28", {}, rerun=False)
    async with running(store) as first:
        kept = await first.start("s", gated(trio.Event(), record), creator(), once)
        unknown = await first.start("s", gated(trio.Event(), record), creator(), None)
    asked: list[str] = []
    async with running(store, two_questions(asked)) as second:
        for task in (kept, unknown):
            await until_status(second, task.task_id, Status.FAILED)
            failed = await second.get("s", task.task_id)
            assert (failed.status, failed.error) == (Status.FAILED, INTERRUPTED.to_wire())
    assert asked == []


async def test_shutdown_leaves_a_parked_task_as_it_was_and_releases_its_lease(
    store: TaskStore,
) -> None:
    """presa-defined (graceful stop, no lost write): stopping the process writes nothing
    for its workers, so a parked task keeps its input requests; its lease is released
    so the next process recovers it at once."""
    async with running(store) as first:
        task = await first.start("s", two_questions([]), creator({"roots": {}}), WORK)
        await until_status(first, task.task_id, Status.INPUT_REQUIRED)
        parked = await first.get("s", task.task_id)
    stored = await store.read(task.task_id)
    assert stored is not None
    assert stored.task == parked
    assert parked.status is Status.INPUT_REQUIRED
    assert stored.lease is not None
    assert stored.lease.expires_ms == 0


async def test_a_cancel_through_another_process_stops_the_worker(store: TaskStore) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation; T-49): a tasks/cancel served by
    another runner writes cancelled; the worker's process stops it on the store's
    announcement, and the worker's late result is dropped."""
    record: list[str] = []
    async with running(store) as worker_side, running(store) as other:
        began = trio.Event()
        job = gated(trio.Event(), record, running=began)
        task = await worker_side.start("s", job, creator())
        await began.wait()
        await other.cancel("s", task.task_id)
        await until(lambda: record == ["cancelled"])
        assert record == ["cancelled"]
        assert (await worker_side.get("s", task.task_id)).status is Status.CANCELLED


async def test_own_result_completes_the_task(store: TaskStore) -> None:
    """presa-defined: the worker's outcome is written on every store."""
    release = trio.Event()
    release.set()
    async with running(store) as runner:
        task = await runner.start("s", gated(release, []), creator())
        await until_status(runner, task.task_id, Status.COMPLETED)
        done = await runner.get("s", task.task_id)
    assert (done.status, done.result) == (Status.COMPLETED, RESULT)


class CancelledAsClaimed:
    """The store under test, where another process cancels each task just as this
    one claims it: the cancel is announced before the claim returns, so before the
    recovered worker exists."""

    def __init__(self, inner: TaskStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def claim_expired(
        self, owner: str, now_ms: int, expires_ms: int, limit: int, *, released_only: bool = False
    ) -> list[StoredTask]:
        claimed: list[StoredTask] = await self.inner.claim_expired(
            owner, now_ms, expires_ms, limit, released_only=released_only
        )
        for stored in claimed:
            cancelled = model.cancel(stored.task, now_ms)
            await self.inner.compare_and_set(stored.scope, cancelled, stored.task.revision)
        return claimed


async def test_a_recovered_worker_whose_task_was_cancelled_as_it_was_claimed_stops(
    store: TaskStore,
) -> None:
    """presa-defined (no worker outlives its task; SEP-2663 §Task Cancellation): a task
    cancelled just as a process claims it is announced before that process's worker
    exists, so the worker starts from the task as claimed. Its first write (asking
    for input) finds the task ended: the worker stops there, instead of waiting for
    ever for an answer nobody can give, and the task stays cancelled, asking nothing."""
    record: list[str] = []

    async def asker(ctx: WorkerContext) -> Any:
        try:
            await ctx.ask({"first": ListRoots()})
        except trio.Cancelled:
            record.append("stopped")
            raise
        record.append("answered")
        return RESULT

    async with running(store) as first:
        task = await first.start("s", gated(trio.Event(), []), creator({"roots": {}}), WORK)
    async with running(cast(TaskStore, CancelledAsClaimed(store)), asker):
        await until(lambda: record == ["stopped"])
    stored = await store.read(task.task_id)
    assert stored is not None
    assert (stored.task.status, stored.task.input_requests) == (Status.CANCELLED, {})


async def test_a_task_whose_job_cannot_be_rebuilt_is_failed_and_the_others_run_again(
    store: TaskStore, caplog: pytest.LogCaptureFixture
) -> None:
    """presa-defined (recovery; spec-notes §44): of two tasks a stopped process left,
    the first claimed has work this server cannot rebuild into a job (rebuilding it
    raises: its stored arguments no longer fit the tool, say). That task is written
    failed as interrupted, the traceback logged under an incident, and the other
    still runs again, where the first stopped every recovery round before reaching it."""
    asked: list[str] = []
    broken = attrs.evolve(WORK, tool="broken")
    for task_id, work in (("a-broken", broken), ("b-asker", WORK)):
        left = StoredTask(
            "s",
            model.create(task_id, now_ms=0, ttl_ms=None, poll_interval_ms=100),
            work,
            Lease("gone", 1, 0),
        )
        await store.create(left, Limits(), 0)

    def revive(work: Work) -> tuple[Job, RequestContext] | None:
        if work.tool == "broken":
            raise ValueError("the stored arguments no longer fit the tool")
        return two_questions(asked), creator({"roots": {}})

    runner = TaskRunner(store, TRIO_CLOCK, lease_ms=LEASE_MS)
    runner.revive = revive
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        await until_status(runner, "a-broken", Status.FAILED)
        await until(lambda: asked == ["first"])
        nursery.cancel_scope.cancel()
    failed = await store.read("a-broken")
    assert failed is not None
    assert failed.task.error == INTERRUPTED.to_wire()
    [fault] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert fault.getMessage().startswith("task a-broken: its job cannot be rebuilt (incident ")
    assert fault.exc_info is not None
