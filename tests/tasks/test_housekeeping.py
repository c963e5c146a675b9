"""The housekeeping loops: one keeper keeps each running, resync included.

Rules of this file: time moves only through ``autojump_clock``; every wait
is an Event or ``wait_all_tasks_blocked()``. Each test shows one line of the
loops' failure policy (:mod:`presa_trio.tasks.housekeeping`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any, cast

import attrs
import pytest
import trio
import trio.testing
from trio.testing import wait_all_tasks_blocked

from presa_trio.tasks import TaskRunner, model
from presa_trio.tasks.context import WorkerContext
from presa_trio.tasks.housekeeping import keep_running
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import (
    RESYNC,
    Deliver,
    StoreDefect,
    StoredTask,
    StoreRefused,
    StoreUnavailable,
    TaskStore,
    Work,
)
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.wire.mrtr import ListRoots
from presa_trio.wire.tasks import Status
from tests.tasks.helpers import TRIO_CLOCK, creator, gated

#: Each class of store error, and an exception no store classified.
FAILURES: list[Callable[[str], Exception]] = [
    StoreUnavailable,
    StoreRefused,
    StoreDefect,
    RuntimeError,
]


async def restart_gaps(name: str, failure: Callable[[str], Exception], *cap: float) -> list[float]:
    """The waits between the starts of a loop that raises a ``failure`` three times, kept
    by :func:`keep_running` (with ``cap``, if given) for ten seconds."""
    runs: list[float] = []

    async def loop(*, task_status: trio.TaskStatus[None]) -> None:
        task_status.started()
        runs.append(trio.current_time())
        if len(runs) < 4:
            raise failure(f"test: {name} failed")
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        await nursery.start(keep_running, name, loop, *cap)
        await trio.sleep(10)
        nursery.cancel_scope.cancel()
    return [round(later - earlier, 3) for earlier, later in itertools.pairwise(runs)]


@pytest.mark.parametrize("failure", FAILURES, ids=lambda f: f.__name__)
async def test_a_loop_that_fails_is_logged_and_started_again(
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
    failure: Callable[[str], Exception],
) -> None:
    """presa-defined (the failure policy: a housekeeping loop that fails is logged
    and started again, backing off): whatever a started loop raises ends only that
    run; the keeper itself never raises it. An unavailable store is a warning in one
    line, anything else an error with its traceback."""
    gaps = await restart_gaps("a test loop", failure)
    assert gaps == [0.1, 0.2, 0.4]
    logged = [
        (r.levelname, r.exc_info is not None, r.getMessage().rpartition("; ")[2])
        for r in caplog.records
        if r.getMessage().startswith("a test loop")
    ]
    level, traceback = ("WARNING", False) if failure is StoreUnavailable else ("ERROR", True)
    assert logged == [
        (level, traceback, f"it starts again in {gap} s") for gap in ("0.1", "0.2", "0.4")
    ]


async def test_a_loop_whose_cap_is_short_never_waits_longer(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (docs/task-stores.md, "An outage longer than the lease"): lease
    renewal's keeper is capped at its period, a third of a lease; with a lease of
    0.15 s the first wait after a failure is 0.05 s too, not the usual 0.1 s."""
    gaps = await restart_gaps("lease renewal", StoreUnavailable, 0.05)
    assert gaps == [0.05, 0.05, 0.05]


async def test_a_loop_that_cannot_start_the_first_time_raises() -> None:
    """presa-defined (the runner cannot run without its store watch): a failure
    before the loop's first start is the keeper's own failure."""

    async def loop(*, task_status: trio.TaskStatus[None]) -> None:
        raise StoreUnavailable("test: no watch today")

    with pytest.RaisesGroup(StoreUnavailable, flatten_subgroups=True):
        async with trio.open_nursery() as nursery:
            await nursery.start(keep_running, "a test loop", loop)


