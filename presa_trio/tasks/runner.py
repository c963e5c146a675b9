"""Running tasks: one server-lifetime nursery, one nursery per task, the store as the truth.

A task outlives the request that created it, so its worker cannot live in
the request's nursery. :meth:`TaskRunner.run` opens a nursery for the
server's lifetime (inside the ASGI lifespan, through the extension's ``run``
hook); every task gets its own nursery inside it, whose cancel scope is the
one handle ``tasks/cancel``, the TTL reaper and server shutdown use to stop it.

Theory of operation
-------------------
- **Create.** :meth:`TaskRunner.start` makes the task's :class:`Worker`
  (the handle a stop goes through) before it writes the task to the store,
  and starts the worker with ``start_soon`` right after: it returns once
  the task is stored, so the ``CreateTaskResult`` can never name a task
  that ``tasks/get`` or ``tasks/cancel`` would not find (SEP-2663 §Task
  Creation; T-23). ``start_soon`` has no checkpoint, so nothing can come
  between the write and the start; a cancel that arrives before the worker
  has taken its first step is kept by the :class:`Worker`, and the worker
  ends at that step, before the job runs.
- **Input.** A worker that needs input calls :func:`ask`. Its requests are
  recorded on the task in one transition (status ``input_required``) and the
  worker parks its Trio task until the task's inbox holds an answer for
  every key.
- **Update.** ``tasks/update`` applies :func:`~presa_trio.tasks.model.fulfil`,
  which moves each *matched* answer into the task's inbox; the worker
  waiting on those keys wakes and takes them. Other keys stay parked: a
  partial update is a partial wake-up (T-45).
- **Cancel.** ``tasks/cancel`` writes ``cancelled`` first; the announcement
  of that write cancels the task's scope. Whatever the worker was about to
  write meets a terminal task and is dropped by the model (T-49, T-66).
- **Publish.** Every stored change of a task is handed to ``on_change``;
  the extension turns it into ``notifications/tasks`` for the listen
  streams that asked for that task. Changes are pushed, never polled.
- **Children.** The job runs as the body of its task's nursery, and the
  tool gets that nursery as ``ctx.nursery``: child tasks it starts there
  are cancelled with the task, and the outcome waits for them.
- **Status message.** ``ctx.set_status_message`` writes the task's
  ``statusMessage`` (:func:`~presa_trio.tasks.model.report`) under the lease.
- **Finish.** The worker's outcome is written once, after the task's
  nursery has closed: a JSON object result is
  ``completed``; a raised :class:`~presa_trio.wire.errors.McpError` is
  ``failed`` with that error; anything else is ``failed`` with a generic
  -32603, the detail going to the log only (SEP-2663 §Task Execution Errors),
  mapped by :func:`~presa_trio.server.tools.error_for` as on the plain path.

Beyond one process
------------------
- **The store is the truth.** Every read and write awaits the
  :class:`~presa_trio.tasks.stores.base.TaskStore`; a worker's parked Trio task
  and cancel scope are this process's view of it. The store announces every change
  (:meth:`~presa_trio.tasks.stores.base.TaskStore.watch`) and :meth:`TaskRunner._react`
  brings the view in line: a ``cancelled`` task stops its worker, new
  answers in the inbox wake the keys they match, a lost lease stops the
  worker, and every change is published. A change made by another process
  arrives the same way.
- **Leases.** The process running a task holds a lease on it, renewed every
  third of its length; each worker write carries the lease's generation, so
  a worker whose lease was claimed by another process cannot write.
- **Recovery, at least once.** On start and every half lease, expired leases
  of unfinished tasks are claimed. A task whose tool declared it re-runnable
  runs again from its stored work description, and the answers it already
  received are handed back when it asks the same keys; any other is written
  ``failed`` with :data:`INTERRUPTED`.
- **Shutdown** stops every worker without writing for it (a parked task
  keeps its input requests), then releases this process's leases, so the
  next process to start claims them at once.

Time: deadlines and timestamps are wall-clock epoch milliseconds
(:attr:`Clock.wall_ms`), the same in every process; Trio's clock is only
slept on.

Spec: SEP-2663 §Task Creation, §Task Update Requests, §Task Cancellation;
README §Architecture ("One Trio task per MCP task"); docs/tasks.md §1. Create.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import trio

from presa_trio.auth.principal import ANONYMOUS
from presa_trio.server.context import RequestContext
from presa_trio.server.tools import error_for
from presa_trio.tasks import model
from presa_trio.tasks.model import Status, Task
from presa_trio.tasks.stores.base import (
    RESYNC,
    Capacity,
    CapacityExceeded,
    Changed,
    Conflict,
    Deleted,
    Lease,
    LeaseLost,
    StoredTask,
    StoreEvent,
    StoreUnavailable,
    TaskNotFound,
    TaskStore,
    Work,
)
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.wire.errors import (
    InternalError,
    McpError,
    MissingRequiredClientCapability,
    OverCapacity,
    ServerOverCapacity,
)
from presa_trio.wire.meta import ClientCapabilities, RequestMeta
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import Answers, InputRequest, answers_for, check_answers

log = logging.getLogger(__name__)

#: Told of every stored change: the access scope and the task as it now is.
ChangeListener = Callable[[str, Task], None]

#: A pure move of the state machine, given the task and the time (epoch ms).
Move = Callable[[Task, int], Task]


def ignore_change(scope: str, task: Task) -> None:
    """The default listener: nobody subscribes."""


#: What a task runs: given its detached context, the request's final result as
#: a JSON object, or a raised error (T-12: not tied to ``tools/call``).
Job = Callable[["WorkerContext"], Awaitable[JSONObject]]

#: How a stored work description runs again: its job and the creating
#: request's context rebuilt, or None if this server cannot run it.
Revive = Callable[[Work], "tuple[Job, RequestContext] | None"]


def cannot_revive(work: Work) -> tuple[Job, RequestContext] | None:
    """The default: a runner on its own knows no tools."""
    return None


#: What a task that may not run again ends with, when its process stopped.
INTERRUPTED = InternalError(
    "Task interrupted: the server running it stopped, and the tool may not run again",
    {"retryable": False},
)

#: How long a write the worker must make while being cancelled may take (s).
WRITE_GRACE = 5.0
#: Every worker's Trio task has this name: one string for all, not one formatted per task.
WORKER_NAME = "presa_trio.tasks.runner.TaskRunner._supervise"
#: A worker's write that met an unreachable store tries again after this
#: many seconds, doubling up to the cap.
STORE_RETRY_FIRST = 0.1
STORE_RETRY_CAP = 5.0
#: Most expired leases claimed in one go.
CLAIM_BATCH = 100


def new_task_id() -> str:
    """192 random bits, base64url: unguessable and ``Mcp-Name``-safe (T-64; spec-notes §37)."""
    return secrets.token_urlsafe(24)


def epoch_ms() -> int:
    return time.time_ns() // 1_000_000


@attrs.frozen
class Clock:
    """Where the runner reads the time: wall-clock epoch milliseconds."""

    wall_ms: Callable[[], int] = epoch_ms


def capacity_error(
    limit: str, *, retryable: bool, message: str = "Task capacity exhausted"
) -> McpError:
    """-32603 naming the limit hit, and whether trying again later can succeed.

    presa chooses: the SEP defines no capacity error, so every limit is an
    internal error with ``data: {retryable, limit}`` (spec-notes §31).
    """
    return InternalError(message, {"retryable": retryable, "limit": limit})


@attrs.frozen
class Limits:
    """Bounds on what tasks may take; the store checks the counts as it creates."""

    # Non-terminal tasks overall, and per access scope.
    max_active: int = 1000
    max_active_per_scope: int = 100
    # Stored tasks, finished ones included, until their TTL deletes them.
    max_stored: int = 10_000
    max_stored_per_scope: int = 1000
    # Size of a task's input (the tool arguments) as compact UTF-8 JSON.
    max_input_bytes: int = 256 * 1024

    @property
    def capacity(self) -> Capacity:
        return Capacity(
            self.max_active, self.max_active_per_scope, self.max_stored, self.max_stored_per_scope
        )

    def refusal(self, limit: str, *, shared: bool) -> OverCapacity:
        """The answer to a creation the ``limit`` refused, saying what the caller can do.

        ``shared``: the caller's scope is everyone's (authorization is off).
        """
        if limit == "max_active_tasks_per_scope":
            message = (
                f"Too many unfinished tasks for this caller ({self.max_active_per_scope}): "
                "retry once one ends, or cancel one with tasks/cancel"
            )
        elif limit == "max_stored_tasks_per_scope":
            message = (
                f"Too many stored tasks for this caller ({self.max_stored_per_scope}; finished "
                "ones count until their ttlMs elapses): retry later"
            )
        else:
            return ServerOverCapacity("The server holds all the tasks it can: retry later", limit)
        if shared:
            message += "; without authorization every caller shares this limit"
        return OverCapacity(message, limit)

    def check_input(self, value: Any) -> None:
        """Resending the same oversized input can never fit: not retryable.

        A lone surrogate (which no UTF-8 text holds) counts as its three bytes.
        """
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self.max_input_bytes:
            message = f"Task input is larger than max_input_bytes ({self.max_input_bytes})"
            raise capacity_error("max_input_bytes", retryable=False, message=message)


@attrs.define(eq=False)
class Worker:
    """The running side of one task: how to stop it, and the task as last announced.

    Ten thousand of these may be parked on input at once, so a worker holds
    no more than it must: the task's nursery's own cancel scope is the stop
    handle (no second scope around it), and a worker waiting for answers is
    parked directly on its Trio task, woken by :meth:`see` (no Event).
    """

    task_id: str
    # The access scope of the creating request; the worker writes within it.
    scope: str
    # The lease generation this worker runs under; its writes carry it.
    generation: int
    # The task as the store last announced it.
    latest: Task
    # Whether this run is a recovery: it may ask again what an earlier run asked.
    rerun: bool = False
    # False while its creation is still being stored: a lease renewal that
    # runs meanwhile must not find the task missing and call its lease lost.
    stored: bool = True
    # Why the worker was stopped (tasks/cancel, the TTL, lease loss); None while it may run.
    _stop_reason: str | None = None
    # What a stop cancels: the task's nursery's scope, then the scope of its final write.
    _cancel_scope: trio.CancelScope | None = None
    # The Trio task parked in :meth:`TaskRunner.wait_inputs`, until woken.
    _parked: trio.lowlevel.Task | None = None

    def see(self, task: Task) -> None:
        """Take an announced state of the task and wake the worker if it is parked."""
        if task.revision >= self.latest.revision:
            self.latest = task
            parked, self._parked = self._parked, None
            if parked is not None:
                trio.lowlevel.reschedule(parked)

    def stop(self, reason: str) -> None:
        """Stop the worker: cancel its scope now, or as soon as it has one."""
        if self._stop_reason is None:
            self._stop_reason = reason
        if self._cancel_scope is not None:
            self._cancel_scope.cancel(reason=reason)

    def stopped(self) -> bool:
        """Whether the worker was stopped: it writes nothing for its task any more."""
        return self._stop_reason is not None

    def guard(self, cancel_scope: trio.CancelScope) -> None:
        """From now on a stop cancels ``cancel_scope`` (at once, if one came already)."""
        self._cancel_scope = cancel_scope
        if self._stop_reason is not None:
            cancel_scope.cancel(reason=self._stop_reason)

    def answers(self, keys: tuple[str, ...]) -> dict[str, JSONObject] | None:
        """The answers to ``keys`` if the inbox holds every one of them, else None."""
        inbox = self.latest.inbox
        if all(key in inbox for key in keys):
            return {key: inbox[key] for key in keys}
        return None

    def park(self) -> Callable[[Any], trio.lowlevel.Abort]:
        """Mark the current Trio task parked; the abort callback for its wait."""
        self._parked = trio.lowlevel.current_task()
        return self._unpark

    def _unpark(self, raise_cancel: Any) -> trio.lowlevel.Abort:
        """A cancel ends the wait: nothing is left to wake."""
        self._parked = None
        return trio.lowlevel.Abort.SUCCEEDED


@attrs.define(eq=False)
class WorkerContext(RequestContext):
    """The context a task's worker runs with: the creating request, detached.

    It keeps what the request declared (version, capabilities, the verified
    multi round-trip answers) and loses its stream: ``send`` drops every
    message, and the progress token and log level are gone, so a task never
    sends progress or log notifications (SEP-2663 §Task Status Notifications;
    spec-notes §41; T-55). Its ``nursery`` is the task's own.
    """

    runner: TaskRunner = attrs.field(kw_only=True, repr=False)
    worker: Worker = attrs.field(kw_only=True)

    async def set_status_message(self, message: str) -> None:
        """The task's ``statusMessage`` until its status changes; the status stays.

        A store write under the worker's lease, announced like any other, so
        ``tasks/get`` and the listen streams see it (SEP-2663 §Tasks).
        """
        await super().set_status_message(message)
        await self.runner.report(self.worker, message)


#: Most distinct request declarations kept for workers to share.
DECLARATIONS_KEPT = 64


def detached_meta(meta: RequestMeta) -> RequestMeta:
    """What a task keeps of its creating request's ``_meta``: the declaration, shared.

    A worker has no stream, so it drops the progress token and the log
    level (SEP-2663 §Task Status Notifications; spec-notes §41). What is
    left, the protocol version, the declared capabilities and the client
    info (basic/index §_meta), is the same on nearly every request a
    client sends, so every task created with the same declaration shares
    one copy instead of keeping its request's decoded objects, about 800
    bytes a task. The copy is rebuilt from the canonical JSON, so no
    request holds it, and at most 64 are kept, so a client that varies its
    declaration cannot grow the memory.
    """
    declared = [meta.protocol_version, meta.capabilities.raw, meta.client_info]
    return _declaration(json.dumps(declared, sort_keys=True, separators=(",", ":")))


@functools.lru_cache(maxsize=DECLARATIONS_KEPT)
def _declaration(canonical: str) -> RequestMeta:
    version, capabilities, client_info = json.loads(canonical)
    return RequestMeta(version, ClientCapabilities(capabilities), client_info)


async def drop(message: dict[str, Any]) -> None:
    """A worker's ``send``: there is no stream to write to."""


