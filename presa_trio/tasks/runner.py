"""Running tasks: one nursery per task, in a supervision tree, with the store as the truth.

One nursery per task supervises a worker whose input waits are trio Events
keyed by input key; ``tasks/cancel`` writes ``cancelled`` and then cancels
the scope (:meth:`TaskRunner.cancel`).

:class:`TaskRunner` is the facade the Tasks extension calls (``start``,
``get``, ``update``, ``cancel``, ``run``). It holds the settings; while it
runs, it holds the parts it built from them, each the one owner of its state:

- :class:`~presa_trio.tasks.writes.StoreWriter` — every write of a task:
  compare-and-set, a worker's writes under its lease and their policy;
- :class:`~presa_trio.tasks.supervisor.Supervisor` — the workers: their
  table, their nursery, one nursery per task, the stopping flag;
- :class:`~presa_trio.tasks.housekeeping.Housekeeping` — the loops that keep
  this process's view true (watch, resync, reaper, renewal, recovery),
  each kept running by :func:`~presa_trio.tasks.housekeeping.keep_running`.

The supervision tree
--------------------
As the code nests it::

    the server's lifetime (the ASGI lifespan: McpApp.run)
    └── the runner's nursery (TaskRunner.run)
        ├── one keeper per housekeeping loop (keep_running: a nursery per run of the loop)
        │   ├── the store watch ── announcements → the reactions table
        │   ├── resync ─────────── re-reads this process's tasks when announcements were lost
        │   ├── the reaper ─────── deletes expired tasks
        │   ├── lease renewal ──── every third of a lease
        │   ├── recovery ───────── claims lapsed leases, runs their tasks again
        │   ├── with --task-events: the append watch, the event retention (event_log)
        │   └── on a store many processes share: the change relay (the server's own
        │       list-changed and resource-updated notifications, to and from the others)
        └── the workers (Supervisor.run: a shielded scope only Supervisor.stop cancels)
            └── the workers' nursery
                └── one nursery per task (Supervisor._supervise): its scope is the task's
                    │                                              one cancel handle
                    ├── the job (the tool's handler, with ctx.nursery = this nursery)
                    └── the children the tool starts in ctx.nursery

    per-request helpers (disconnect watchers, SSE keep-alives) live in the
    request's own nursery (presa_trio.http), never in this tree.

What each nursery lets end it:

- **the runner's nursery**: nothing its children do, since each loop is
  kept and the workers' nursery absorbs its workers' failures. It ends
  when cancelled (shutdown; then
  :meth:`~presa_trio.tasks.supervisor.Supervisor.stop` stops the
  workers first), or when the store watch cannot start the first time:
  the runner cannot run, and the process exits non-zero.
- **a keeper's nursery** (one run of one loop): any failure ends that
  run only; the keeper logs it and starts the loop again, backing off.
- **the workers' nursery**: no worker's failure ends it; ``Supervisor.stop``
  does, and Ctrl-C in a worker, which stops every worker first.
- **a task's nursery**: a failure of the job or a child ends that task
  only, written ``failed``; a stop cancels it and nothing is written.

The failure policy
------------------
=============================== =============================== ==============================
what fails                      what it ends                    what is written / answered
=============================== =============================== ==============================
a tool, or a child it started   that task only                  ``failed``: its McpError, else
                                                                -32603 with an incident id
the store, unavailable          nothing: it waits               a worker's write retries with
                                                                back-off; a request gets
                                                                -32603 ``retryable: true``
the store refuses the data      the task that wrote it          ``failed``: "Could not store
                                                                <what>: <why>"
the store, a defect (or an      the task that met it            ``failed``: -32603, incident
exception no store classified)                                  logged with its traceback
a housekeeping loop (resync     that run of the loop            logged; started again,
included), for any reason                                       backing off
the runner itself               the process                     one line, non-zero exit
                                                                (never a server answering 503)
a per-request helper            its request only                (the HTTP edge's answer)
=============================== =============================== ==============================

How each part is kept: the task's nursery in
:meth:`~presa_trio.tasks.supervisor.Supervisor._supervise`;
a worker's writes in :mod:`~presa_trio.tasks.writes`; the loops in
:mod:`~presa_trio.tasks.housekeeping`, the reactions in
:mod:`~presa_trio.tasks.reactions`; the store's classification of its
errors in each store (:class:`~presa_trio.tasks.stores.base.StoreError`);
the process exit in :mod:`presa_trio.http.app`, :mod:`presa_trio.stdio` and the CLI.

A task's life
-------------
- **Create.** :meth:`TaskRunner.start` makes the task's
  :class:`~presa_trio.tasks.worker.Worker` (the handle a stop goes through)
  before it writes the task to the store, and launches it with
  ``start_soon`` right after
  (:meth:`~presa_trio.tasks.supervisor.Supervisor.launch`): it returns
  once the task is stored, so the
  ``CreateTaskResult`` can never name a task that ``tasks/get`` or
  ``tasks/cancel`` would not find (SEP-2663 §Task Creation). A
  cancel that arrives before the worker has taken its first step is kept
  by the worker, which ends at that step, before the job runs.
- **Input.** ``ctx.ask`` records the requests on the task in one
  transition (``input_required``); the worker waits on one ``trio.Event``
  per key. ``tasks/update`` moves each *matched* answer into the inbox
  (:func:`~presa_trio.tasks.model.fulfil`), and its announcement sets the
  Events of exactly those keys: a partial update is a partial wake-up
  (SEP-2663 §Task Update Requests).
- **Cancel.** ``tasks/cancel`` writes ``cancelled`` first, then cancels the
  task's scope; a cancel made in another process arrives as an
  announcement, which cancels the scope here. Whatever the worker was
  about to write meets a terminal task and is dropped (SEP-2663 §Task
  Cancellation; spec-notes §28).
- **Finish.** The outcome is written once, after the task's nursery has
  closed: a JSON object result is ``completed``; a raised
  :class:`~presa_trio.wire.errors.McpError` is ``failed`` with that error;
  anything else is ``failed`` with a generic -32603, the detail going to
  the log only (SEP-2663 §Task Execution Errors), mapped by
  :func:`~presa_trio.server.tools.error_for` as on the plain path.
- **Events** (task event streams on: :attr:`~presa_trio.tasks.writes.StoreWriter.events`):
  the worker's first step and every write that succeeded append the
  task's life events, and ``ctx.emit`` a tool's own (:mod:`~presa_trio.tasks.event_log`).
- **Shutdown** stops every worker without writing for it (a parked task
  keeps its input requests), then releases this process's leases, so the
  next process to start claims them at once. A store that does not answer
  holds no shutdown back past its own bound: a worker's store calls, its
  shielded write included, end with its stop, and the release is bounded
  by :data:`RELEASE_WITHIN`; a call that ends when cancelled (memory,
  PostgreSQL) ends at once, and a SQLite call, which finishes the
  transaction it began in its thread, within the store timeout.

Beyond one process: every read and write awaits the store; leases with a
generation fence a worker whose task another process claimed; recovery
runs a re-runnable task again from its stored work description (at least
once), and writes any other ``failed`` with
:data:`~presa_trio.tasks.housekeeping.INTERRUPTED`. Time: deadlines and
timestamps are wall-clock epoch milliseconds (:attr:`Clock.wall_ms`), the
same in every process; Trio's clock is only slept on.

Spec: SEP-2663 §Task Creation, §Task Update Requests, §Task Cancellation,
§Task Execution Errors; docs/tasks.md.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import trio

from presa_trio.auth.principal import ANONYMOUS
from presa_trio.server.context import RequestContext
from presa_trio.tasks import model
from presa_trio.tasks.context import Job
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.housekeeping import (
    INTERRUPTED,
    ChangeListener,
    Housekeeping,
    Loop,
    Revive,
    cannot_revive,
    ignore_change,
    keep_running,
)
from presa_trio.tasks.model import Task
from presa_trio.tasks.params import can_name_a_task
from presa_trio.tasks.stores.base import (
    CapacityExceeded,
    Lease,
    Limits,
    StoredTask,
    StoreError,
    TaskNotFound,
    TaskStore,
    Work,
)
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.tasks.supervisor import Supervisor
from presa_trio.tasks.worker import Worker
from presa_trio.tasks.writes import Clock, LoadListener, StoreWriter, ignore_load, ignore_status
from presa_trio.wire.errors import InternalError, McpError
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import check_answers
from presa_trio.wire.tasks import Status

__all__ = ["INTERRUPTED", "Clock", "Limits", "TaskRunner", "capacity_error", "new_task_id"]

log = logging.getLogger(__name__)

#: How long, at most, the runner waits for the store as it stops (seconds):
#: the release of its leases. Well under the one second a shutdown may take
#: past its grace (``--shutdown-grace``), for a store whose calls end when
#: cancelled; a SQLite call in its thread ends within the store timeout.
RELEASE_WITHIN = 0.5
#: The task id a readiness check reads: no task has it (a new id has 32 characters).
READINESS_PROBE_ID = "readiness-probe"


def new_task_id() -> str:
    """192 random bits, base64url: unguessable and ``Mcp-Name``-safe (spec-notes §37).

    Never one that starts with ``-``, which a command line would take for an
    option (``presa-trio task get URL -x…``): such a draw is drawn again.
    """
    while (task_id := secrets.token_urlsafe(24)).startswith("-"):
        pass
    return task_id


def ignore_creation(stored: StoredTask) -> None:
    """The default: nobody counts the tasks created."""


def check_nameable(task_id: str) -> None:
    """:class:`TaskNotFound` for an id no task can have, before any store is asked.

    What no task's id can hold is :func:`~presa_trio.tasks.params.can_name_a_task`.
    Spec: SEP-2663 §Protocol Errors (an unknown taskId is -32602).
    """
    if not can_name_a_task(task_id):
        raise TaskNotFound()


def capacity_error(
    limit: str, *, retryable: bool, message: str = "Task capacity exhausted"
) -> McpError:
    """-32603 naming the limit hit, and whether trying again later can succeed.

    presa chooses: the SEP defines no capacity error, so every limit is an
    internal error with ``data: {retryable, limit}`` (spec-notes §31).
    """
    return InternalError(message, {"retryable": retryable, "limit": limit})


def whole_positive_ms(_runner: Any, setting: attrs.Attribute[Any], value: Any) -> None:
    """A ``ttlMs`` or ``pollIntervalMs`` setting: whole milliseconds above zero, or None.

    SEP-2663 §Tasks types both as integer milliseconds, and the runner's
    tasks-wire-field-renames check wants them positive (spec-notes §53):
    anything else is refused when the runner is built or the setting
    changes, not sent on the wire, nor left to fail every task it creates.
    """
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise ValueError(
            f"{setting.name} must be a whole number of milliseconds > 0, or None, not {value!r}"
        )


@attrs.define(eq=False, repr=False)
class TaskRunner:
    """Creates, runs, answers and cancels tasks; see the module docstring.

    The settings may change until :meth:`run` starts, which builds the
    runtime's parts from them.
    """

    store: TaskStore = attrs.field(factory=MemoryStore)
    clock: Clock = attrs.field(factory=Clock)
    # Task event streams (SEP-2694, ``--task-events``); None: off.
    events: TaskEventLog | None = None
    limits: Limits = attrs.field(factory=Limits)
    # ttlMs of new tasks, counted from creation; None is unlimited (SEP-2663 §Tasks).
    ttl_ms: int | None = attrs.field(default=3_600_000, validator=whole_positive_ms)
    # pollIntervalMs of new tasks; None leaves it out.
    poll_interval_ms: int | None = attrs.field(default=500, validator=whole_positive_ms)
    # How long a lease lasts unless renewed, in ms (``--task-lease``).
    lease_ms: int = 30_000
    # How often the reaper deletes expired tasks, in seconds.
    reap_every: float = 60.0
    # Told of every stored change (status notifications); synchronous.
    on_change: ChangeListener = ignore_change
    # Rebuilds a recovered task's job from its work description.
    revive: Revive = cannot_revive
    # Told of each task this process created, once stored (``--metrics``); synchronous.
    on_created: Callable[[StoredTask], None] = ignore_creation
    # Told of each status this process wrote, once stored (``--metrics``).
    on_status: Callable[[Task], None] = ignore_status
    # Told of the tasks running and parked in this process (``--metrics``).
    on_load: LoadListener = ignore_load
    # This process run's name on the leases it holds.
    owner: str = attrs.field(factory=lambda: secrets.token_urlsafe(12))
    # With a store many processes share: the loop that carries the server's own
    # change notifications between them (its relay_changes), kept as a housekeeping
    # loop is; None: nothing to carry.
    relay: Loop | None = None
    # The parts, built by :meth:`run` (None until it first runs).
    _writer: StoreWriter | None = None
    _supervisor: Supervisor | None = None
    # The store failure ``unready`` last logged, until the store answers again.
    _unready_logged: str | None = None

    # --- the supervision tree ----------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The runner's nursery: the housekeeping loops beside the workers, until cancelled.

        Started once workers can start and the store watch listens. A
        shutdown (the cancellation of this call) reaches this body first,
        since the workers are shielded: it stops every worker through the
        supervisor, the loops end with the nursery, and then this process's
        leases are released, bounded by :data:`RELEASE_WITHIN`.

        Failure policy of this nursery: its children do not fail (each loop,
        the change relay too, is kept by :func:`keep_running`, and no
        worker's failure ends the workers' nursery), so it ends when
        cancelled, or when a loop cannot start the first time (the store
        cannot be watched): then the runner fails, and the server's process
        exits non-zero. Ctrl-C raised in a
        worker ends it too, every worker stopped first, as at a shutdown.
        """
        writer = StoreWriter(self.store, self.clock, self.events, self.on_status, self.on_load)
        self._writer = writer
        supervisor = self._supervisor = Supervisor(writer)
        housekeeping = Housekeeping(
            writer,
            supervisor,
            owner=self.owner,
            lease_ms=self.lease_ms,
            reap_every=self.reap_every,
            on_change=self.on_change,
            revive=self.revive,
        )
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(supervisor.run)
                try:
                    for name, loop, cap in housekeeping.loops():
                        await nursery.start(keep_running, name, loop, cap)
                    if self.relay is not None:
                        await nursery.start(keep_running, "the change relay", self.relay)
                    task_status.started()
                    await trio.sleep_forever()
                finally:
                    supervisor.stop("server shutdown")
        finally:
            await housekeeping.release(RELEASE_WITHIN)

    async def unready(self) -> str | None:
        """Why tasks cannot be served now: the runner stopped, or the store does not answer.

        The store is asked for one task by an id no task has (a keyed read,
        the cheapest call every store has), bounded by the store's own
        timeout (``--store-timeout``): ``GET /readyz``, polled every second,
        costs one indexed read (docs/deployment.md).
        """
        if self._supervisor is None or not self._supervisor.running:
            return "the task runner is not running"
        try:
            await self.store.read(READINESS_PROBE_ID)
        except StoreError as error:
            # The answer goes to whoever can reach the port, with no token: the
            # failure's class only. Its message (a database's host, port, user)
            # goes to the log, once for each new message rather than every poll.
            if str(error) != self._unready_logged:
                self._unready_logged = str(error)
                log.warning("not ready: the task store does not answer: %s", error)
            return f"the task store does not answer ({type(error).__name__})"
        self._unready_logged = None
        return None

    # --- creation -------------------------------------------------------------------

    async def start(
        self, scope: str, job: Job, creator: RequestContext, work: Work | None = None
    ) -> Task:
        """Create a task running ``job`` and return its seed, once it is stored.

        ``work`` is what a process needs to run the task again; without it,
        the task cannot be recovered. :attr:`on_created` is told of the task
        as soon as the store has it, whether or not its creator is still
        there to read the answer.
        """
        supervisor = self._supervisor
        if supervisor is None or not supervisor.running:
            raise RuntimeError("the task runner is not running")
        now = self.clock.wall_ms()
        task = model.create(
            new_task_id(),
            now_ms=now,
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
            required_scopes=creator.access.required,
        )
        stored = StoredTask(scope, task, work, Lease(self.owner, 1, now + self.lease_ms))
        worker = Worker(task.task_id, scope, 1, task, stored=False)
        # Registered before the store write, so no announcement can miss it.
        supervisor.add(worker)
        try:
            await self.store.create(stored, self.limits, now)
        except CapacityExceeded as full:
            supervisor.discard(worker)
            raise self.limits.creation_refusal(full.limit, shared=scope == ANONYMOUS) from None
        except BaseException:
            supervisor.discard(worker)
            raise
        worker.stored = True
        self.on_created(stored)
        log.info("task %s created", task.task_id)
        supervisor.launch(worker, job, creator)
        return task

    # --- the requests on a task ----------------------------------------------------

    async def get(self, scope: str, task_id: str) -> Task:
        """The task as stored; a pure read (SEP-2663 §Rationale, Splitting Reads)."""
        check_nameable(task_id)
        return (await self.store.get(scope, task_id, self.clock.wall_ms())).task

    async def scopes_of(self, scope: str, task_id: str) -> frozenset[str] | None:
        """The scopes a live task of ``scope`` requires; ``None`` if there is no such task."""
        try:
            return (await self.get(scope, task_id)).required_scopes
        except TaskNotFound:
            return None

    async def update(self, scope: str, task_id: str, answers: Mapping[str, JSONObject]) -> None:
        """Check ``answers`` and record them in the inbox; the announcement wakes the matched keys.

        An answer to an outstanding key that is not a valid result for its
        request's kind is -32602 (:func:`~presa_trio.wire.mrtr.check_answers`)
        and nothing is written. The check runs inside the transition, on the
        task as read for the compare-and-set, so an update reads the task once.
        """

        def answer(task: Task, now: int) -> Task:
            check_answers(task.requests_on_wire(), answers)
            return model.fulfil(task, answers, now)

        check_nameable(task_id)
        await self._built_writer().transition(scope, task_id, answer)

    async def cancel(self, scope: str, task_id: str) -> None:
        """``tasks/cancel``: write ``cancelled``, then cancel the task's scope, in that order.

        The write comes first, so whatever the worker was about to write
        meets a terminal task and is dropped (spec-notes §28); a terminal task
        is left as it is. A task another process runs is stopped there by
        the announcement of this write (:mod:`~presa_trio.tasks.reactions`).
        """
        check_nameable(task_id)
        _, after = await self._built_writer().transition(scope, task_id, model.cancel)
        assert self._supervisor is not None
        worker = self._supervisor.get(task_id)
        if worker is not None and after.status is Status.CANCELLED:
            worker.stop("tasks/cancel")

    def _built_writer(self) -> StoreWriter:
        if self._writer is None:
            raise RuntimeError("the task runner is not running")
        return self._writer
