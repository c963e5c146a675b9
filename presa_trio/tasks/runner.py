"""Running tasks: one nursery per task, in a supervision tree, with the store as the truth.

One nursery per task supervises a worker whose input waits are trio Events
keyed by input key; ``tasks/cancel`` writes ``cancelled`` and then cancels
the scope (:meth:`TaskRunner.cancel`).

The supervision tree
--------------------
::

    the server's lifetime (the ASGI lifespan: McpApp.run)
    └── the task runner (TaskRunner.run)
        ├── the background loops, each kept running (Coordination.keep_running)
        │   ├── the store watch ── announcements → the reactions table
        │   ├── the reaper ─────── deletes expired tasks
        │   ├── lease renewal ──── every third of a lease
        │   ├── recovery ───────── claims lapsed leases, runs their tasks again
        │   └── with --task-events: the append watch, the event retention (event_log)
        └── the workers (a shielded scope: shutdown stops them first)
            └── one nursery per task: its scope is the task's one cancel handle
                ├── the job (the tool's handler, with ctx.nursery = this nursery)
                └── the children the tool starts in ctx.nursery

    per-request helpers (disconnect watchers, SSE keep-alives) live in the
    request's own nursery (presa_trio.http), never in this tree.

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
the store, a defect             the task that met it            ``failed``: -32603, incident
                                                                logged with its traceback
a background loop               that turn of the loop           logged; restarted, backing off
a watcher of announcements      nothing                         logged (every store alike)
the runner itself               the process                     one line, non-zero exit
                                                                (never a server answering 503)
a per-request helper            its request only                (the HTTP edge's answer)
=============================== =============================== ==============================

How each part is kept: the task's nursery in :meth:`TaskRunner._supervise`;
a worker's writes in :mod:`~presa_trio.tasks.writes`; the loops and the
reactions in :mod:`~presa_trio.tasks.coordination` and
:mod:`~presa_trio.tasks.reactions`; the store's classification of its
errors in each store (:class:`~presa_trio.tasks.stores.base.StoreError`);
the process exit in :mod:`presa_trio.http.app`, :mod:`presa_trio.stdio` and the CLI.

A task's life
-------------
- **Create.** :meth:`TaskRunner.start` makes the task's
  :class:`~presa_trio.tasks.worker.Worker` (the handle a stop goes through)
  before it writes the task to the store, and starts the worker with
  ``start_soon`` right after: it returns once the task is stored, so the
  ``CreateTaskResult`` can never name a task that ``tasks/get`` or
  ``tasks/cancel`` would not find (SEP-2663 §Task Creation; T-23). A
  cancel that arrives before the worker has taken its first step is kept
  by the worker, which ends at that step, before the job runs.
- **Input.** ``ctx.ask`` records the requests on the task in one
  transition (``input_required``); the worker waits on one ``trio.Event``
  per key. ``tasks/update`` moves each *matched* answer into the inbox
  (:func:`~presa_trio.tasks.model.fulfil`), and its announcement sets the
  Events of exactly those keys: a partial update is a partial wake-up (T-45).
- **Cancel.** ``tasks/cancel`` writes ``cancelled`` first, then cancels the
  task's scope; a cancel made in another process arrives as an
  announcement, which cancels the scope here. Whatever the worker was
  about to write meets a terminal task and is dropped (T-49, T-66).
- **Finish.** The outcome is written once, after the task's nursery has
  closed: a JSON object result is ``completed``; a raised
  :class:`~presa_trio.wire.errors.McpError` is ``failed`` with that error;
  anything else is ``failed`` with a generic -32603, the detail going to
  the log only (SEP-2663 §Task Execution Errors), mapped by
  :func:`~presa_trio.server.tools.error_for` as on the plain path.
- **Events** (task event streams on: :attr:`~presa_trio.tasks.writes.TaskWrites.events`):
  the worker's first step and every write that succeeded append the
  task's life events, and ``ctx.emit`` a tool's own (:mod:`~presa_trio.tasks.event_log`).
- **Shutdown** stops every worker without writing for it (a parked task
  keeps its input requests), then releases this process's leases, so the
  next process to start claims them at once.

Beyond one process: every read and write awaits the store; leases with a
generation fence a worker whose task another process claimed; recovery
runs a re-runnable task again from its stored work description (at least
once), and writes any other ``failed`` with
:data:`~presa_trio.tasks.coordination.INTERRUPTED`. Time: deadlines and
timestamps are wall-clock epoch milliseconds (:attr:`Clock.wall_ms`), the
same in every process; Trio's clock is only slept on.

Spec: SEP-2663 §Task Creation, §Task Update Requests, §Task Cancellation,
§Task Execution Errors; docs/tasks.md.
"""

