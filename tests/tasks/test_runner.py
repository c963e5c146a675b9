"""The runner: creation, input, update, cancel, outcomes, TTL, limits, shutdown.

Rules of this file: no wall-clock sleeps. Jobs wait on Events the test
sets; ``wait_all_tasks_blocked()`` lets every worker run as far as it can;
time moves only through ``autojump_clock.jump``. Races are written out as
explicit step orders, one parametrized case per interleaving.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest
import trio
import trio.lowlevel
import trio.testing
from trio.testing import wait_all_tasks_blocked

from presa_trio.tasks import Limits, TaskRunner, model
from presa_trio.tasks.context import Job, WorkerContext
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.events import LogAppend, NewEvent, Retention, TaskEvent
from presa_trio.tasks.model import Task
from presa_trio.tasks.runner import INTERRUPTED, RELEASE_WITHIN, new_task_id
from presa_trio.tasks.stores.base import (
    Lease,
    StoredTask,
    StoreRefused,
    StoreUnavailable,
    TaskExpired,
    TaskNotFound,
    Work,
)
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.tasks.worker import Move, Worker
from presa_trio.tasks.writes import StoreWriter
from presa_trio.wire.errors import (
    INTERNAL_ERROR,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    InvalidParams,
    McpError,
)
from presa_trio.wire.meta import META_LOG_LEVEL
from presa_trio.wire.mrtr import Elicitation, ListRoots
from presa_trio.wire.tasks import Status
from tests.expect import without_incident
from tests.tasks.helpers import RESULT, TRIO_CLOCK, RecordingStore, creator, gated

ASK = Elicitation("Sure?", {"type": "object", "properties": {}})
YES = {"action": "accept", "content": {}}


@asynccontextmanager
async def recovered_as(store: MemoryStore, job: Job) -> AsyncIterator[TaskRunner]:
    """The runner of a next process on ``store``, running, once its recovery has run
    again every task it could claim, as ``job``; stopped when the block ends."""
    runner = TaskRunner(store, TRIO_CLOCK, lease_ms=3000, revive=lambda _: (job, creator()))
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        await wait_all_tasks_blocked()
        yield runner
        nursery.cancel_scope.cancel()


def assert_failed_generically(task: Task) -> None:
    """``task`` failed with the generic -32603 a job's own mistake gets (its incident aside)."""
    assert task.error is not None
    assert (task.status, without_incident(task.error)) == (
        Status.FAILED,
        {"code": INTERNAL_ERROR, "message": "Internal error"},
    )


def asking(keys: list[str], record: list[str], rounds: int = 1) -> Any:
    """A job that asks for ``keys`` at once, ``rounds`` times, and returns the answers."""

    async def job(ctx: WorkerContext) -> Any:
        answers: dict[str, Any] = {}
        try:
            for round_number in range(rounds):
                names = [f"{key}-{round_number}" if rounds > 1 else key for key in keys]
                given = await ctx.ask(dict.fromkeys(names, ASK))
                answers |= {name: given.raw(name) for name in given}
                record.append(f"answered {sorted(answers)}")
        except trio.Cancelled:
            record.append("cancelled")
            raise
        return {"content": [], "answers": answers}

    return job


async def test_start_returns_once_the_task_is_stored_and_cancellable(
    runner: TaskRunner,
) -> None:
    """Spec-mandated (SEP-2663 §Task Creation: "MUST NOT return CreateTaskResult until
    ... a tasks/get would resolve"; T-23, T-24): once start returns, the task reads
    back and a cancel reaches it. The job is a plain async function, not a tool:
    the runner serves any request type (T-12)."""
    record: list[str] = []
    task = await runner.start("s", gated(trio.Event(), record), creator())
    assert (await runner.get("s", task.task_id)) is task
    assert (task.status, task.ttl_ms, task.poll_interval_ms) == (Status.WORKING, 60_000, 100)
    await runner.cancel("s", task.task_id)
    await wait_all_tasks_blocked()
    assert record in ([], ["cancelled"])
    assert (await runner.get("s", task.task_id)).status is Status.CANCELLED


def test_a_stop_that_comes_before_the_worker_has_a_scope_is_kept() -> None:
    """presa-defined (the worker's stop handle): a stop made before the task's
    nursery exists (a cancel while the worker has not taken its first step)
    cancels the scope the moment the worker guards it, so the job never runs."""
    worker = Worker("t", "s", 1, model.create("t", now_ms=0, ttl_ms=None, poll_interval_ms=None))
    worker.stop("tasks/cancel")
    scope = trio.CancelScope()
    worker.guard(scope)
    assert (worker.stopped(), scope.cancel_called) == (True, True)


