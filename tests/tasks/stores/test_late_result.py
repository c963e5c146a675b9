"""A late result never resurrects a task: tasks/cancel against the outcome, on every store.

``tasks/cancel`` writes ``cancelled`` and then cancels the task's scope, so
whatever the worker was about to write meets a terminal task and is dropped
(SEP-2663 §Task Cancellation; spec-notes §28). The layers that make it so
are, in order: the stop flag, the task's cancel scope, the compare-and-set
on the revision, and the terminal status absorbing every move. Here the
store itself (each of ``conftest.STORE_KINDS``) is put in the race: a
compare-and-set is held at a gate, before it reaches the store or after it
committed, shielded as a call already sent is (a statement PostgreSQL
received, a write SQLite's batch took), while the other side runs. Each
case is one explicit order of steps; the gates are Events, never sleeps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import attrs
import trio

from presa_trio.tasks import TaskRunner
from presa_trio.tasks.context import WorkerContext
from presa_trio.tasks.events import LogAppend
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import Conflict, LeaseLost, TaskStore
from presa_trio.wire.mrtr import ListRoots
from presa_trio.wire.tasks import Status
from tests.tasks.helpers import RESULT, TRIO_CLOCK, creator


@attrs.define(eq=False)
class Gate:
    """Where one compare-and-set waits: ``reached`` once it is there, until ``opened``."""

    reached: trio.Event = attrs.field(factory=trio.Event)
    opened: trio.Event = attrs.field(factory=trio.Event)
    # Whether the held call's wait is shielded, as a call once sent is; False: the
    # caller may leave while it waits, as PostgreSQL's may once the call committed.
    shielded: bool = True
    # How the held call ended: "ok", or the name of what it raised.
    ended: str | None = None
    done: trio.Event = attrs.field(factory=trio.Event)


class GatedStore:
    """The store under test; one compare-and-set, the worker's or a request's, held at a gate.

    The worker's writes carry a fence (its lease generation), a request's
    (``tasks/cancel``) none. ``before``: the call waits before it reaches
    the store; ``after``: it has committed, and its answer waits. Either
    way the wait is shielded unless the test says: a call once sent cannot
    be taken back.
    """

    def __init__(self, inner: TaskStore) -> None:
        self.inner = inner
        self.gates: dict[tuple[str, str], Gate] = {}
        # Every status a compare-and-set stored, in order.
        self.stored: list[Status] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def hold(self, whose: str, where: str, *, shielded: bool = True) -> Gate:
        gate = self.gates[whose, where] = Gate(shielded=shielded)
        return gate

    async def compare_and_set(
        self,
        scope: str,
        task: Task,
        expected_revision: int,
        *,
        fence: int | None = None,
        events: LogAppend | None = None,
    ) -> None:
        whose = "request" if fence is None else "worker"
        before = self.gates.pop((whose, "before"), None)
        after = self.gates.pop((whose, "after"), None)
        gate = before or after
        if gate is None:
            await self.inner.compare_and_set(
                scope, task, expected_revision, fence=fence, events=events
            )
            self.stored.append(task.status)
            return
        with trio.CancelScope(shield=gate.shielded):
            try:
                if before is not None:
                    gate.reached.set()
                    await gate.opened.wait()
                await self.inner.compare_and_set(
                    scope, task, expected_revision, fence=fence, events=events
                )
                self.stored.append(task.status)
                if after is not None:
                    gate.reached.set()
                    await gate.opened.wait()
                gate.ended = "ok"
            except BaseException as error:
                gate.ended = type(error).__name__
                raise
            finally:
                gate.done.set()


@attrs.define(eq=False)
class Job:
    """A job that returns :data:`RESULT` once released; it notes when it ended, and how."""

    release: trio.Event = attrs.field(factory=trio.Event)
    began: trio.Event = attrs.field(factory=trio.Event)
    ended: list[str] = attrs.field(factory=list)

    async def __call__(self, ctx: WorkerContext) -> Any:
        self.began.set()
        try:
            await self.release.wait()
        except trio.Cancelled:
            self.ended.append("cancelled")
            raise
        self.ended.append("returned")
        return RESULT


@asynccontextmanager
async def running(store: GatedStore) -> AsyncIterator[TaskRunner]:
    runner = TaskRunner(cast(TaskStore, store), TRIO_CLOCK)
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        yield runner
        nursery.cancel_scope.cancel()


async def until(condition: Callable[[], bool]) -> None:
    """Wait for ``condition``: the SQLite and PostgreSQL stores work in threads, which
    ``wait_all_tasks_blocked`` cannot see. Bounded as a hang guard only."""
    with trio.fail_after(10):
        while not condition():  # noqa: ASYNC110 - a thread's progress has no Trio Event
            await trio.sleep(0.001)


def worker_ended(runner: TaskRunner, task_id: str) -> Callable[[], bool]:
    supervisor = runner._supervisor  # the one table of this process's workers
    assert supervisor is not None
    return lambda: supervisor.get(task_id) is None


async def settle(runner: TaskRunner, task_id: str) -> Task:
    """The task once its worker has ended: nothing of this process writes for it any more."""
    await until(worker_ended(runner, task_id))
    return await runner.get("s", task_id)


@attrs.frozen
class Race:
    """A job running under a gated store, and the two races the tests below run on it."""

    gated: GatedStore
    job: Job
    runner: TaskRunner
    task_id: str

    async def result_across_a_cancel(self, where: str) -> Gate:
        """The job returns; its result is held ``where`` its compare-and-set while
        ``tasks/cancel`` runs to its end, then let through."""
        result = self.gated.hold("worker", where)
        self.job.release.set()
        await result.reached.wait()
        await self.runner.cancel("s", self.task_id)
        result.opened.set()
        await result.done.wait()
        return result

    async def cancel_across_a_result(self, where: str) -> Gate:
        """``tasks/cancel`` is held ``where`` its compare-and-set while the job returns
        and its worker ends, then let through."""
        cancel = self.gated.hold("request", where)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.runner.cancel, "s", self.task_id)
            await cancel.reached.wait()
            self.job.release.set()
            await until(worker_ended(self.runner, self.task_id))
            cancel.opened.set()
        return cancel

    async def settle(self) -> Task:
        return await settle(self.runner, self.task_id)


@asynccontextmanager
async def racing(store: TaskStore) -> AsyncIterator[Race]:
    """A :class:`Job` started on ``store``, gated, and running until the block ends."""
    gated = GatedStore(store)
    job = Job()
    async with running(gated) as runner:
        task_id = (await runner.start("s", job, creator())).task_id
        await job.began.wait()
        yield Race(gated, job, runner, task_id)


async def test_a_result_in_flight_when_the_cancel_commits_meets_a_conflict(
    store: TaskStore,
) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation; spec-notes §28): the worker's
    ``completed`` is on its way to the store when ``tasks/cancel`` commits; it
    reaches the store after, loses its compare-and-set, and the task stays
    ``cancelled``: the result is refused by the store, never stored."""
    async with racing(store) as race:
        result = await race.result_across_a_cancel("before")
        # Refused either way: the revision moved, and a terminal task holds no lease.
        assert result.ended in {Conflict.__name__, LeaseLost.__name__}
        ended = await race.settle()
    assert ended.status is Status.CANCELLED
    assert ended.result is None
    assert race.gated.stored == [Status.CANCELLED]