def ask(ctx: RequestContext, requests: Mapping[str, InputRequest]) -> Awaitable[Answers]:
    """Ask the client for input; await the answers by key, checked and typed (:class:`Answers`).

    One call serves both ways a tool may run, and the tool reads the same
    (``answers = await ask(ctx, {...})``):

    - in a task, the requests go on the task (``input_required``) and the
      await returns once ``tasks/update`` has answered every key;
    - in a plain request, it returns the answers once the client has given
      them all (multi round-trip retries); until then it raises
      :class:`~presa_trio.wire.mrtr.InputPending`, which the tools boundary
      answers as ``input_required`` for the missing keys, carrying the
      answers already given in ``requestState``.

    Each answer is checked against the kind of its request (-32602 if it
    is not, say, a valid ``ElicitResult``). A request the creating
    request's capabilities do not allow is -32021 on both paths: here, in
    a task, before anything is recorded; on the plain path where the round
    closes (2026-07-28 basic/patterns/mrtr §Server Requirements; T-76; spec-notes §30).

    A plain function that returns the awaitable, not a coroutine of its own:
    a task parked on its question keeps every frame between its runner and
    the tool's ``await`` alive, and this one would be a frame more for each
    of them. Its errors (-32021, -32602, the pending signal) are raised when
    it is called, which for ``await ask(...)`` is the same moment.
    """
    if isinstance(ctx, WorkerContext):
        for request in requests.values():
            if not request.allowed_by(ctx.capabilities):
                raise MissingRequiredClientCapability.for_capability(request.capability)
        return ctx.runner.wait_inputs(ctx.worker, requests)
    return given(answers_for(requests, ctx.input_responses, ctx.state))