async def test_a_cancel_stops_a_running_job(runner: TaskRunner) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation; T-49): a job stopped mid-way
    gets ``trio.Cancelled`` at its await, and the task reads cancelled."""
    record: list[str] = []
    began = trio.Event()
    task = await runner.start("s", gated(trio.Event(), record, running=began), creator())
    await began.wait()
    await runner.cancel("s", task.task_id)
    await wait_all_tasks_blocked()
    assert record == ["cancelled"]
    assert (await runner.get("s", task.task_id)).status is Status.CANCELLED


@attrs.define(eq=False, repr=False)
class UnannouncedStore(MemoryStore):
    """The memory store, whose announcements reach no watcher: a watch between
    its failure and its restart."""

    async def watch(
        self, deliver: Any, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        await trio.sleep_forever()


async def test_a_cancel_stops_its_worker_here_without_the_stores_announcement() -> None:
    """presa-defined (SEP-2663 §Task Cancellation, cooperative; spec-notes §28; T-49):
    ``tasks/cancel`` stops a worker of this process itself, once ``cancelled`` is
    stored, rather than waiting for the store to announce the write, which a
    watch being restarted would not hear."""
    runner = TaskRunner(UnannouncedStore(), TRIO_CLOCK)
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        record: list[str] = []
        began = trio.Event()
        task = await runner.start("s", gated(trio.Event(), record, running=began), creator())
        await began.wait()
        await runner.cancel("s", task.task_id)
        await wait_all_tasks_blocked()
        assert record == ["cancelled"]
        assert (await runner.get("s", task.task_id)).status is Status.CANCELLED
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("shielded", [False, True], ids=["plain", "shielded-finish"])
@pytest.mark.parametrize("outcome", ["result", "raise"])
@pytest.mark.parametrize("order", ["finish-then-cancel", "cancel-then-finish", "same-step"])
async def test_cancel_and_completion_leave_exactly_one_terminal_status(
    runner: TaskRunner, store: RecordingStore, order: str, outcome: str, shielded: bool
) -> None:
    """Spec-mandated (overview §Task lifecycle; T-49, T-66): whichever of cancel and
    the worker's end comes first wins, and the status never changes again.

    presa-defined (spec-notes §28): cancel writes ``cancelled`` before stopping the worker,
    so a worker that finishes in the same step, or inside a shield, is dropped.
    """
    release = trio.Event()

    async def job(ctx: WorkerContext) -> Any:
        with trio.CancelScope(shield=shielded):
            await release.wait()
        if outcome == "raise":
            raise ValueError("the job broke")
        return RESULT

    task_id = (await runner.start("s", job, creator())).task_id
    await wait_all_tasks_blocked()
    if order == "finish-then-cancel":
        release.set()
        await wait_all_tasks_blocked()
        await runner.cancel("s", task_id)
    elif order == "cancel-then-finish":
        await runner.cancel("s", task_id)
        await wait_all_tasks_blocked()
        release.set()
    else:
        release.set()
        await runner.cancel("s", task_id)
    await wait_all_tasks_blocked()

    ended = await runner.get("s", task_id)
    expected = {"result": Status.COMPLETED, "raise": Status.FAILED}[outcome]
    assert ended.status is (expected if order == "finish-then-cancel" else Status.CANCELLED)
    await runner.cancel("s", task_id)
    await runner.update("s", task_id, {"k": YES})
    await wait_all_tasks_blocked()
    assert (await runner.get("s", task_id)) is ended
    assert store.statuses(task_id) == [ended.status]


async def test_cancelling_a_task_parked_on_input_wakes_nothing_else(runner: TaskRunner) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation; T-30): the parked task ends
    ``cancelled`` with its requests gone; another parked task and its worker are
    untouched, and still finish normally."""
    record_a: list[str] = []
    record_b: list[str] = []
    task_a = await runner.start("s", asking(["a1", "a2"], record_a), creator())
    task_b = await runner.start("s", asking(["b1"], record_b), creator())
    await wait_all_tasks_blocked()
    parked_b = await runner.get("s", task_b.task_id)
    assert parked_b.status is Status.INPUT_REQUIRED

    await runner.cancel("s", task_a.task_id)
    await wait_all_tasks_blocked()
    cancelled = await runner.get("s", task_a.task_id)
    assert (cancelled.status, dict(cancelled.input_requests)) == (Status.CANCELLED, {})
    assert record_a == ["cancelled"]
    assert record_b == []
    assert (await runner.get("s", task_b.task_id)) is parked_b

    await runner.update("s", task_b.task_id, {"b1": YES})
    await wait_all_tasks_blocked()
    assert (await runner.get("s", task_b.task_id)).status is Status.COMPLETED


async def test_an_update_wakes_the_worker_only_for_the_keys_it_answers(
    runner: TaskRunner,
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests, partial set MAY; T-28, T-42,
    T-45): the answered key leaves at once (read-your-writes, presa-defined); the
    worker stays parked until the last key is answered."""
    record: list[str] = []
    task_id = (await runner.start("s", asking(["first", "second"], record), creator())).task_id
    await wait_all_tasks_blocked()
    assert set((await runner.get("s", task_id)).input_requests) == {"first", "second"}

    await runner.update("s", task_id, {"first": {"action": "accept", "content": {"n": 1}}})
    after_first = await runner.get("s", task_id)
    assert (after_first.status, list(after_first.input_requests)) == (
        Status.INPUT_REQUIRED,
        ["second"],
    )
    await wait_all_tasks_blocked()
    assert record == []

    await runner.update("s", task_id, {"second": YES, "first": {"late": True}})
    await wait_all_tasks_blocked()
    done = await runner.get("s", task_id)
    assert record == ["answered ['first', 'second']"]
    assert done.status is Status.COMPLETED
    assert done.result is not None
    assert done.result["answers"] == {
        "first": {"action": "accept", "content": {"n": 1}},
        "second": YES,
    }


async def test_answers_for_keys_not_outstanding_and_for_terminal_tasks_change_nothing(
    runner: TaskRunner,
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests (Response), SHOULD ignore; T-44):
    the update returns (the extension acks it) and the task is the same object."""
    record: list[str] = []
    task_id = (await runner.start("s", asking(["k"], record), creator())).task_id
    await wait_all_tasks_blocked()
    parked = await runner.get("s", task_id)
    await runner.update("s", task_id, {"unknown-key": {"ignored": True}})
    assert (await runner.get("s", task_id)) is parked

    await runner.update("s", task_id, {"k": YES})
    await wait_all_tasks_blocked()
    done = await runner.get("s", task_id)
    assert done.status is Status.COMPLETED
    await runner.update("s", task_id, {"k": YES, "other": YES})
    await wait_all_tasks_blocked()
    assert (await runner.get("s", task_id)) is done


