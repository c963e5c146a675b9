"""Keeping this process's workers in line with the store: the watch, resync, leases, recovery.

The store is the truth; what this process holds (its workers, their
Events and cancel scopes) is its view. :class:`Housekeeping` keeps the view
true, in loops that run beside the workers for the runner's life:

- **The store watch** (:meth:`Housekeeping.watch`). Every announced change,
  made here or by another process, goes through the pure table of
  :mod:`~presa_trio.tasks.reactions` and comes out as actions on the worker
  (stop it, adopt a lease, wake keys), then is published (``on_change``:
  ``notifications/tasks``).
- **Resync** (:meth:`Housekeeping.resync`). After announcements may have
  been lost (the store announced :data:`~presa_trio.tasks.stores.base.RESYNC`,
  or the watch started again), every task this process runs is read again
  and reacted to.
- **The reaper** (every ``reap_every`` s), **lease renewal** (every third of
  a lease) and **recovery** (every half lease: expired leases are claimed,
  and their tasks run again or are written ``failed``).

Failure policy: every loop, resync included, runs under :func:`keep_running`,
and nothing else starts one. A failure of any kind (the store unavailable,
refusing, a defect, an exception no store classified, a bug) ends that run
of the loop only: it is logged (one line for an unavailable store, the
traceback for anything else) and the loop starts again after the one
:class:`~presa_trio.tasks.backoff.Backoff`. A loop never ends the runner;
only a watch that cannot start the very first time does (the runner cannot
run without announcements).

Spec: SEP-2663 §Task Cancellation (a cancel made in any process stops the
worker), §Task Polling ``ttlMs``; the store's rules 4 and 6
(:mod:`presa_trio.tasks.stores.base`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from typing import Protocol, TypeVar

import attrs
import trio

from presa_trio.server.context import RequestContext
from presa_trio.server.faults import report_fault
from presa_trio.tasks.backoff import CAP, FIRST, Backoff
from presa_trio.tasks.context import Job
from presa_trio.tasks.model import Task
from presa_trio.tasks.reactions import REACTIONS, STOP_REASONS, Action, seen
from presa_trio.tasks.stores.base import (
    RESYNC,
    Changed,
    Deleted,
    StoredTask,
    StoreEvent,
    StoreUnavailable,
    Work,
)
from presa_trio.tasks.supervisor import Supervisor
from presa_trio.tasks.worker import Worker, failure
from presa_trio.tasks.writes import StoreWriter
from presa_trio.wire.errors import InternalError

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Told of every stored change: the access scope and the task as it now is.
ChangeListener = Callable[[str, Task], None]

#: How a stored work description runs again: its job and the creating
#: request's context rebuilt, or None if this server cannot run it.
Revive = Callable[[Work], "tuple[Job, RequestContext] | None"]

#: What a task that may not run again ends with, when its process stopped.
INTERRUPTED = InternalError(
    "Task interrupted: the server running it stopped, and the tool may not run again",
    {"retryable": False},
)

#: Most expired leases claimed in one go.
CLAIM_BATCH = 100


class Loop(Protocol):
    """A housekeeping loop: started with ``nursery.start``, it runs until cancelled."""

    def __call__(self, *, task_status: trio.TaskStatus[None]) -> Awaitable[None]: ...


def ignore_change(scope: str, task: Task) -> None:
    """The default listener: nobody subscribes."""


def cannot_revive(work: Work) -> tuple[Job, RequestContext] | None:
    """The default: a runner on its own knows no tools."""
    return None


async def keep_running(
    name: str,
    loop: Loop,
    cap: float = CAP,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run ``loop`` for the runner's life: a failure is logged, and it starts again.

    Started with ``nursery.start`` once the loop's first run has started:
    a loop that cannot start the first time raises, and so ends the runner.
    After that nothing it raises ends anything but that run: an unavailable
    store is logged as a warning, anything else with its traceback, and the
    loop starts again after the back-off (which starts afresh after a run
    that lasted as long as the back-off's cap, ``cap`` seconds). Cancellation,
    and what is not an ``Exception``, go through.
    """
    backoff = Backoff(first=min(FIRST, cap), cap=cap)
    first_start: trio.TaskStatus[None] | None = task_status
    while True:
        began = trio.current_time()
        failed: ExceptionGroup[Exception] | None = None
        try:
            async with trio.open_nursery() as running:
                await running.start(loop)
                if first_start is not None:
                    first_start.started()
                    first_start = None
        except ExceptionGroup as group:  # the nursery's group: the loop's exception
            if first_start is not None:
                raise
            failed = group
        if trio.current_time() - began >= backoff.cap:
            backoff.reset()  # it ran a good while: the next wait starts afresh
        delay = backoff.delay()
        if failed is None:
            log.warning("%s ended; it starts again in %.1f s", name, delay)
        elif failed.split(StoreUnavailable)[1] is None:  # nothing but an unavailable store
            log.warning("%s: %s; it starts again in %.1f s", name, one_line(failed), delay)
        else:
            log.error("%s failed; it starts again in %.1f s", name, delay, exc_info=failed)
        await trio.sleep(delay)