@attrs.define(eq=False, repr=False)
class FailingReadStore(MemoryStore):
    """The memory store, whose next ``read`` raises ``failure``; it counts the reads.

    ``deliver`` is the runner's watch, to announce RESYNC to.
    """

    failure: Exception | None = None
    deliver: Deliver | None = None
    reads: int = 0
    read_again: trio.Event = attrs.field(factory=trio.Event)

    async def watch(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        self.deliver = deliver
        await super().watch(deliver, task_status=task_status)

    async def read(self, task_id: str) -> StoredTask | None:
        self.reads += 1
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        if self.reads > 1:
            self.read_again.set()
        return await super().read(task_id)


@pytest.mark.parametrize("failure", FAILURES, ids=lambda f: f.__name__)
async def test_a_resync_that_fails_is_tried_again_and_the_runner_runs_on(
    autojump_clock: trio.testing.MockClock, failure: Callable[[str], Exception]
) -> None:
    """presa-defined (the failure policy: resync runs under the same keeper as every
    loop): a store that announces RESYNC and then fails the re-read, in any way,
    ends nothing; the resync is tried again, and the running task runs on to its
    result."""
    store = FailingReadStore()
    runner = TaskRunner(store, TRIO_CLOCK)
    release = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task = await runner.start("s", gated(release, []), creator())
        await wait_all_tasks_blocked()
        store.reads = 0
        store.failure = failure("test: the re-read failed")
        assert store.deliver is not None
        store.deliver(RESYNC)
        await store.read_again.wait()
        release.set()
        await wait_all_tasks_blocked()
        assert (await runner.get("s", task.task_id)).status is Status.COMPLETED
        nursery.cancel_scope.cancel()
    assert store.reads == 2


@attrs.define(eq=False, repr=False)
class OutageStore(MemoryStore):
    """The memory store, every call of which is unavailable while ``down``; it counts them."""

    down: bool = False
    refused: int = 0

    def check(self) -> None:
        if self.down:
            self.refused += 1
            raise StoreUnavailable("test: the database is restarting")

    async def get(self, scope: str, task_id: str, now_ms: int) -> StoredTask:
        self.check()
        return await super().get(scope, task_id, now_ms)

    async def read(self, task_id: str) -> StoredTask | None:
        self.check()
        return await super().read(task_id)

    async def compare_and_set(
        self, scope: str, task: Task, expected_revision: int, **kw: Any
    ) -> None:
        self.check()
        await super().compare_and_set(scope, task, expected_revision, **kw)

    async def renew(
        self, owner: str, held: Mapping[str, int], expires_ms: int, now_ms: int
    ) -> set[str]:
        self.check()
        return await super().renew(owner, held, expires_ms, now_ms)

    async def claim_expired(
        self, owner: str, now_ms: int, expires_ms: int, limit: int, *, released_only: bool = False
    ) -> list[StoredTask]:
        self.check()
        return await super().claim_expired(
            owner, now_ms, expires_ms, limit, released_only=released_only
        )

    async def expire(self, now_ms: int) -> list[str]:
        self.check()
        return await super().expire(now_ms)


async def test_a_store_outage_ends_neither_the_runner_nor_a_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (the failure policy: the store unavailable ends nothing, it is
    waited for): while every call fails, each loop (reaper, lease renewal, recovery)
    meets the outage and starts again, and a worker whose job ends meanwhile waits
    to write; once the store answers, its task completes, a task parked on input
    takes its answer, and the runner starts new tasks."""
    store = OutageStore()
    runner = TaskRunner(store, TRIO_CLOCK, lease_ms=3000, reap_every=1.0)
    release = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        finishing = await runner.start("s", gated(release, []), creator())
        parked = await runner.start("s", asking_roots, creator({"roots": {}}))
        await wait_all_tasks_blocked()
        assert (await runner.get("s", parked.task_id)).status is Status.INPUT_REQUIRED
        store.down = True
        release.set()
        await trio.sleep(30)  # ten lease renewals, thirty reaps, twenty recoveries
        assert store.refused > 30
        store.down = False
        await trio.sleep(6)  # past the longest back-off
        assert (await runner.get("s", finishing.task_id)).status is Status.COMPLETED
        await runner.update("s", parked.task_id, {"roots": {"roots": []}})
        await wait_all_tasks_blocked()
        assert (await runner.get("s", parked.task_id)).status is Status.COMPLETED
        assert await runner.unready() is None
        fresh = await runner.start("s", gated(release, []), creator())
        await wait_all_tasks_blocked()
        assert (await runner.get("s", fresh.task_id)).status is Status.COMPLETED
        nursery.cancel_scope.cancel()


async def asking_roots(ctx: WorkerContext) -> Any:
    answers = await ctx.ask({"roots": ListRoots()})
    return {"content": [], "roots": answers.raw("roots")}


async def test_a_resync_publishes_what_was_missed_and_nothing_twice(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (listen streams get each change once: a resync is for lost
    announcements; SEP-2663 §Task Status Notifications): once RESYNC is announced
    (PostgreSQL's, after its LISTEN connection came back), a task this process runs
    is published again only if it changed unannounced; one it already published is
    not sent to the listen streams a second time."""
    store = FailingReadStore()
    runner = TaskRunner(store, TRIO_CLOCK)
    published: list[tuple[str | None, int]] = []
    runner.on_change = lambda scope, task: published.append((task.message, task.revision))
    release = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task = await runner.start("s", gated(release, []), creator())
        await wait_all_tasks_blocked()
        assert published == [(None, 0)]
        assert store.deliver is not None
        store.deliver(RESYNC)
        await wait_all_tasks_blocked()
        assert published == [(None, 0)]
        stored = store.entries[task.task_id]  # changed as by a write whose announcement was lost
        store.entries[task.task_id] = attrs.evolve(
            stored, task=model.report(stored.task, "unannounced", 1)
        )
        store.deliver(RESYNC)
        await wait_all_tasks_blocked()
        assert published == [(None, 0), ("unannounced", 1)]
        release.set()
        nursery.cancel_scope.cancel()


@attrs.define(eq=False)
class Outage:
    """A store every process fails to reach while ``down``; it ends once ``first``
    asks to claim, so that process is the first the store answers again."""

    down: bool = False
    first: str | None = None
    over: trio.Event = attrs.field(factory=trio.Event)

    def meet(self, who: str, method: str) -> None:
        if self.down and (who, method) == (self.first, "claim_expired"):
            self.down = False
            self.over.set()
        if self.down:
            raise StoreUnavailable("test: the database is down")


@attrs.define(eq=False)
class Reach:
    """One process's way to a store shared by several: through ``outage``."""

    store: MemoryStore
    outage: Outage
    who: str

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.store, name)
        if name == "watch":
            return method

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.outage.meet(self.who, name)
            return await method(*args, **kwargs)

        return call