async def given(answers: Answers) -> Answers:
    """Answers already at hand, as an awaitable."""
    return answers


def is_json_object(value: Any) -> bool:
    """Whether ``value`` is a dict that encodes as strict JSON (no NaN, no sets…)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return isinstance(value, dict)


def resume_input(task: Task, requests: Mapping[str, model.Request], now_ms: int) -> Task:
    """A re-run asks what its first run asked: only keys never issued are issued now.

    An outstanding key is still waited for and an answered one is in the
    inbox; a key that was withdrawn can never be answered, so asking it
    again is illegal, as in :func:`~presa_trio.tasks.model.request_input`.
    """
    lost = sorted(key for key in requests if key in task.withdrawn)
    if lost:
        raise model.IllegalTransition(f"input keys withdrawn earlier: {lost}")
    issued = task.issued
    fresh = {key: request for key, request in requests.items() if key not in issued}
    return model.request_input(task, fresh, now_ms) if fresh else task


def asking(requests: Mapping[str, InputRequest], *, rerun: bool) -> Move:
    """The move that records ``requests`` on the task, all in one write.

    The task holds the request objects themselves, which write their wire
    form when the task is read or stored: the tool's frame keeps them alive
    while it waits anyway. A re-run asks only what its first run did not
    (:func:`resume_input`).
    """
    if rerun:
        return lambda task, now: resume_input(task, requests, now)
    return lambda task, now: model.request_input(task, requests, now)


def withdrawing(keys: tuple[str, ...]) -> Move:
    """The move that withdraws ``keys``: nobody waits for them any more."""
    return lambda task, now: model.withdraw(task, keys, now)


def failure(error: McpError) -> Move:
    """The move that ends a task ``failed`` with ``error`` (SEP-2663 §Task Execution Errors)."""
    wire = error.to_wire()
    return lambda task, now: model.fail(task, wire, now)


def outcome(task_id: str, result: Any) -> Move:
    """The move for what a job returned: ``completed`` if a JSON object, else a -32603."""
    if is_json_object(result):
        return lambda task, now: model.complete(task, result, now)
    log.error("task %s: the job returned %r, not a JSON object", task_id, result)
    return failure(InternalError("Task worker returned a non-JSON result"))


@attrs.define(eq=False, repr=False)
class TaskRunner:
    """Creates, runs, answers and cancels tasks; see the module docstring."""

    store: TaskStore = attrs.field(factory=MemoryStore)
    clock: Clock = Clock()
    limits: Limits = Limits()
    # ttlMs of new tasks, counted from creation; None is unlimited (T-18).
    ttl_ms: int | None = 3_600_000
    poll_interval_ms: int | None = 500
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
    # The server-lifetime nursery, while :meth:`run` runs.
    _root: trio.Nursery | None = None
    # Set once shutdown began: workers stop without writing for themselves.
    _stopping: bool = False
    # task_id -> its worker, while the task's nursery is open.
    _workers: dict[str, Worker] = attrs.field(factory=dict)

    # --- the server-lifetime nursery ---------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own every worker, the reaper, renewals and recovery until cancelled.

        The workers run under a shielded scope, so a shutdown reaches this
        body first: it marks the runner stopping, then cancels them all.
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
                await nursery.start(self.store.watch, self._react)
                self._root = nursery
                nursery.start_soon(self._reap)
                nursery.start_soon(self._renew)
                nursery.start_soon(self._recover)
                task_status.started()
        self._root = None
        with trio.CancelScope(shield=True, deadline=trio.current_time() + WRITE_GRACE):
            try:
                await self.store.release(self.owner)
            except StoreUnavailable as error:
                log.warning("leases not released at shutdown: %s", error)

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
            await self.store.create(stored, self.limits.capacity, now)
        except CapacityExceeded as full:
            del self._workers[task.task_id]
            raise self.limits.refusal(full.limit, shared=scope == ANONYMOUS) from None
        except BaseException:
            del self._workers[task.task_id]
            raise
        worker.stored = True
        log.info("task %s created", task.task_id)
        self._root.start_soon(self._supervise, worker, job, creator, name=WORKER_NAME)
        return task

    async def _supervise(
        self,
        worker: Worker,
        job: Job,
        creator: RequestContext,
    ) -> None:
        """One task's life: its nursery, then its outcome.

        The job runs as the body of the task's nursery, in this Trio task;
        child tasks the tool starts through ``ctx.nursery`` run beside it.
        The nursery closes once all of them have ended, and only then is the
        outcome written, once. A stop (``tasks/cancel``, the TTL, lease loss)
        cancels the nursery's own scope: every child and the job get
        ``trio.Cancelled``, the nursery absorbs it, and nothing is written.
        Shutdown cancels the scope around every worker, to the same effect.

        The nursery's scope is the task's one cancel handle, with no second
        scope around it: one nursery per task costs Trio its Task, the
        nursery and one cancel scope, and no more.
        """
        try:
            # A stop that came before this task's first step (a cancel right
            # after creation) is kept by the worker: end here, before the job
            # has run at all; so does a shutdown that came first.
            if worker.stopped():
                return
            await trio.lowlevel.checkpoint_if_cancelled()
            try:
                async with trio.open_nursery() as nursery:
                    worker.guard(nursery.cancel_scope)
                    context = self._detach(creator, worker, nursery)
                    # This frame lives as long as the task: let go of the
                    # creating request's context (and its stream) now,
                    # or every parked task keeps it alive.
                    del creator
                    result = await job(context)
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
                    await self._write(worker, move)
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
            runner=self,
            worker=worker,
        )

    # --- transitions ------------------------------------------------------------

    async def _transition(
        self,
        scope: str,
        task_id: str,
        move: Move,
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
            try:
                await self.store.compare_and_set(scope, after, before.revision, fence=fence)
            except Conflict:
                before = None
                continue
            if after.status is not before.status:
                log.info("task %s %s", task_id, after.status.value)
            return before, after

    async def _write(self, worker: Worker, move: Move) -> None:
        """A worker's own write, under its lease generation.

        Dropped if the task expired or was reaped meanwhile; if the lease is
        no longer this worker's, the worker is stopped instead. While the
        store cannot be reached, the write waits and tries again: an outage
        never loses a worker's result, and the lease still decides whether
        it may be written once the store is back.

        The write starts from the worker's own view of its task: a worker's
        writes mostly follow its own last one, so most take one store round
        trip (the compare-and-set) instead of two. What it wrote becomes its
        view at once, before the store's announcement of it comes back.
        """
        delay = STORE_RETRY_FIRST
        while True:
            try:
                _, after = await self._transition(
                    worker.scope, worker.task_id, move, worker.generation, worker.latest
                )
            except TaskNotFound:
                log.info("task %s is gone; its worker's write is dropped", worker.task_id)
            except LeaseLost:
                log.info("task %s: lease lost; the worker stops without writing", worker.task_id)
                worker.stop("lease lost")
            except StoreUnavailable as error:
                log.warning("task %s: write waits for the store: %s", worker.task_id, error)
                await trio.sleep(delay)
                delay = min(delay * 2, STORE_RETRY_CAP)
                continue
            else:
                worker.see(after)
            return

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

        await self._transition(scope, task_id, answer)

    async def cancel(self, scope: str, task_id: str) -> None:
        """Write ``cancelled``; the announcement stops the worker. Terminal: left as is."""
        await self._transition(scope, task_id, model.cancel)

    async def report(self, worker: Worker, message: str) -> None:
        """A worker's status message, written by :func:`~presa_trio.tasks.model.report`."""
        await self._write(worker, lambda task, now: model.report(task, message, now))

    async def wait_inputs(self, worker: Worker, requests: Mapping[str, InputRequest]) -> Answers:
        """Park ``worker`` until every key of ``requests`` is answered; the answers, typed.

        The requests are recorded in one write (SEP-2663 §Task Update
        Requests), then the worker's Trio task parks itself
        (``trio.lowlevel.wait_task_rescheduled``) and :meth:`Worker.see`
        reschedules it whenever the store announces a change of the task:
        one wake-up per task, checked against the inbox, instead of an Event
        and its waiting frames kept by every parked task. A wake-up that
        finds keys still unanswered parks again, so a partial update is a
        partial wake-up (T-45).

        If the wait ends early by the tool's own doing (its timeout), the
        keys still outstanding are withdrawn, so the task never shows
        requests nobody waits for. That write is shielded and bounded. A
        wait ended by the task's own stop (cancel, TTL, lease loss, shutdown)
        writes nothing: the task's state is not the worker's to change then.
        """
        keys = tuple(requests)
        await self._write(worker, asking(requests, rerun=worker.rerun))
        # This frame lives as long as the wait: keep the keys, not the requests.
        del requests
        answers = worker.answers(keys)
        try:
            # Woken on every announced change of the task, parked again until
            # the inbox holds every key: a partial update is a partial wake-up.
            while answers is None:
                await trio.lowlevel.wait_task_rescheduled(worker.park())
                answers = worker.answers(keys)
        finally:
            if not (answers is not None or worker.stopped() or self._stopping):
                with trio.CancelScope(shield=True, deadline=trio.current_time() + WRITE_GRACE):
                    await self._write(worker, withdrawing(keys))
        return Answers(answers)

    # --- what the store announces ------------------------------------------------

    def _react(self, event: StoreEvent) -> None:
        """Bring this process's view in line with one announced change."""
        if event is RESYNC:
            if self._root is not None:
                self._root.start_soon(self._resync)
            return
        if isinstance(event, Deleted):
            gone = self._workers.get(event.task_id)
            if gone is not None:
                gone.stop("ttlMs elapsed")
            return
        assert isinstance(event, Changed)
        stored = event.stored
        self.on_change(stored.scope, stored.task)
        worker = self._workers.get(stored.task_id)
        if worker is None:
            return
        lease = stored.lease
        if stored.task.status is Status.CANCELLED:
            worker.stop("tasks/cancel")
        elif lease is None:
            # A finished task's lease may be gone with it (store rule 4): its
            # worker has just written the outcome. Any other has lost it.
            if not stored.task.terminal:
                worker.stop("lease lost")
        elif lease.owner != self.owner:
            worker.stop("lease lost")
        elif lease.generation > worker.generation:
            # This process claimed its own lapsed lease (it was too slow to
            # renew): the worker is still here, so it runs on under the new
            # generation instead of being started again.
            worker.generation = lease.generation
        worker.see(stored.task)

    async def _resync(self) -> None:
        """Announcements may have been lost: re-read every task this process runs.

        A task whose creation is still being stored is left out: read now, it
        would look deleted, and its creation announces it anyway.
        """
        for task_id in [task_id for task_id, w in self._workers.items() if w.stored]:
            try:
                stored = await self.store.read(task_id)
            except StoreUnavailable as error:
                log.warning("resync: %s", error)
                return
            if stored is None:
                self._react(Deleted("", task_id))
            else:
                self._react(Changed(stored))

    # --- background duties ----------------------------------------------------------

    async def _reap(self) -> None:
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

    async def _renew(self) -> None:
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

    async def _recover(self) -> None:
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
                await self._resume(stored)
            if len(claimed) < CLAIM_BATCH:
                await trio.sleep(self.lease_ms / 2000)

    async def _resume(self, stored: StoredTask) -> None:
        """Run a claimed task again from its work description, or fail it if it may not."""
        assert stored.lease is not None
        if stored.task_id in self._workers:
            return  # this process's own worker, adopted by _react
        worker = Worker(stored.task_id, stored.scope, stored.lease.generation, stored.task, True)
        revived = None
        if stored.work is not None and stored.work.rerun:
            revived = self.revive(stored.work)
        if revived is None:
            log.info("task %s cannot run again: written failed", stored.task_id)
            await self._write(worker, failure(INTERRUPTED))
            return
        log.info("task %s recovered", stored.task_id)
        job, creator = revived
        assert self._root is not None
        self._workers[stored.task_id] = worker
        self._root.start_soon(self._supervise, worker, job, creator, name=WORKER_NAME)