def one_line(group: BaseExceptionGroup[BaseException]) -> str:
    """The messages of the exceptions in ``group``, however nested, on one line."""
    return "; ".join(
        one_line(error) if isinstance(error, BaseExceptionGroup) else str(error)
        for error in group.exceptions
    )


@attrs.define(eq=False, repr=False)
class Housekeeping:
    """The loops that keep this process's view of the store true; see the module docstring."""

    writer: StoreWriter
    supervisor: Supervisor
    # This process run's name on the leases it holds.
    owner: str
    # How long a lease lasts unless renewed, in ms (``--task-lease``).
    lease_ms: int
    # How often the reaper deletes expired tasks, in seconds.
    reap_every: float
    # Told of every stored change (status notifications); synchronous.
    on_change: ChangeListener = ignore_change
    # Rebuilds a recovered task's job from its work description.
    revive: Revive = cannot_revive
    # Set when announcements may have been lost; cleared when a resync begins.
    _resync_wanted: trio.Event = attrs.field(factory=trio.Event)
    # How many times the reaper, renewal or recovery met the store
    # unavailable, and that count as recovery's last claim began
    # (:meth:`recover`: lapsed leases wait a round after an outage).
    _outages: int = 0
    _outages_at_claim: int = 0

    def loops(self) -> Iterator[tuple[str, Loop, float]]:
        """Every loop the runner keeps running, the store watch first: its name, the loop,
        and the most its keeper waits before starting it again after a failure.

        Renewal waits at most its own period, a third of a lease, so once the
        store answers again a live holder renews before a peer's recovery,
        which waits half a lease after an outage, claims (:meth:`recover`).
        """
        yield "the store watch", self.watch, CAP
        yield "resync", self.resync, CAP
        yield "the reaper", self.reap, CAP
        yield "lease renewal", self.renew, min(CAP, self.lease_ms / 3000)
        yield "recovery", self.recover, CAP
        events, store = self.writer.events, self.writer.store
        if events is not None:
            yield "the task event watch", partial(events.follow_appends, store), CAP
            retention = partial(events.prune, store, self.writer.clock.wall_ms)
            yield "task event retention", retention, CAP

    # --- what the store announces ------------------------------------------------------

    async def watch(self, *, task_status: trio.TaskStatus[None]) -> None:
        """React to every announced change, until cancelled; started once listening.

        Once listening, a resync is asked for: changes announced before
        (while a failed watch started again) reached nobody. The store's
        watch runs in this run's nursery: its failure ends this run, which
        the keeper starts again.
        """
        async with trio.open_nursery() as watching:
            await watching.start(self.writer.store.watch, self.react)
            task_status.started()
            self._resync_wanted.set()

    def react(self, event: StoreEvent, *, publish: bool = True) -> None:
        """Bring this process's view in line with one announced change, by the table.

        The change is published (``on_change``) only if the task itself
        moved: not a claim, which changes the lease alone (store rule 4),
        nor, with ``publish`` false, a resync's re-read of what the worker
        has seen already. A listen stream gets each change once.
        """
        if event is RESYNC:
            self._resync_wanted.set()
            return
        if isinstance(event, Changed):
            stored, task_id = event.stored, event.stored.task_id
            publish = publish and event.moved
        else:
            stored, task_id = None, event.task_id
        worker = self.supervisor.get(task_id)
        if worker is not None:
            situation = seen(stored, self.owner, worker.generation)
            for action in REACTIONS[situation]:
                if action is Action.STOP:
                    worker.stop(STOP_REASONS[situation])
                elif action is Action.ADOPT:
                    # This process claimed its own lapsed lease (it was too slow
                    # to renew): the worker runs on under the new generation;
                    # one stopped runs nothing more, and keeps the old one, so
                    # whatever it still writes as it unwinds is fenced off.
                    assert stored is not None
                    assert stored.lease is not None
                    if not worker.stopped():
                        worker.generation = stored.lease.generation
                else:
                    assert stored is not None
                    worker.see(stored.task)
        if stored is None:
            if self.writer.events is not None:
                # Nothing more will be appended to a deleted task's log: its
                # streams read once more, find the task gone and end.
                self.writer.events.wake(task_id)
        elif publish:
            self.on_change(stored.scope, stored.task)

    async def resync(self, *, task_status: trio.TaskStatus[None]) -> None:
        """Each time announcements may have been lost, re-read every task this process runs.

        The wish is cleared as a resync begins, so one asked for meanwhile
        runs after it; a resync that fails asks again before it ends, so the
        loop's next run (after the back-off) does it again: a worker parked
        on a lost signal must not stay parked. A task is published again
        only if it moved past what its worker has seen: what the worker saw
        was announced, and so published, already; a listen stream gets each
        change once.
        """
        task_status.started()
        while True:
            await self._resync_wanted.wait()
            self._resync_wanted = trio.Event()
            try:
                for task_id in self.supervisor.held():
                    found = await self.writer.store.read(task_id)
                    if found is None:
                        self.react(Deleted("", task_id))
                    else:
                        self.react(Changed(found), publish=self.unseen(found))
            except BaseException:
                self._resync_wanted.set()
                raise

    def unseen(self, stored: StoredTask) -> bool:
        """Whether ``stored`` is newer than what its worker here has seen (or wrote)."""
        worker = self.supervisor.get(stored.task_id)
        return worker is not None and stored.task.revision > worker.latest.revision

    # --- leases and expiry ----------------------------------------------------------

    async def reap(self, *, task_status: trio.TaskStatus[None]) -> None:
        """Every ``reap_every`` seconds, delete expired tasks (their workers stop).

        presa chooses: an expired running task is forgotten, never rewritten
        to ``failed``; a terminal one is never rewritten at all (spec-notes §18).
        """
        task_status.started()
        while True:
            await trio.sleep(self.reap_every)
            await self.noting_outage(self.writer.store.expire(self.writer.clock.wall_ms()))

    async def renew(self, *, task_status: trio.TaskStatus[None]) -> None:
        """Every third of a lease, extend the leases of this process's workers.

        It renews first and then sleeps, so a renewal that failed is tried
        again right after the keeper's back-off, long before the lease lapses.
        """
        task_status.started()
        while True:
            await self.renew_held()
            await trio.sleep(self.lease_ms / 3000)

    async def renew_held(self) -> None:
        """Extend the leases of this process's workers; stop each whose lease another took."""
        held = self.supervisor.held()
        if held:
            now = self.writer.clock.wall_ms()
            renewal = self.writer.store.renew(self.owner, held, now + self.lease_ms, now)
            lost = await self.noting_outage(renewal)
            for task_id in lost:
                worker = self.supervisor.get(task_id)
                if worker is not None and worker.generation == held[task_id]:
                    worker.stop("lease lost")

    async def recover(self, *, task_status: trio.TaskStatus[None]) -> None:
        """On start and every half lease, claim and resume tasks whose lease expired.

        Once a loop here met the store unavailable, the next round claims only
        the leases let go at a shutdown; leases that lapsed wait for the round
        after, half a lease later. A store that was away for longer than a
        lease let every lease lapse, its holders' alive too: they could not
        renew. Their renewal tries again at least every third of a lease
        (:meth:`loops`), so by then each live holder has renewed, and only
        the leases of holders that are gone are claimed.

        Each round renews this process's own leases first
        (:meth:`renew_held`), so a holder that was merely slow (paused past
        its lease, its renewals held up) keeps its tasks instead of claiming
        them from itself: such a claim bumps the generation under a write
        its worker has on its way, which then meets ``LeaseLost`` and stops
        the worker, and the task runs again from the top, or, if its tool
        may not, is written ``failed`` as interrupted.
        """
        task_status.started()
        while True:
            outages = self._outages
            returning = outages != self._outages_at_claim
            await self.renew_held()
            now = self.writer.clock.wall_ms()
            claim = self.writer.store.claim_expired(
                self.owner, now, now + self.lease_ms, CLAIM_BATCH, released_only=returning
            )
            claimed = await self.noting_outage(claim)
            self._outages_at_claim = outages
            for stored in claimed:
                await self.resume(stored)
            if returning or len(claimed) < CLAIM_BATCH:
                await trio.sleep(self.lease_ms / 2000)

    async def noting_outage(self, call: Awaitable[T]) -> T:
        """Await a store call of a loop, counting it if it finds the store unavailable."""
        try:
            return await call
        except StoreUnavailable:
            self._outages += 1
            raise

    async def resume(self, stored: StoredTask) -> None:
        """Run a claimed task again from its work description, or fail it if it may not.

        Work this server cannot rebuild into a job (rebuilding it raises) may
        not run here either: its task is failed as interrupted, the traceback
        logged under an incident, and the round goes on to the next task.
        """
        assert stored.lease is not None
        own = self.supervisor.get(stored.task_id)
        if own is not None and not own.stopped():
            # This process's own worker, too slow to renew: it runs on under
            # the new generation (as the table's ADOPT), adopted here at once
            # so a renewal of the old generation cannot stop it meanwhile.
            own.generation = max(own.generation, stored.lease.generation)
            return
        # A worker stopped here (its lease was taken, by a peer since gone) may
        # still be unwinding: it runs nothing more, so the task runs again now,
        # its new worker taking the old one's place in the table.
        worker = Worker(stored.task_id, stored.scope, stored.lease.generation, stored.task, True)
        revived = None
        if stored.work is not None and stored.work.rerun:
            try:
                revived = self.revive(stored.work)
            except Exception:  # this server's code cannot rebuild it: it may not run here
                report_fault(log, "task %s: its job cannot be rebuilt", stored.task_id)
        if revived is None:
            log.info("task %s cannot run again: written failed", stored.task_id)
            await self.writer.write(worker, failure(INTERRUPTED))
            return
        log.info("task %s recovered", stored.task_id)
        job, creator = revived
        self.supervisor.add(worker)
        self.supervisor.launch(worker, job, creator)

    async def release(self, within: float) -> None:
        """Let go of this process's leases, so the next process claims its tasks at once.

        Made as the runner stops, so shielded from its cancellation, and
        bounded by ``within`` seconds: a store that does not answer never
        holds a shutdown back longer. A failure is logged: the leases then
        lapse by themselves.
        """
        with trio.move_on_after(within, shield=True) as bounded:
            try:
                await self.writer.store.release(self.owner)
            except Exception as error:
                log.warning("leases not released at shutdown: %s", error)
        if bounded.cancelled_caught:
            log.warning("leases not released at shutdown: no answer within %.1f s", within)