async def test_a_second_round_of_input_uses_new_keys(runner: TaskRunner) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests; T-28): after one round is
    answered, the task parks again with the next round's keys only."""
    record: list[str] = []
    task_id = (await runner.start("s", asking(["q"], record, rounds=2), creator())).task_id
    await wait_all_tasks_blocked()
    assert list((await runner.get("s", task_id)).input_requests) == ["q-0"]
    await runner.update("s", task_id, {"q-0": YES})
    await wait_all_tasks_blocked()
    assert list((await runner.get("s", task_id)).input_requests) == ["q-1"]
    await runner.update("s", task_id, {"q-1": YES})
    await wait_all_tasks_blocked()
    assert (await runner.get("s", task_id)).status is Status.COMPLETED


async def test_asking_again_under_an_answered_key_fails_the_task(
    runner: TaskRunner, store: RecordingStore
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests, MUST NOT reuse a key; T-38):
    the reused key is never shown again; the task fails with a generic -32603."""

    async def job(ctx: WorkerContext) -> Any:
        await ctx.ask({"k": ASK})
        await ctx.ask({"k": ASK})
        return RESULT

    task_id = (await runner.start("s", job, creator())).task_id
    await wait_all_tasks_blocked()
    await runner.update("s", task_id, {"k": YES})
    await wait_all_tasks_blocked()
    assert_failed_generically(await runner.get("s", task_id))
    assert store.statuses(task_id) == [Status.INPUT_REQUIRED, Status.WORKING, Status.FAILED]


async def test_input_the_creating_request_cannot_answer_fails_with_32021(
    runner: TaskRunner, store: RecordingStore
) -> None:
    """Spec-mandated (2026-07-28 basic/patterns/mrtr §Server Requirements, checked
    against the creating request; T-76; spec-notes §30): never ``input_required``."""
    job = asking(["k"], [])
    task_id = (await runner.start("s", job, creator(capabilities={"sampling": {}}))).task_id
    await wait_all_tasks_blocked()
    failed = await runner.get("s", task_id)
    assert failed.status is Status.FAILED
    assert failed.error is not None
    assert failed.error["code"] == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert failed.error["data"] == {"requiredCapabilities": {"elicitation": {}}}
    assert Status.INPUT_REQUIRED not in store.statuses(task_id)


async def test_a_wait_the_tool_abandons_withdraws_its_requests(
    runner: TaskRunner, autojump_clock: trio.testing.MockClock
) -> None:
    """presa-defined (SEP-2663 §Task Update Requests, "superseded" requests; spec-notes §15): a
    tool that stops waiting takes its requests back; a late answer is ignored."""
    finish = trio.Event()

    async def job(ctx: WorkerContext) -> Any:
        with trio.move_on_after(5):
            await ctx.ask({"roots": ListRoots()})
        await finish.wait()
        return RESULT

    task_id = (await runner.start("s", job, creator())).task_id
    await wait_all_tasks_blocked()
    assert (await runner.get("s", task_id)).status is Status.INPUT_REQUIRED
    autojump_clock.jump(5)
    await wait_all_tasks_blocked()
    resumed = await runner.get("s", task_id)
    assert (resumed.status, dict(resumed.input_requests)) == (Status.WORKING, {})
    await runner.update("s", task_id, {"roots": {"roots": []}})
    assert (await runner.get("s", task_id)) is resumed
    finish.set()
    await wait_all_tasks_blocked()
    assert (await runner.get("s", task_id)).status is Status.COMPLETED


@attrs.define(eq=False, repr=False)
class LateAnswerStore(MemoryStore):
    """The memory store, whose answer to an ``input_required`` write comes late.

    The write commits at once; its answer then waits on ``answer``, in the
    caller's scope, so a cancel that comes meanwhile reaches a caller whose
    write has committed: as PostgreSQL's store does (its caller "does not
    learn which", presa_trio.tasks.stores.postgres.database).
    """

    answer: trio.Event = attrs.field(factory=trio.Event)

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
        if task.status is Status.INPUT_REQUIRED:
            await self.answer.wait()


async def test_requests_committed_as_the_tool_gives_up_are_withdrawn(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (SEP-2663 §Task Update Requests, "superseded" requests; spec-notes §15):
    the tool's own timeout ends its ask while the store's answer to the write of its
    requests is on its way, the write committed; the requests are withdrawn, so the
    task never shows requests nobody waits for while the tool goes on."""
    store = LateAnswerStore()
    runner = TaskRunner(store, TRIO_CLOCK)
    finish = trio.Event()

    async def job(ctx: WorkerContext) -> Any:
        with trio.move_on_after(5):
            await ctx.ask({"roots": ListRoots()})
        await finish.wait()
        return RESULT

    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task_id = (await runner.start("s", job, creator())).task_id
        await wait_all_tasks_blocked()
        assert (await runner.get("s", task_id)).status is Status.INPUT_REQUIRED
        autojump_clock.jump(5)
        await wait_all_tasks_blocked()
        resumed = await runner.get("s", task_id)
        assert (resumed.status, dict(resumed.input_requests)) == (Status.WORKING, {})
        finish.set()
        await wait_all_tasks_blocked()
        assert (await runner.get("s", task_id)).status is Status.COMPLETED
        nursery.cancel_scope.cancel()