async def test_a_result_stored_before_the_cancel_reads_stays_and_the_cancel_changes_nothing(
    store: TaskStore,
) -> None:
    """Spec-mandated (overview §Task lifecycle: a terminal task never changes): the
    worker's ``completed`` committed but its answer is late; ``tasks/cancel`` then
    finds a terminal task and writes nothing, and the worker is not stopped."""
    async with racing(store) as race:
        await race.result_across_a_cancel("after")
        ended = await race.settle()
    assert (ended.status, ended.result) == (Status.COMPLETED, RESULT)
    assert race.gated.stored == [Status.COMPLETED]
    assert race.job.ended == ["returned"]


async def test_a_cancel_in_flight_when_the_result_commits_is_absorbed(store: TaskStore) -> None:
    """Spec-mandated (overview §Task lifecycle): ``tasks/cancel`` is on its way to the
    store when the worker's ``completed`` commits; the cancel loses its
    compare-and-set, reads the completed task, and leaves it as it is."""
    async with racing(store) as race:
        cancel = await race.cancel_across_a_result("before")
        assert cancel.ended == Conflict.__name__
        ended = await race.settle()
    assert (ended.status, ended.result) == (Status.COMPLETED, RESULT)
    assert race.gated.stored == [Status.COMPLETED]


async def test_a_result_made_after_the_cancel_committed_is_dropped_before_the_scope_is_cancelled(
    store: TaskStore,
) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation; spec-notes §28): ``cancelled`` has
    committed and ``tasks/cancel`` has not yet cancelled the scope (its answer is
    late) when the job returns; the worker's outcome meets a terminal task, and
    the task stays ``cancelled`` after the scope is cancelled too."""
    async with racing(store) as race:
        await race.cancel_across_a_result("after")
        ended = await race.settle()
    assert ended.status is Status.CANCELLED
    assert ended.result is None
    assert race.gated.stored == [Status.CANCELLED]


async def test_a_cancel_whose_caller_leaves_once_it_committed_still_stops_the_worker(
    store: TaskStore,
) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation): ``cancelled`` has committed when
    the ``tasks/cancel`` request is cancelled itself (its client went away), before
    it could stop the worker; the store's announcement of the write stops it, and
    its late result is never stored."""
    async with racing(store) as race:
        cancel = race.gated.hold("request", "after", shielded=False)
        with trio.CancelScope() as request:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(race.runner.cancel, "s", race.task_id)
                await cancel.reached.wait()
                request.cancel()
        assert cancel.ended == "Cancelled"
        ended = await race.settle()
        race.job.release.set()
    assert (ended.status, race.job.ended) == (Status.CANCELLED, ["cancelled"])
    assert race.gated.stored == [Status.CANCELLED]


async def test_an_answer_after_the_cancel_of_a_parked_task_wakes_nothing(
    store: TaskStore,
) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation, §Task Update Requests): a task
    parked on input is cancelled; an answer that arrives after changes nothing,
    the job never resumes, and nothing is stored after ``cancelled``."""
    gated = GatedStore(store)
    resumed: list[str] = []

    async def job(ctx: WorkerContext) -> Any:
        await ctx.ask({"k": ListRoots()})
        resumed.append("k")
        return RESULT

    async with running(gated) as runner:
        task_id = (await runner.start("s", job, creator({"roots": {}}))).task_id
        await until(lambda: gated.stored == [Status.INPUT_REQUIRED])
        await runner.cancel("s", task_id)
        await runner.update("s", task_id, {"k": {"roots": [{"uri": "file:///w"}]}})
        ended = await settle(runner, task_id)
    assert ended.status is Status.CANCELLED
    assert (gated.stored, resumed) == ([Status.INPUT_REQUIRED, Status.CANCELLED], [])