from __future__ import annotations

import logging
import secrets
import sys
from collections.abc import Mapping
from functools import partial

import attrs
import trio

from presa_trio.auth.principal import ANONYMOUS
from presa_trio.server.context import RequestContext
from presa_trio.server.faults import report_fault
from presa_trio.server.tools import error_for
from presa_trio.tasks import model
from presa_trio.tasks.coordination import INTERRUPTED, Coordination
from presa_trio.tasks.model import Status, Task
from presa_trio.tasks.stores.base import (
    CapacityExceeded,
    Lease,
    Limits,
    StoredTask,
    StoreError,
    TaskNotFound,
    Work,
)
from presa_trio.tasks.worker import (
    Job,
    Move,
    Worker,
    WorkerContext,
    detached_meta,
    drop,
    failure,
    outcome,
)
from presa_trio.tasks.writes import WRITE_GRACE, Clock
from presa_trio.wire.errors import InternalError, McpError
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import check_answers

__all__ = ["INTERRUPTED", "Clock", "Limits", "TaskRunner", "capacity_error", "new_task_id"]

log = logging.getLogger(__name__)

#: The task id a readiness check reads: no task has it (a new id has 32 characters).
READINESS_PROBE_ID = "readiness-probe"

#: Every worker's Trio task has this name: one string for all, not one formatted per task.
WORKER_NAME = "presa_trio.tasks.runner.TaskRunner._supervise"


def new_task_id() -> str:
    """192 random bits, base64url: unguessable and ``Mcp-Name``-safe (T-64; spec-notes §37)."""
    return secrets.token_urlsafe(24)


def capacity_error(
    limit: str, *, retryable: bool, message: str = "Task capacity exhausted"
) -> McpError:
    """-32603 naming the limit hit, and whether trying again later can succeed.

    presa chooses: the SEP defines no capacity error, so every limit is an
    internal error with ``data: {retryable, limit}`` (spec-notes §31).
    """
    return InternalError(message, {"retryable": retryable, "limit": limit})