async def test_after_an_outage_longer_than_the_lease_the_live_holder_keeps_its_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (docs/task-stores.md, "An outage longer than the lease"): the store
    is away for three leases, so the holder, alive, cannot renew and its lease
    lapses; the store answers the peer's recovery first, yet the peer claims
    nothing: the holder renews first, its worker runs on and completes the task."""
    shared, outage = MemoryStore(), Outage()
    holder = TaskRunner(cast(TaskStore, Reach(shared, outage, "holder")), TRIO_CLOCK, lease_ms=1000)
    peer = TaskRunner(cast(TaskStore, Reach(shared, outage, "peer")), TRIO_CLOCK, lease_ms=1000)
    record: list[str] = []
    release = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(holder.run)
        await nursery.start(peer.run)
        task = await holder.start("s", gated(release, record), creator())
        await wait_all_tasks_blocked()
        outage.down = True
        await trio.sleep(3)  # three leases: the holder's lapses unrenewed
        stored = await shared.read(task.task_id)
        assert stored is not None
        assert stored.lease is not None
        assert stored.lease.expires_ms < TRIO_CLOCK.wall_ms()
        outage.first = "peer"
        await outage.over.wait()
        await trio.sleep(2)  # four rounds of the peer's recovery
        release.set()
        await wait_all_tasks_blocked()
        assert record == []
        assert (await holder.get("s", task.task_id)).status is Status.COMPLETED
        nursery.cancel_scope.cancel()


async def test_a_new_task_is_held_for_a_whole_lease_from_its_creation(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (docs/task-stores.md; the store's rule 4): a task is stored
    with its creator's lease, a whole lease long, so a peer whose recovery runs
    right after the creation claims nothing; the task runs once, on its creator."""
    shared = MemoryStore()
    holder = TaskRunner(shared, TRIO_CLOCK, lease_ms=1000)
    peer = TaskRunner(shared, TRIO_CLOCK, lease_ms=1000)
    record: list[str] = []
    release = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(holder.run)
        task = await holder.start("s", gated(release, record), creator())
        await nursery.start(peer.run)  # its first recovery round, at once
        await wait_all_tasks_blocked()
        release.set()
        await wait_all_tasks_blocked()
        assert record == []
        assert (await holder.get("s", task.task_id)).status is Status.COMPLETED
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("claimer", ["peer", "self"])
async def test_a_claim_moves_only_the_lease_and_publishes_nothing(
    autojump_clock: trio.testing.MockClock, claimer: str
) -> None:
    """presa-defined (listen streams get each change once; SEP-2663 §Task Status
    Notifications; the store's rule 4, a lease never moves the revision): a claim of
    a task this process runs, by a peer that recovers it or by this process itself
    after its lease lapsed, is acted on (the worker stops, or runs on under the new
    generation) but not published: the task did not change, so a listen stream would
    get the notification it already had. What the worker writes next is published."""
    store = MemoryStore()
    runner = TaskRunner(store, TRIO_CLOCK)
    published: list[tuple[Status, int]] = []
    runner.on_change = lambda scope, task: published.append((task.status, task.revision))
    release = trio.Event()
    record: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task = await runner.start("s", gated(release, record), creator())
        await wait_all_tasks_blocked()
        assert published == [(Status.WORKING, 0)]
        owner = runner.owner if claimer == "self" else claimer
        far = TRIO_CLOCK.wall_ms() + 10 * runner.lease_ms  # every lease has lapsed
        [claimed] = await store.claim_expired(owner, far, far + runner.lease_ms, 10)
        assert claimed.lease is not None
        assert claimed.lease.generation == 2
        await wait_all_tasks_blocked()
        assert published == [(Status.WORKING, 0)]
        assert record == ([] if claimer == "self" else ["cancelled"])  # stopped, or runs on
        release.set()
        await wait_all_tasks_blocked()
        finished = (await runner.get("s", task.task_id)).status
        if claimer == "self":
            assert finished is Status.COMPLETED
            assert published == [(Status.WORKING, 0), (Status.COMPLETED, 1)]
        else:
            assert finished is Status.WORKING  # the peer's to run now
            assert published == [(Status.WORKING, 0)]
        nursery.cancel_scope.cancel()


