"""Keeping this process's workers in line with the store: reactions, resync, leases, recovery.

The store is the truth; what this process holds (its workers, their
Events and cancel scopes) is its view. This module keeps the view true:

- **Reactions.** Every announced change, made here or by another process,
  goes through the pure table of :mod:`~presa_trio.tasks.reactions` and
  comes out as actions on the worker (stop it, adopt a lease, wake keys),
  then is published (``on_change``: ``notifications/tasks``).
- **Resync.** After announcements may have been lost (a reconnect), every
  task this process runs is read again and reacted to.
- **Background loops**, each kept running by :meth:`Coordination.keep_running`:
  the store watch, the reaper (every ``reap_every`` s), lease renewal
  (every third of a lease), and recovery (every half lease: expired
  leases are claimed, and their tasks run again or are written ``failed``).

Failure policy of the loops: a store that is unavailable is logged as a
warning and tried again at the loop's next turn; anything else a loop
raises (a refusal, a defect, a bug) is logged with its traceback and the
loop starts again after a back-off (0.1 s doubling to 5 s). A watch that
starts again first resyncs, since announcements were missed meanwhile.

Spec: SEP-2663 §Task Cancellation (a cancel made in any process stops the
worker), §Task Polling ``ttlMs``; the store's rules 4 and 6
(:mod:`presa_trio.tasks.stores.base`).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable

import attrs
import trio

from presa_trio.server.context import RequestContext
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
from presa_trio.tasks.worker import Job, Worker, failure
from presa_trio.tasks.writes import TaskWrites
from presa_trio.wire.errors import InternalError

log = logging.getLogger(__name__)

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
#: A background loop that failed starts again after this many seconds,
#: doubling up to the cap; a loop that ran for the cap or longer starts afresh.
RESTART_FIRST = 0.1
RESTART_CAP = 5.0


def ignore_change(scope: str, task: Task) -> None:
    """The default listener: nobody subscribes."""


def cannot_revive(work: Work) -> tuple[Job, RequestContext] | None:
    """The default: a runner on its own knows no tools."""
    return None


@attrs.define(eq=False, repr=False)
class Coordination(TaskWrites):
    """The runner's view of the store kept true; see the module docstring."""

    # How often the reaper deletes expired tasks, in seconds.
    reap_every: float = 60.0
    # How long a lease lasts unless renewed, in ms (``--task-lease``).
    lease_ms: int = 30_000
    # Told of every stored change (status notifications); synchronous.
    on_change: ChangeListener = ignore_change
    # Rebuilds a recovered task's job from its work description.
    revive: Revive = cannot_revive
    # This process run's name on the leases it holds.
    owner: str = attrs.field(factory=lambda: secrets.token_urlsafe(12))
    # task_id -> its worker, while the task's nursery is open.
    _workers: dict[str, Worker] = attrs.field(factory=dict)

    def launch(self, worker: Worker, job: Job, creator: RequestContext) -> None:
        """Start ``worker`` running ``job`` in a nursery of its own (the runner's part)."""
        raise NotImplementedError

    # --- what the store announces ------------------------------------------------------

    def react(self, event: StoreEvent) -> None:
        """Bring this process's view in line with one announced change, by the table."""
        if event is RESYNC:
            self.resync_soon()
            return
        if isinstance(event, Changed):
            stored, task_id = event.stored, event.stored.task_id
        else:
            stored, task_id = None, event.task_id
        worker = self._workers.get(task_id)
        if worker is not None:
            situation = seen(stored, self.owner, worker.generation)
            for action in REACTIONS[situation]:
                if action is Action.STOP:
                    worker.stop(STOP_REASONS[situation])
                elif action is Action.ADOPT:
                    # This process claimed its own lapsed lease (it was too slow
                    # to renew): the worker runs on under the new generation.
                    assert stored is not None
                    assert stored.lease is not None
                    worker.generation = stored.lease.generation
                else:
                    assert stored is not None
                    worker.see(stored.task)
        if stored is not None:
            self.on_change(stored.scope, stored.task)

    def resync_soon(self) -> None:
        """Start a resync in the background (the runner's part: it owns the nursery)."""
        raise NotImplementedError

    async def resync(self) -> None:
        """Announcements may have been lost: re-read every task this process runs.

        A task whose creation is still being stored is left out: read now, it
        would look deleted, and its creation announces it anyway. Tried again,
        backing off, while the store is unavailable: a worker parked on a lost
        signal must not stay parked.
        """
        delay = RESTART_FIRST
        while True:
            try:
                for task_id in [task_id for task_id, w in self._workers.items() if w.stored]:
                    found = await self.store.read(task_id)
                    self.react(Deleted("", task_id) if found is None else Changed(found))
            except StoreUnavailable as error:
                log.warning("resync waits for the store: %s", error)
                await trio.sleep(delay)
                delay = min(delay * 2, RESTART_CAP)
                continue
            return

    # --- the background loops ----------------------------------------------------------

    async def keep_running(self, name: str, loop: Callable[[], Awaitable[None]]) -> None:
        """Run ``loop`` for the runner's life: a failure is logged, and it starts again."""
        delay = RESTART_FIRST
        while True:
            began = trio.current_time()
            try:
                await loop()
            except Exception:
                if trio.current_time() - began >= RESTART_CAP:
                    delay = RESTART_FIRST
                log.exception("%s failed; it starts again in %.1f s", name, delay)
            await trio.sleep(delay)
            delay = min(delay * 2, RESTART_CAP)

    async def watch(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The store watch, started once listening; after a failure, again, then a resync.

        The first start is the runner's own: a store that cannot be watched
        at all means the runner cannot run, and that failure is raised.
        """
        started: trio.TaskStatus[None] | None = task_status
        delay = RESTART_FIRST
        while True:
            try:
                async with trio.open_nursery() as watching:
                    await watching.start(self.store.watch, self.react)
                    if started is not None:
                        started.started()
                        started = None
                    else:
                        watching.start_soon(self.resync)
            except Exception:
                if started is not None:
                    raise
                log.exception("the store watch failed; it starts again in %.1f s", delay)
            await trio.sleep(delay)
            delay = min(delay * 2, RESTART_CAP)

    async def reap(self) -> None:
        """Every ``reap_every`` seconds, delete expired tasks (their workers stop).

        presa chooses: an expired running task is forgotten, never rewritten
        to ``failed``; a terminal one is never rewritten at all (spec-notes §18).
        """
        while True:
            await trio.sleep(self.reap_every)
            try:
                await self.store.expire(self.clock.wall_ms())
            except StoreUnavailable as error:
                log.warning("expired tasks not deleted: %s", error)

    async def renew(self) -> None:
        """Every third of a lease, extend the leases of this process's workers."""
        while True:
            await trio.sleep(self.lease_ms / 3000)
            held = {
                task_id: worker.generation
                for task_id, worker in self._workers.items()
                if worker.stored
            }
            if not held:
                continue
            now = self.clock.wall_ms()
            try:
                lost = await self.store.renew(self.owner, held, now + self.lease_ms, now)
            except StoreUnavailable as error:
                log.warning("leases not renewed: %s", error)
                continue
            for task_id in lost:
                worker = self._workers.get(task_id)
                if worker is not None and worker.generation == held[task_id]:
                    worker.stop("lease lost")

    async def recover(self) -> None:
        """On start and every half lease, claim and resume tasks whose lease expired."""
        while True:
            now = self.clock.wall_ms()
            try:
                claimed = await self.store.claim_expired(
                    self.owner, now, now + self.lease_ms, CLAIM_BATCH
                )
            except StoreUnavailable as error:
                log.warning("expired leases not claimed: %s", error)
                claimed = []
            for stored in claimed:
                await self.resume(stored)
            if len(claimed) < CLAIM_BATCH:
                await trio.sleep(self.lease_ms / 2000)

    async def resume(self, stored: StoredTask) -> None:
        """Run a claimed task again from its work description, or fail it if it may not."""
        assert stored.lease is not None
        if stored.task_id in self._workers:
            return  # this process's own worker, adopted by react
        worker = Worker(stored.task_id, stored.scope, stored.lease.generation, stored.task, True)
        revived = None
        if stored.work is not None and stored.work.rerun:
            revived = self.revive(stored.work)
        if revived is None:
            log.info("task %s cannot run again: written failed", stored.task_id)
            await self.write(worker, failure(INTERRUPTED))
            return
        log.info("task %s recovered", stored.task_id)
        job, creator = revived
        self._workers[stored.task_id] = worker
        self.launch(worker, job, creator)