@attrs.define(eq=False, repr=False)
class TaskRunner(Coordination):
    """Creates, runs, answers and cancels tasks; see the module docstring."""

    limits: Limits = attrs.field(factory=Limits)
    # ttlMs of new tasks, counted from creation; None is unlimited (T-18).
    ttl_ms: int | None = 3_600_000
    poll_interval_ms: int | None = 500
    # The workers' nursery, while :meth:`run` runs.
    _root: trio.Nursery | None = None

    # --- the supervision tree ----------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own every worker and the background loops until cancelled.

        The workers run under a shielded scope, so a shutdown reaches this
        body first: it marks the runner stopping and stops every worker
        (they write nothing for themselves), then cancels them all.
        """
        self._stopping = False
        workers = trio.CancelScope(shield=True)
        async with trio.open_nursery() as guard:
            await guard.start(self._own_workers, workers)
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                self._stopping = True
                workers.cancel(reason="server shutdown")

    async def _own_workers(
        self,
        workers: trio.CancelScope,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        with workers:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.watch)
                self._root = nursery
                nursery.start_soon(self.keep_running, "the reaper", self.reap)
                nursery.start_soon(self.keep_running, "lease renewal", self.renew)
                nursery.start_soon(self.keep_running, "recovery", self.recover)
                if self.events is not None:
                    events, store, wall_ms = self.events, self.store, self.clock.wall_ms
                    follow = partial(events.follow_appends, store)
                    nursery.start_soon(self.keep_running, "the task event watch", follow)
                    prune = partial(events.prune, store, wall_ms)
                    nursery.start_soon(self.keep_running, "task event retention", prune)
                task_status.started()
        self._root = None
        with trio.CancelScope(shield=True, deadline=trio.current_time() + WRITE_GRACE):
            try:
                await self.store.release(self.owner)
            except StoreError as error:
                log.warning("leases not released at shutdown: %s", error)

    async def unready(self) -> str | None:
        """Why tasks cannot be served now: the runner stopped, or the store does not answer.

        The store is asked for one task by an id no task has (a keyed read,
        the cheapest call every store has), bounded by the store's own
        timeout (``--store-timeout``): ``GET /readyz``, polled every second,
        costs one indexed read (docs/deployment.md).
        """
        if self._root is None:
            return "the task runner is not running"
        try:
            await self.store.read(READINESS_PROBE_ID)
        except StoreError as error:
            return f"the task store does not answer: {error}"
        return None

    def resync_soon(self) -> None:
        if self._root is not None:
            self._root.start_soon(self.resync)

    # --- creation -------------------------------------------------------------------

    async def start(
        self, scope: str, job: Job, creator: RequestContext, work: Work | None = None
    ) -> Task:
        """Create a task running ``job`` and return its seed, once it is stored.

        ``work`` is what a process needs to run the task again; without it,
        the task cannot be recovered.
        """
        if self._root is None:
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
        self._workers[task.task_id] = worker
        try:
            await self.store.create(stored, self.limits, now)
        except CapacityExceeded as full:
            del self._workers[task.task_id]
            raise self.limits.creation_refusal(full.limit, shared=scope == ANONYMOUS) from None
        except BaseException:
            del self._workers[task.task_id]
            raise
        worker.stored = True
        log.info("task %s created", task.task_id)
        self.launch(worker, job, creator)
        return task

    def launch(self, worker: Worker, job: Job, creator: RequestContext) -> None:
        """Start the worker in the workers' nursery: no checkpoint, so nothing comes between."""
        assert self._root is not None
        self._root.start_soon(self._supervise, worker, job, creator, name=WORKER_NAME)

    async def _supervise(self, worker: Worker, job: Job, creator: RequestContext) -> None:
        """One task's life: its nursery, then its outcome; a failure here ends this task only.

        The job runs as the body of the task's nursery, in this Trio task;
        child tasks the tool starts through ``ctx.nursery`` run beside it.
        The nursery closes once all of them have ended, and only then is the
        outcome written, once. A stop (``tasks/cancel``, the TTL, lease loss)
        cancels the nursery's own scope: every child and the job get
        ``trio.Cancelled``, the nursery absorbs it, and nothing is written.
        Shutdown cancels the scope around every worker, to the same effect.

        Whatever else escapes (a bug in this very function, say) is logged
        as an incident and ends this Trio task: never the runner, never
        another task. The task then keeps its lease until it lapses, and
        recovery claims it.
        """
        try:
            # A stop that came before this task's first step (a cancel right
            # after creation) is kept by the worker: end here, before the job
            # has run at all; so does a shutdown that came first (it sets
            # _stopping before it cancels the workers). No checkpoint is
            # needed to see either: this step is a schedule point already.
            if worker.stopped() or self._stopping:
                return
            if self.events is not None:
                # The task's first event, before any the job's writes append.
                await self.events.started(self.store, worker.latest, self.clock.wall_ms())
            move: Move
            try:
                async with trio.open_nursery() as nursery:
                    worker.guard(nursery.cancel_scope)
                    context = self._detach(creator, worker, nursery)
                    # This frame lives as long as the task: let go of the
                    # creating request's context (and its stream) now,
                    # or every parked task keeps it alive.
                    del creator
                    result: JSONObject = await job(context)
            except* Exception as group:
                # The plain path's mapping: the job's own spec error, else -32603.
                move = failure(error_for(group))
            else:
                if worker.stopped():
                    return
                move = outcome(worker.task_id, result)
            with trio.CancelScope() as writing:
                # A stop during the write (waiting for the store) ends it.
                worker.guard(writing)
                if not worker.stopped():
                    await self.write(worker, move)
        except Exception:
            report_fault(log, "task %s: its worker failed", worker.task_id)
        finally:
            if self._workers.get(worker.task_id) is worker:
                del self._workers[worker.task_id]

    def _detach(
        self, creator: RequestContext, worker: Worker, nursery: trio.Nursery
    ) -> WorkerContext:
        return WorkerContext(
            request_id=worker.task_id,
            # One of the dispatcher's method names: one string for every worker.
            method=sys.intern(creator.method),
            meta=detached_meta(creator.meta),
            server=creator.server,
            send=drop,
            input_responses=creator.input_responses,
            state=creator.state,
            principal=creator.principal,
            nursery=nursery,
            writes=self,
            worker=worker,
        )

    # --- the requests on a task ----------------------------------------------------

    async def get(self, scope: str, task_id: str) -> Task:
        """The task as stored; a pure read (SEP-2663 §Rationale, Splitting Reads; T-36)."""
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

        await self.transition(scope, task_id, answer)

    async def cancel(self, scope: str, task_id: str) -> None:
        """``tasks/cancel``: write ``cancelled``, then cancel the task's scope, in that order.

        The write comes first, so whatever the worker was about to write
        meets a terminal task and is dropped (T-49, T-66); a terminal task
        is left as it is. A task another process runs is stopped there by
        the announcement of this write (:mod:`~presa_trio.tasks.reactions`).
        """
        _, after = await self.transition(scope, task_id, model.cancel)
        worker = self._workers.get(task_id)
        if worker is not None and after.status is Status.CANCELLED:
            worker.stop("tasks/cancel")