@attrs.define(eq=False)
class Sluggish:
    """One process's way to a store while it is merely slow: its lease renewals, and
    the write its worker has on its way, wait until let through (a pause, say)."""

    store: MemoryStore
    renewals: trio.Event = attrs.field(factory=trio.Event)
    write: trio.Event = attrs.field(factory=trio.Event)
    # The status message of the write held up.
    held_message: str = "halfway"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def renew(self, *args: Any) -> set[str]:
        await self.renewals.wait()
        return await self.store.renew(*args)

    async def compare_and_set(self, scope: str, task: Task, *args: Any, **kwargs: Any) -> None:
        if task.message == self.held_message:
            await self.write.wait()
        await self.store.compare_and_set(scope, task, *args, **kwargs)


async def test_a_holder_slower_than_its_lease_keeps_its_task_rather_than_claiming_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (leases: a task is run again only when its holder is gone;
    docs/task-stores.md, "Recovery"): a lone process, merely slow, lets its lease lapse
    (its renewals held up) while a write of its worker is on its way. Its own recovery
    claims nothing from it: the write goes through under the lease it was made with,
    and the task completes from its one run, instead of the worker meeting a lease
    its own process bumped, stopping, and the task being written failed as
    interrupted (its job cannot run again)."""
    slow = Sluggish(MemoryStore())
    runner = TaskRunner(cast(TaskStore, slow), TRIO_CLOCK, lease_ms=1000)
    runs: list[int] = []

    async def job(ctx: WorkerContext) -> Any:
        runs.append(1)
        await ctx.set_status_message(slow.held_message)
        return {"content": []}

    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task = await runner.start("s", job, creator())
        await trio.sleep(5)  # five leases: the lease lapses, recovery comes round ten times
        slow.write.set()
        await wait_all_tasks_blocked()
        slow.renewals.set()
        await trio.sleep(5)
        finished = await runner.get("s", task.task_id)
        assert (finished.status, finished.error, runs) == (Status.COMPLETED, None, [1])
        nursery.cancel_scope.cancel()


async def test_a_write_on_its_way_when_its_process_claims_the_task_back_goes_through(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (leases: the worker runs on under a lease its own process claimed
    back, the reactions' LEASE_RECLAIMED): while a write of the worker is on its way,
    its process claims the task's lapsed lease itself and the worker adopts it. The
    write, made under the old generation, meets a lease lost to its own process: it
    is tried again under the adopted one, and the task completes from its one run,
    instead of the worker stopping, its task left for recovery to run again (or write
    failed as interrupted) once the adopted lease lapses."""
    slow = Sluggish(MemoryStore())
    slow.renewals.set()
    runner = TaskRunner(cast(TaskStore, slow), TRIO_CLOCK, lease_ms=1000)
    runs: list[int] = []

    async def job(ctx: WorkerContext) -> Any:
        runs.append(1)
        await ctx.set_status_message(slow.held_message)
        return {"content": []}

    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task = await runner.start("s", job, creator())
        await wait_all_tasks_blocked()  # the status message waits on its way
        far = TRIO_CLOCK.wall_ms() + 10 * runner.lease_ms  # every lease has lapsed
        [claimed] = await slow.store.claim_expired(runner.owner, far, far + runner.lease_ms, 10)
        assert claimed.lease is not None
        assert claimed.lease.generation == 2
        slow.write.set()
        await trio.sleep(5)
        finished = await runner.get("s", task.task_id)
        assert (finished.status, finished.error, runs) == (Status.COMPLETED, None, [1])
        nursery.cancel_scope.cancel()


