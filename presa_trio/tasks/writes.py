"""Writing tasks to the store: compare-and-set retries, and a worker's writes under its lease.

Every change of a task is a pure move of :mod:`~presa_trio.tasks.model`
applied by compare-and-set (:meth:`StoreWriter.transition`). A worker's own
writes (:meth:`StoreWriter.write`: its input requests, status messages and
outcome) carry its lease generation, and meet the store's failures under
one policy, by the store's classification
(:class:`~presa_trio.tasks.stores.base.StoreError`):

================= ========================================================
the store says    the worker's write
================= ========================================================
unavailable       waits and tries again (:class:`~presa_trio.tasks.backoff.Backoff`);
                  a try may have committed unseen, so the next one does
                  not refuse its own write (:meth:`~presa_trio.tasks.worker.Move.retried`)
refused data      the task is ``failed``: "Could not store <what>: <why>"
a defect, or      the task is ``failed`` with -32603 and an incident id;
anything else     the traceback is logged under that id
lease lost        the worker stops, writing nothing; unless this process
                  claimed the task back meanwhile (its lease had lapsed) and
                  the worker adopted that lease: it tries again under it
task not found    the write is dropped (the task expired meanwhile)
the task ended    the move is absorbed (a terminal task never changes) and
                  the worker stops
================= ========================================================

Once such a failure is written the worker stops: its task is terminal. A
failure write that itself cannot be stored stops the worker too: the task
keeps its lease until it lapses, and recovery then claims it (run again,
or ``failed`` as interrupted).

With task event streams on (:attr:`StoreWriter.events`), every write
carries the task's life events into its compare-and-set, which appends
them in the same transaction
(:meth:`~presa_trio.tasks.event_log.TaskEventLog.of_write`), and a
worker's own events carry its lease generation, so the store refuses them
once the task is terminal or run by another generation. A tool's own
event (``ctx.emit``, :meth:`StoreWriter.emit`) is stored or the tool is
told, never dropped unseen:

================= ========================================================
the store says    the tool's emit
================= ========================================================
unavailable       waits and tries again, the same way, until the store
                  timeout has passed since it began; then
                  :class:`~presa_trio.server.context.EmitFailed`
                  (``maybe_stored``: its answer was lost, so it may be in the log)
refused data, a   :class:`~presa_trio.server.context.EmitFailed` at once;
defect, or        a defect's traceback is logged under an incident id
anything else
the task is       the emit returns: the task has ended (or another run
terminal, or the  holds it), its worker stops
lease is another's
================= ========================================================

The tool may catch ``EmitFailed``; if it lets it go, its task fails as for
any exception of the job.

Spec: SEP-2663 §Task Execution Errors, §Task Update Requests; SEP-2694.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import trio

from presa_trio.server.context import EmitFailed
from presa_trio.server.faults import report_fault
from presa_trio.tasks.backoff import Backoff
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.model import IllegalTransition, Task, epoch_ms
from presa_trio.tasks.stores.base import (
    Conflict,
    LeaseLost,
    StoreRefused,
    StoreUnavailable,
    TaskNotFound,
    TaskStore,
)
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.tasks.worker import Move, Worker, failure, reporting
from presa_trio.wire.errors import InternalError

log = logging.getLogger(__name__)

#: How long a write the worker must make while being cancelled may take (s).
WRITE_GRACE = 5.0


@attrs.frozen
class Clock:
    """Where the runner reads the time: wall-clock epoch milliseconds."""

    wall_ms: Callable[[], int] = epoch_ms


def ignore_status(task: Task) -> None:
    """The default: nobody counts the statuses written."""


#: Told of the tasks this process's workers hold (``--metrics``): ``"running"`` +1 as a
#: worker starts its task and -1 as it ends, however it ends; ``"parked"`` +1 as its
#: job starts waiting for answers (``ctx.ask``) and -1 as the wait ends.
LoadListener = Callable[[str, int], None]


def ignore_load(gauge: str, change: int) -> None:
    """The default: nobody counts the tasks running."""


def refused(what: str, error: StoreRefused) -> InternalError:
    """The error of a task whose write the store refused: what, and why (not retryable)."""
    return InternalError(f"Could not store {what}: {error}", {"retryable": False})


@attrs.define(eq=False, repr=False)
class StoreWriter:
    """Every write of a task: moves by compare-and-set, a worker's writes under its lease."""

    store: TaskStore = attrs.field(factory=MemoryStore)
    clock: Clock = Clock()
    # Task event streams (SEP-2694, ``--task-events``): every write also
    # appends the task's life events there; None: off.
    events: TaskEventLog | None = None
    # Told of each status this process wrote, once stored (``--metrics``); synchronous.
    on_status: Callable[[Task], None] = ignore_status
    # Told of the tasks running and parked in this process (``--metrics``); synchronous.
    on_load: LoadListener = ignore_load

    async def transition(
        self,
        scope: str,
        task_id: str,
        move: Callable[[Task, int], Task],
        fence: int | None = None,
        seen: Task | None = None,
    ) -> tuple[Task, Task]:
        """Apply ``move`` by compare-and-set; return the task before and after.

        A lost race re-reads and re-applies: the move is a pure function of
        the task, so retrying it is always safe. ``seen`` is the task as the
        caller last saw it (a worker's own view): a write is tried on it
        without reading first, and the compare-and-set tells whether it was
        still current. Only a change is trusted to a view; a move that
        changes nothing on it is tried again on the task as read.
        """
        before = seen
        while True:
            now = self.clock.wall_ms()
            read = before is None or before.expired(now)
            if read:
                before = (await self.store.get(scope, task_id, now)).task
            assert before is not None
            after = move(before, now)
            if after is before:
                if read:
                    return before, after
                before = None
                continue
            events = None if self.events is None else self.events.of_write(before, after, now)
            try:
                await self.store.compare_and_set(
                    scope, after, before.revision, fence=fence, events=events
                )
            except Conflict:
                before = None
                continue
            if after.status is not before.status:
                log.info("task %s %s", task_id, after.status.value)
                self.on_status(after)
            return before, after

    async def write(self, worker: Worker, move: Move) -> None:
        """A worker's own write, under its lease generation; the module's policy table.

        The write starts from the worker's own view of its task: a worker's
        writes mostly follow its own last one, so most take one store round
        trip (the compare-and-set) instead of two. What it wrote becomes its
        view at once, before the store's announcement of it comes back.
        An exception no store classified is met as a defect: a store that
        lets one escape has a bug, and the task that met it fails, not more.
        """
        backoff = Backoff()
        last_resort = False
        while True:
            generation = worker.generation
            try:
                before, after = await self.transition(
                    worker.scope, worker.task_id, move.apply, generation, worker.latest
                )
            except TaskNotFound:
                log.info("task %s is gone; its worker's write is dropped", worker.task_id)
            except LeaseLost:
                if worker.generation != generation:
                    continue  # adopted a lease this process claimed meanwhile: still its own
                log.info("task %s: lease lost; the worker stops without writing", worker.task_id)
                worker.stop("lease lost")
            except StoreUnavailable as error:
                log.warning("task %s: write waits for the store: %s", worker.task_id, error)
                # It may have committed, its answer lost: the next try must not refuse it.
                move = move.retried()
                await backoff.wait()
                continue
            except IllegalTransition:
                raise  # the job's own mistake (a key asked twice): its task fails as the job's
            except Exception as error:  # refused, a defect, or what no store classified
                if last_resort:
                    report_fault(log, "task %s: its failure cannot be stored", worker.task_id)
                    worker.stop("unstorable")
                    return
                last_resort = True
                if isinstance(error, StoreRefused):
                    log.warning(
                        "task %s: the store refused %s: %s", worker.task_id, move.what, error
                    )
                    move = failure(refused(move.what, error))
                else:
                    incident = report_fault(log, "task %s: writing %s", worker.task_id, move.what)
                    move = failure(incident)
                continue
            else:
                worker.see(after)
                if last_resort:
                    # The task is failed now: its job must not run on.
                    worker.stop("its write failed")
                elif before.terminal:
                    # Ended by another writer (tasks/cancel) whose announcement came
                    # before this worker existed (a recovery): nothing will wake it.
                    worker.stop("the task ended")
            return

    async def report(self, worker: Worker, message: str) -> None:
        """A worker's status message, written by :func:`~presa_trio.tasks.model.report`."""
        await self.write(worker, reporting(message))

    async def emit(self, worker: Worker, event_type: str, payload: Mapping[str, Any]) -> None:
        """A tool's event, appended to its task's log when task event streams are on.

        The module's second table: an unavailable store is waited for with
        the writes' own back-off, but only for the store timeout
        (:attr:`~presa_trio.tasks.event_log.TaskEventLog.emit_wait`) from the
        emit's start, since the tool is waiting; a try already under way is
        never cut short (its answer could be lost while the event commits),
        only the wait before the next. Then, or at once for any other
        failure, the tool gets :class:`EmitFailed`.

        A try the store left unanswered lasts the store timeout itself, so
        it ends past the deadline and is never tried again (the event may
        still commit: ``maybe_stored``); what is tried again is a failure
        the store reported sooner (a broken connection, a read-only
        database), where nothing was written unless a connection broke
        between a commit and its answer.
        """
        events = self.events
        if events is None:
            return
        event = events.tool_event(event_type, payload)
        backoff = Backoff()
        give_up = trio.current_time() + events.emit_wait
        while True:
            try:
                now = self.clock.wall_ms()
                await events.emit(self.store, worker.task_id, event, now, fence=worker.generation)
            except StoreUnavailable as error:
                if trio.current_time() >= give_up:
                    log.warning("task %s: an event was not stored: %s", worker.task_id, error)
                    raise EmitFailed(
                        f"The task store stayed unavailable for {events.emit_wait:g} s ({error});"
                        " the event may or may not be in the task's log",
                        maybe_stored=True,
                    ) from error
                log.warning("task %s: an event waits for the store: %s", worker.task_id, error)
                with trio.move_on_at(give_up):
                    await backoff.wait()
                continue
            except StoreRefused as error:
                log.warning("task %s: the store refused an event: %s", worker.task_id, error)
                raise EmitFailed(
                    f"The task store refused the event: {error}", maybe_stored=False
                ) from error
            except Exception:  # a defect, or what no store classified
                incident = report_fault(log, "task %s: appending an event", worker.task_id)
                raise EmitFailed(
                    f"The event could not be stored (incident {incident.incident_id})",
                    maybe_stored=False,
                ) from None
            return