@attrs.define(eq=False, repr=False)
class LostAnswerStore(MemoryStore):
    """The memory store, whose first ``input_required`` write commits and then answers
    unavailable, as a connection that broke between a commit and its answer does."""

    lost: bool = False

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
        if task.status is Status.INPUT_REQUIRED and not self.lost:
            self.lost = True
            raise StoreUnavailable("the connection broke before the commit was answered")


async def test_requests_whose_stored_answer_was_lost_are_not_asked_twice(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (docs/tasks.md, the failure policy: an unavailable store is waited
    for; SEP-2663 §Task Update Requests): the write of a task's input requests commits,
    but the store's answer is lost; the write tried again finds its own requests on the
    task and asks nothing twice, so the task waits for its answer instead of failing."""
    store = LostAnswerStore()
    runner = TaskRunner(store, TRIO_CLOCK)

    async def job(ctx: WorkerContext) -> Any:
        answers = await ctx.ask({"roots": ListRoots()})
        return {"content": [], "roots": answers.raw("roots")}

    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task_id = (await runner.start("s", job, creator())).task_id
        await wait_all_tasks_blocked()
        autojump_clock.jump(1)  # past the write's back-off
        await wait_all_tasks_blocked()
        assert store.lost
        parked = await runner.get("s", task_id)
        assert (parked.status, list(parked.input_requests)) == (Status.INPUT_REQUIRED, ["roots"])
        await runner.update("s", task_id, {"roots": {"roots": []}})
        await wait_all_tasks_blocked()
        done = await runner.get("s", task_id)
        assert (done.status, done.result) == (
            Status.COMPLETED,
            {"content": [], "roots": {"roots": []}},
        )
        nursery.cancel_scope.cancel()


async def test_a_rerun_that_asks_a_key_its_first_run_withdrew_fails(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests, keys unique for the task; T-37): a
    key withdrawn by the first run (its tool stopped waiting) can never be answered,
    so a re-run that asks it again fails with a generic -32603, as asking a key twice
    does, rather than wait until its TTL for an answer no update can give."""
    store = MemoryStore()
    work = Work("asker", {}, "2026-07-28", {}, rerun=True)
    runs: list[str] = []

    async def job(ctx: WorkerContext) -> Any:
        runs.append("run")
        if len(runs) == 1:
            with trio.move_on_after(1):
                await ctx.ask({"k": ASK})  # the tool gives up: "k" is withdrawn
            await ctx.ask({"j": ASK})  # parked when its process stops
        else:
            await ctx.ask({"k": ASK})
        return RESULT

    first = TaskRunner(store, TRIO_CLOCK, lease_ms=3000)
    async with trio.open_nursery() as nursery:
        await nursery.start(first.run)
        task_id = (await first.start("s", job, creator(), work)).task_id
        await trio.sleep(2)
        assert list((await first.get("s", task_id)).input_requests) == ["j"]
        nursery.cancel_scope.cancel()  # the process stops; its lease is let go
    async with recovered_as(store, job) as second:
        assert runs == ["run", "run"]
        assert_failed_generically(await second.get("s", task_id))


async def test_a_rerun_that_asks_a_key_twice_fails_as_its_first_run_would(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests, keys unique for the task; T-37): a
    task run again by recovery that asks a key it asked already in that run, here
    from two child tasks at once, fails with a generic -32603, as its first run and
    the plain path do. Each child's wait must not replace the other's Event under
    the one key: the answer would wake one of them, and the task never end."""
    store = MemoryStore()
    work = Work("asker", {}, "2026-07-28", {}, rerun=True)
    runs: list[str] = []

    async def job(ctx: WorkerContext) -> Any:
        runs.append("run")
        if len(runs) == 1:
            await ctx.ask({"k": ASK})  # parked when its process stops
            return RESULT

        async def child() -> None:
            await ctx.ask({"k": ASK})

        ctx.nursery.start_soon(child)
        ctx.nursery.start_soon(child)
        return RESULT

    first = TaskRunner(store, TRIO_CLOCK, lease_ms=3000)
    async with trio.open_nursery() as nursery:
        await nursery.start(first.run)
        task_id = (await first.start("s", job, creator(), work)).task_id
        await wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()  # the process stops; its lease is let go
    async with recovered_as(store, job) as second:
        assert runs == ["run", "run"]
        await second.update("s", task_id, {"k": YES})
        await wait_all_tasks_blocked()
        assert_failed_generically(await second.get("s", task_id))


async def test_a_worker_that_fails_outside_its_job_ends_alone_and_its_task_is_recovered(
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """presa-defined (the failure policy of a task's nursery, ``Supervisor._supervise``):
    what escapes a worker outside its job (a bug in the runtime, here its final write)
    is logged as an incident and ends that worker only: another task runs on to its
    result, the runner keeps serving, and the task, whose lease is no longer renewed,
    is claimed by recovery once the lease lapses and written ``failed`` as interrupted."""
    runner = TaskRunner(MemoryStore(), TRIO_CLOCK, lease_ms=3000)
    doomed: list[str] = []
    write = StoreWriter.write

    async def broken_write(writer: StoreWriter, worker: Worker, move: Move) -> None:
        if worker.task_id in doomed and move.what == "the task's result":
            raise RuntimeError("a bug in the runtime")
        await write(writer, worker, move)

    monkeypatch.setattr(StoreWriter, "write", broken_write)
    releases = [trio.Event(), trio.Event()]
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        broken = await runner.start("s", gated(releases[0], []), creator())
        steady = await runner.start("s", gated(releases[1], []), creator())
        doomed.append(broken.task_id)
        await wait_all_tasks_blocked()
        releases[0].set()
        await wait_all_tasks_blocked()
        assert f"task {broken.task_id}: its worker failed" in caplog.text
        assert (await runner.get("s", broken.task_id)).status is Status.WORKING
        releases[1].set()
        await wait_all_tasks_blocked()
        assert (await runner.get("s", steady.task_id)).status is Status.COMPLETED
        await trio.sleep(5)  # past the lease, and a recovery round after it
        recovered = await runner.get("s", broken.task_id)
        assert (recovered.status, recovered.error) == (Status.FAILED, INTERRUPTED.to_wire())
        assert await runner.unready() is None
        nursery.cancel_scope.cancel()


class Boom(Exception):
    """A failure no tool anticipated."""


async def raise_spec_error(ctx: WorkerContext) -> Any:
    raise InvalidParams("bad widget", {"field": "widget"})


async def raise_with_secret(ctx: WorkerContext) -> Any:
    raise Boom("password=hunter2 in /etc/secret")


async def raise_a_group(ctx: WorkerContext) -> Any:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(raise_spec_error, ctx)
        nursery.start_soon(raise_with_secret, ctx)
    return RESULT


NON_JSON = {"code": INTERNAL_ERROR, "message": "Task worker returned a non-JSON result"}


async def return_a_set(ctx: WorkerContext) -> Any:
    return {"content": [], "tags": {"a", "b"}}


async def return_nan(ctx: WorkerContext) -> Any:
    return {"content": [], "score": float("nan")}


async def return_a_list(ctx: WorkerContext) -> Any:
    return [RESULT]


@pytest.mark.parametrize(
    ("job", "error"),
    [
        (raise_spec_error, {"code": -32602, "message": "bad widget", "data": {"field": "widget"}}),
        (raise_with_secret, {"code": INTERNAL_ERROR, "message": "Internal error"}),
        (raise_a_group, {"code": INTERNAL_ERROR, "message": "Internal error"}),
        (return_a_set, NON_JSON),
        (return_nan, NON_JSON),
        (return_a_list, NON_JSON),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
async def test_a_job_that_errs_ends_failed_with_a_json_rpc_error_and_no_detail(
    runner: TaskRunner, job: Any, error: dict[str, Any]
) -> None:
    """Spec-mandated (SEP-2663 §Task Execution Errors: failed carries the JSON-RPC
    error; T-20, T-31, T-58): a spec error is kept as is; anything else is a generic
    -32603 whose message and statusMessage hold no exception text."""
    task_id = (await runner.start("s", job, creator())).task_id
    await wait_all_tasks_blocked()
    failed = await runner.get("s", task_id)
    assert failed.error is not None
    assert (failed.status, without_incident(failed.error), failed.result) == (
        Status.FAILED,
        error,
        None,
    )
    assert "hunter2" not in json.dumps(failed.detailed())


@attrs.define(eq=False)
class RefusingStore(MemoryStore):
    """The memory store, refusing any write of the status message ``refuse me``."""

    async def compare_and_set(
        self, scope: str, task: Task, expected_revision: int, **kwargs: Any
    ) -> None:
        if task.message == "refuse me":
            raise StoreRefused("test: no room for it")
        await super().compare_and_set(scope, task, expected_revision, **kwargs)


async def test_a_job_whose_write_the_store_refused_stops_with_its_failed_task() -> None:
    """presa-defined (the failure policy, :mod:`presa_trio.tasks.writes`: refused data
    fails the task that wrote it, not retryable, and its worker stops): the task
    is ``failed`` saying what could not be stored, and the job, waiting again
    after its refused write, is cancelled rather than run on for a task that ended."""
    record: list[str] = []
    release = trio.Event()

    async def job(ctx: WorkerContext) -> Any:
        await ctx.set_status_message("refuse me")
        record.append("went on")
        return await gated(release, record)(ctx)

    runner = TaskRunner(RefusingStore(), TRIO_CLOCK)
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task_id = (await runner.start("s", job, creator())).task_id
        await wait_all_tasks_blocked()
        failed = await runner.get("s", task_id)
        assert (failed.status, failed.error) == (
            Status.FAILED,
            {
                "code": INTERNAL_ERROR,
                "message": "Could not store the task's status message: test: no room for it",
                "data": {"retryable": False},
            },
        )
        assert record == ["went on", "cancelled"]
        nursery.cancel_scope.cancel()


async def test_a_worker_sends_nothing_on_the_creating_stream(runner: TaskRunner) -> None:
    """Spec-mandated (SEP-2663 §Task Status Notifications: progress and logging are
    not supported on tasks; T-55; spec-notes §41): the worker runs detached, with
    the creating request's capabilities and verified answers but not its stream."""
    sent: list[dict[str, Any]] = []
    log_level: dict[str, Any] = {META_LOG_LEVEL: "debug"}
    origin = creator(sent=sent, progressToken="p-1", **log_level)
    origin.input_responses = {"earlier": YES}
    seen: list[Any] = []

    async def job(ctx: WorkerContext) -> Any:
        await ctx.report_progress(1, 2)
        await ctx.log("error", "something happened")
        seen.extend([ctx.capabilities, ctx.input_responses, ctx.request_id])
        return RESULT

    task = await runner.start("s", job, origin)
    await wait_all_tasks_blocked()
    assert (await runner.get("s", task.task_id)).status is Status.COMPLETED
    assert sent == []
    assert seen == [origin.capabilities, {"earlier": YES}, task.task_id]


async def test_an_expired_task_reads_as_expired_then_is_reaped_with_its_worker(
    store: RecordingStore, autojump_clock: trio.testing.MockClock
) -> None:
    """Spec-mandated (SEP-2663 §Tasks, ttlMs counted from creation; §Protocol Errors;
    T-18, T-35): readable until createdAt + ttlMs, then -32602 "expired"; the reaper
    (in the server nursery) deletes it and stops its worker, never rewriting it."""
    runner = TaskRunner(store, TRIO_CLOCK, ttl_ms=1000, reap_every=10)
    record: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        began = trio.Event()
        job = gated(trio.Event(), record, running=began)
        task_id = (await runner.start("s", job, creator())).task_id
        await began.wait()
        autojump_clock.jump(0.999)
        assert (await runner.get("s", task_id)).status is Status.WORKING
        autojump_clock.jump(0.001)
        with pytest.raises(TaskExpired):
            await runner.get("s", task_id)
        autojump_clock.jump(10)
        await wait_all_tasks_blocked()
        with pytest.raises(TaskNotFound) as gone:
            await runner.get("s", task_id)
        assert type(gone.value) is TaskNotFound
        assert record == ["cancelled"]
        assert store.statuses(task_id) == []
        nursery.cancel_scope.cancel()


async def test_a_task_with_no_ttl_is_never_reaped(
    store: RecordingStore, autojump_clock: trio.testing.MockClock
) -> None:
    """Spec-mandated (SEP-2663 §Tasks: ttlMs null is unlimited; T-18)."""
    runner = TaskRunner(store, TRIO_CLOCK, ttl_ms=None, reap_every=10)
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task = await runner.start("s", gated(trio.Event(), []), creator())
        autojump_clock.jump(10**9)
        await wait_all_tasks_blocked()
        assert (await runner.get("s", task.task_id)) is task
        assert task.to_wire()["ttlMs"] is None
        nursery.cancel_scope.cancel()


async def test_capacity_limits_refuse_new_tasks_with_a_retryable_32603(
    store: RecordingStore,
) -> None:
    """presa-defined (spec-notes §31): per scope, then overall; nothing is stored,
    and a slot frees when a task ends."""
    runner = TaskRunner(store, TRIO_CLOCK, limits=Limits(max_active=2, max_active_per_scope=1))
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        first = await runner.start("a", gated(trio.Event(), []), creator())
        await runner.start("b", gated(trio.Event(), []), creator())
        for scope, limit in [("a", "max_active_tasks_per_scope"), ("c", "max_active_tasks")]:
            with pytest.raises(McpError) as refused:
                await runner.start(scope, gated(trio.Event(), []), creator())
            assert refused.value.code == INTERNAL_ERROR
            assert refused.value.data == {"retryable": True, "limit": limit}
        assert len(store.entries) == 2
        await runner.cancel("a", first.task_id)
        await runner.start("a", gated(trio.Event(), []), creator())
        nursery.cancel_scope.cancel()


def test_a_task_input_is_measured_as_compact_utf8() -> None:
    """presa-defined (spec-notes §31): the bound counts compact UTF-8 JSON bytes."""
    limits = Limits(max_input_bytes=15)  # {"x":"0123456"} is 15 bytes
    assert not limits.input_too_large({"x": "0123456"})
    assert limits.input_too_large({"x": "01234567"})
    assert limits.input_too_large({"x": "é" * 5})  # two bytes each: 18


def all_trio_tasks() -> set[trio.lowlevel.Task]:
    found: set[trio.lowlevel.Task] = set()
    pending = [trio.lowlevel.current_root_task()]
    while pending:
        task = pending.pop()
        if task is not None:
            found.add(task)
            pending.extend(t for n in task.child_nurseries for t in n.child_tasks)
    return found


async def test_a_runner_cancelled_as_it_starts_ends_at_once() -> None:
    """presa-defined (the failure policy of the workers' nursery, ``Supervisor.run``;
    docs/tasks.md, shutdown): a runner whose scope is cancelled while its workers'
    nursery is being started (a shutdown during start-up) ends. The shield that only
    ``Supervisor.stop`` lifts must not go up in ``nursery.start``'s own nursery, where
    a cancelled start leaves its task: nothing would lift it, and the start would
    wait for ever."""
    runner = TaskRunner(MemoryStore(), TRIO_CLOCK)
    ended: list[bool] = []

    async def cancelled_at_start() -> None:
        with trio.CancelScope() as scope:
            scope.cancel()
            await runner.run()
        ended.append(scope.cancelled_caught)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(cancelled_at_start)
        await wait_all_tasks_blocked()
        ended_by_itself = list(ended)
        if not ended and runner._supervisor is not None:
            runner._supervisor.stop("the test gives up")  # it hangs: let it end
    assert ended_by_itself == [True]


async def test_shutdown_cancels_every_worker_and_leaves_no_trio_task(
    store: RecordingStore,
) -> None:
    """presa-defined (README §Architecture: "One Trio task per MCP task"; docs/tasks.md
    §1. Create; spec-notes §41): closing the server nursery stops the reaper and every worker,
    parked or running; afterwards no Trio task of the runner is left, and no new
    task can start."""
    runner = TaskRunner(store)
    records: list[list[str]] = [[], [], []]
    before = all_trio_tasks()
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        await runner.start("s", gated(trio.Event(), records[0]), creator())
        await runner.start("s", asking(["k"], records[1]), creator())
        await runner.start("t", asking(["a", "b"], records[2]), creator())
        await wait_all_tasks_blocked()
        assert len(all_trio_tasks() - before) > 3
        nursery.cancel_scope.cancel()
    assert records == [["cancelled"]] * 3
    assert all_trio_tasks() == before
    with pytest.raises(RuntimeError, match="not running"):
        await runner.start("s", gated(trio.Event(), []), creator())


async def test_ctrl_c_in_one_worker_stops_the_others_before_they_are_cancelled(
    store: RecordingStore,
) -> None:
    """presa-defined (docs/tasks.md, the workers' nursery): Ctrl-C that Trio raises in one
    tool's code (``KeyboardInterrupt``, on stdio) ends the runner, and every other worker
    is stopped first, as at a shutdown: a task parked on input keeps its requests, none
    withdrawn, so the next process's run of it can ask them again."""
    runner = TaskRunner(store, TRIO_CLOCK, ttl_ms=60_000)
    interrupt = trio.Event()

    async def interrupted(ctx: WorkerContext) -> Any:
        await interrupt.wait()
        raise KeyboardInterrupt  # as Ctrl-C landing while this tool's code runs

    parked: list[str] = []

    async def serve() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(runner.run)
            parked.append((await runner.start("s", asking(["k"], []), creator())).task_id)
            await runner.start("s", interrupted, creator())
            await wait_all_tasks_blocked()
            interrupt.set()

    with pytest.raises(BaseExceptionGroup) as ended:
        await serve()
    assert ended.value.split(KeyboardInterrupt)[1] is None
    task = store.entries[parked[0]].task
    assert (task.status, list(task.input_requests), task.withdrawn) == (
        Status.INPUT_REQUIRED,
        ["k"],
        frozenset(),
    )


def test_new_tasks_live_an_hour_by_default() -> None:
    """presa-defined (SEP-2663 §Task Creation; spec-notes §18): a finite default ttlMs of
    3 600 000."""
    assert TaskRunner().ttl_ms == 3_600_000


@pytest.mark.parametrize("setting", ["ttl_ms", "poll_interval_ms"])
@pytest.mark.parametrize("value", [0, -1, 1.5, 1000.0, True, "1000"])
def test_ttl_and_poll_interval_are_whole_positive_milliseconds(setting: str, value: Any) -> None:
    """Spec-mandated (SEP-2663 §Tasks: ``ttlMs`` and ``pollIntervalMs`` are integer
    milliseconds; T-17) and runner-scored (tasks-wire-fields/tasks-wire-field-renames:
    positive; spec-notes §53): a runner that would send anything else, or fail every
    task it creates, is refused when built or set, before it serves a call."""
    with pytest.raises(ValueError, match=setting):
        TaskRunner(**{setting: value})
    runner = TaskRunner()
    with pytest.raises(ValueError, match=setting):
        setattr(runner, setting, value)
    setattr(runner, setting, None)
    setattr(runner, setting, 1)
    assert getattr(runner, setting) == 1


def test_task_ids_are_unguessable_and_header_safe() -> None:
    """Spec-mandated (SEP-2663 §Security Implications: sufficient entropy; T-64):
    192 random bits (≥ 128 required), base64url, so Mcp-Name needs no encoding; never
    starting with "-", so a command line takes one as an argument (one in 64 would)."""
    ids = {new_task_id() for _ in range(10_000)}
    assert len(ids) == 10_000
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{31}", task_id) for task_id in ids)


@attrs.define(eq=False, repr=False)
class LeavingClientStore(MemoryStore):
    """The memory store, whose ``create`` cancels the creating request once the
    task is stored: the client went away while its creation was in flight."""

    request: trio.CancelScope | None = None

    async def create(self, stored: StoredTask, limits: Limits, now_ms: int) -> None:
        await super().create(stored, limits, now_ms)
        assert self.request is not None
        self.request.cancel()


async def test_a_creation_cancelled_once_stored_still_gets_its_worker() -> None:
    """presa-defined (no stored task without its worker): a creating request
    cancelled after the store write (the client went away) cannot leave a task
    that is stored, leased and renewed, yet never runs. The cancellation is
    delivered at the request's next checkpoint, after start returned."""
    store = LeavingClientStore()
    runner = TaskRunner(store, TRIO_CLOCK)
    record: list[str] = []
    stored_ids: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        with trio.CancelScope() as request_scope:
            store.request = request_scope
            stored_ids.append(
                (await runner.start("s", gated(trio.Event(), record), creator())).task_id
            )
            await trio.lowlevel.checkpoint()
        assert request_scope.cancelled_caught
        await wait_all_tasks_blocked()
        await runner.cancel("s", stored_ids[0])
        await wait_all_tasks_blocked()
        assert record == ["cancelled"]
        nursery.cancel_scope.cancel()


@attrs.define(eq=False, repr=False)
class SlowCreationStore(MemoryStore):
    """The memory store, whose ``create`` waits for ``gate``: a creation still
    in flight, as it is on a store reached through a thread or a network."""

    gate: trio.Event = attrs.field(factory=trio.Event)

    async def create(self, stored: StoredTask, capacity: Limits, now_ms: int) -> None:
        await self.gate.wait()
        await super().create(stored, capacity, now_ms)


async def test_a_renewal_during_a_creation_leaves_its_worker_running(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (leases with fencing): a lease renewal that runs while a
    creation is still being stored does not count the new task's lease lost, so
    its worker runs once it is stored (it was stopped before its first step)."""
    store = SlowCreationStore()
    runner = TaskRunner(store, TRIO_CLOCK, lease_ms=3000)
    record: list[str] = []
    began = trio.Event()
    created: list[Task] = []

    async def create() -> None:
        job = gated(trio.Event(), record, running=began)
        created.append(await runner.start("s", job, creator()))

    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        nursery.start_soon(create)
        await trio.sleep(2)  # renewals run every second, the creation in flight
        store.gate.set()
        with trio.fail_after(5):
            await began.wait()
        await trio.sleep(2)
        assert (await runner.get("s", created[0].task_id)).status is Status.WORKING
        assert record == []
        nursery.cancel_scope.cancel()


@attrs.define(eq=False, repr=False)
class HeldWriteStore(MemoryStore):
    """The memory store, whose writes of the status message ``held``, and appends of an
    event of type :data:`HELD`, wait for ``gate`` before they are checked: on their way,
    as to a store reached over a network."""

    gate: trio.Event = attrs.field(factory=trio.Event)

    async def compare_and_set(
        self,
        scope: str,
        task: Task,
        expected_revision: int,
        *,
        fence: int | None = None,
        events: LogAppend | None = None,
    ) -> None:
        if task.message == "held":
            await self.gate.wait()
        await super().compare_and_set(scope, task, expected_revision, fence=fence, events=events)

    async def append_events(
        self,
        task_id: str,
        events: Sequence[NewEvent],
        now_ms: int,
        retention: Retention,
        *,
        closing: bool = False,
        fence: int | None = None,
    ) -> list[TaskEvent]:
        if any(event.type == HELD for event in events):
            await self.gate.wait()
        return await super().append_events(
            task_id, events, now_ms, retention, closing=closing, fence=fence
        )


#: The type of the tool's event that :class:`HeldWriteStore` holds.
HELD = "com.example.held"


@pytest.mark.parametrize("held", ["status message", "event"])
async def test_a_write_on_its_way_as_this_process_reclaims_its_lease_goes_again_under_it(
    held: str,
) -> None:
    """presa-defined (leases with fencing; the reactions' LEASE_RECLAIMED adopts): a
    worker too slow to renew, whose lapsed lease this very process claims while the
    worker's write (or its tool's event) is on its way, does not take the refusal to
    the old generation for a lost lease: it goes again under the lease adopted, the
    event is in the task's log, and the task runs on to its end rather than wait,
    unrun, for its lease to lapse."""
    store = HeldWriteStore()
    log = TaskEventLog()
    runner = TaskRunner(store, TRIO_CLOCK, log, ttl_ms=60_000, lease_ms=30_000)

    async def job(ctx: WorkerContext) -> Any:
        if held == "event":
            await ctx.emit(HELD, {})
        else:
            await ctx.set_status_message("held")
        return RESULT

    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task_id = (await runner.start("s", job, creator())).task_id
        await wait_all_tasks_blocked()
        lapsed = TRIO_CLOCK.wall_ms() + 30_001
        (claimed,) = await store.claim_expired(runner.owner, lapsed, lapsed + 30_000, 10)
        assert claimed.lease == Lease(runner.owner, 2, lapsed + 30_000)
        store.gate.set()
        await wait_all_tasks_blocked()
        assert (await runner.get("s", task_id)).status is Status.COMPLETED
        if held == "event":
            window = await store.read_events(task_id, -1, 100, lapsed, log.retention)
            assert HELD in [event.type for event in window.events]
        nursery.cancel_scope.cancel()


#: How long a frozen store's write waits unless cancelled: far past any bound a test checks.
FROZEN_FOR = 3600.0


@attrs.define(eq=False, repr=False)
class FreezingStore(MemoryStore):
    """The memory store, which stops answering writes once frozen: they wait until cancelled.

    ``stuck`` is set once a write waits on it. A write nobody cancels goes on
    after :data:`FROZEN_FOR` seconds (of the test's clock), so a test whose
    bound fails ends with a failed assertion, not a hang.
    """

    frozen: bool = False
    stuck: trio.Event = attrs.field(factory=trio.Event)

    async def wait_if_frozen(self) -> None:
        if self.frozen:
            self.stuck.set()
            await trio.sleep(FROZEN_FOR)

    async def compare_and_set(
        self,
        scope: str,
        task: Task,
        expected_revision: int,
        *,
        fence: int | None = None,
        events: LogAppend | None = None,
    ) -> None:
        await self.wait_if_frozen()
        await super().compare_and_set(scope, task, expected_revision, fence=fence, events=events)

    async def release(self, owner: str) -> None:
        await self.wait_if_frozen()
        await super().release(owner)


async def test_shutdown_ends_at_once_even_when_the_store_does_not_answer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (docs/tasks.md, shutdown within ``--shutdown-grace`` plus one
    second): with the store no longer answering, a worker's shielded write (the
    withdrawal of the requests its tool stopped waiting for) ends with the worker's
    stop, and the release of the leases is bounded, so the runner stops within
    ``RELEASE_WITHIN`` of the shutdown, not after the write's own grace."""
    store = FreezingStore()
    runner = TaskRunner(store, TRIO_CLOCK)

    async def job(ctx: WorkerContext) -> Any:
        with trio.move_on_after(1):
            await ctx.ask({"k": ASK})
        return RESULT

    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task = await runner.start("s", job, creator())
        await wait_all_tasks_blocked()
        assert (await runner.get("s", task.task_id)).status is Status.INPUT_REQUIRED
        store.frozen = True
        await store.stuck.wait()  # the tool gave up; its withdrawal waits on the store
        shutdown = trio.current_time()
        nursery.cancel_scope.cancel()
    assert trio.current_time() - shutdown <= RELEASE_WITHIN
    assert (await runner.get("s", task.task_id)).status is Status.INPUT_REQUIRED