async def test_a_renewal_on_its_way_as_its_process_claims_the_task_back_stops_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (leases: the worker runs on under a lease its own process claimed
    back, the reactions' LEASE_RECLAIMED): a renewal of the old generation is on its
    way when this process claims its task's lapsed lease itself and the worker adopts
    the new one. The store answers the renewal that the old generation is lost: that
    is no loss of the worker's, which runs on, and the task completes from its one run."""
    slow = Sluggish(MemoryStore())
    runner = TaskRunner(cast(TaskStore, slow), TRIO_CLOCK, lease_ms=1000)
    record: list[str] = []
    release = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task = await runner.start("s", gated(release, record), creator())
        await trio.sleep(1)  # a renewal of generation 1 waits on its way
        far = TRIO_CLOCK.wall_ms() + 10 * runner.lease_ms  # every lease has lapsed
        [claimed] = await slow.store.claim_expired(runner.owner, far, far + runner.lease_ms, 10)
        assert claimed.lease is not None
        assert claimed.lease.generation == 2
        slow.renewals.set()
        await wait_all_tasks_blocked()
        release.set()
        await wait_all_tasks_blocked()
        finished = await runner.get("s", task.task_id)
        assert (finished.status, record) == (Status.COMPLETED, [])
        nursery.cancel_scope.cancel()


async def test_a_task_claimed_back_while_its_stopped_worker_unwinds_runs_again_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (recovery, at least once, and fencing; docs/task-stores.md,
    "Recovery"): a peer claims the task, so its worker here stops, but the worker's
    clean-up takes its time; the peer goes away, and this process's recovery claims
    the task back. The stopped worker runs nothing more, so the task runs again at
    once, while the old run still unwinds: the claim is not handed to the stopped
    worker (which would keep renewing a lease it never runs under), and what the old
    run writes as it unwinds is fenced off, however late."""
    store = MemoryStore()
    runner = TaskRunner(store, TRIO_CLOCK, lease_ms=1000)
    runs: list[str] = []
    unwound, finish, stale_written = trio.Event(), trio.Event(), trio.Event()

    async def job(ctx: WorkerContext) -> Any:
        runs.append("run")
        if len(runs) > 1:
            await finish.wait()
            return {"content": []}
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await unwound.wait()  # a slow clean-up, which writes as it ends
                await ctx.set_status_message("stale")
                stale_written.set()
        raise AssertionError("not reached")

    revived = (job, creator())
    runner.revive = lambda work: revived
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        work = Work("slow-clean-up", {}, "2026-07-28", {}, rerun=True)
        task = await runner.start("s", job, creator(), work)
        await wait_all_tasks_blocked()
        later = TRIO_CLOCK.wall_ms() + 5 * runner.lease_ms  # the holder's lease has lapsed
        [claimed] = await store.claim_expired("peer", later, later + runner.lease_ms, 10)
        assert claimed.lease is not None
        await trio.sleep(10)  # the peer's lease lapses too; recovery comes round
        rerun = list(runs)
        unwound.set()
        await stale_written.wait()
        while_second_runs = await runner.get("s", task.task_id)
        finish.set()
        await wait_all_tasks_blocked()
        finished = await runner.get("s", task.task_id)
        nursery.cancel_scope.cancel()
    assert rerun == ["run", "run"]
    assert while_second_runs.message != "stale"
    assert (finished.status, finished.message) == (Status.COMPLETED, None)
