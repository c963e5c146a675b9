"""Running tasks: one server-lifetime nursery, one nursery per task, one Event per input key.

A task outlives the request that created it, so its worker cannot live in
the request's nursery. :meth:`TaskRunner.run` opens a nursery for the
server's lifetime (inside the ASGI lifespan, through the extension's ``run``
hook); every task gets its own nursery inside it, whose cancel scope is the
one handle ``tasks/cancel``, the TTL reaper and server shutdown use to stop it.

Theory of operation
-------------------
- **Create.** :meth:`TaskRunner.start` uses ``nursery.start``: it returns
  only once the task is in the store and its cancel scope exists, so the
  ``CreateTaskResult`` can never name a task that ``tasks/get`` or
  ``tasks/cancel`` would not find (SEP-2663 §Task Creation; T-23).
- **Input.** A worker that needs input calls :func:`ask`. Its requests are
  recorded on the task in one transition (status ``input_required``) and the
  worker waits on one fresh :class:`trio.Event` per key.
- **Update.** ``tasks/update`` applies :func:`~presa_trio.tasks.model.fulfil`,
  then hands each *matched* response to the worker and sets only that key's
  event. Other keys stay parked: a partial update is a partial wake-up (T-45).
- **Cancel.** ``tasks/cancel`` writes ``cancelled`` first, then cancels the
  task's scope. Whatever the worker was about to write meets a terminal
  task and is dropped by the model (T-49, T-66).
- **Publish.** Every stored change of a task is handed to ``on_change``;
  the extension turns it into ``notifications/tasks`` for the listen
  streams that asked for that task. Changes are pushed, never polled.
- **Finish.** The worker's outcome is written once: a JSON object result is
  ``completed``; a raised :class:`~presa_trio.wire.errors.McpError` is
  ``failed`` with that error; anything else is ``failed`` with a generic
  -32603, the detail going to the log only (SEP-2663 §Task Execution Errors),
  mapped by :func:`~presa_trio.server.tools.error_for` as on the plain path.

Every method that changes a task is synchronous: with the in-memory store a
read-modify-write never yields, so no other Trio task can slip in between.
Time comes from a :class:`Clock`, whose ``now`` is Trio's clock, so
``MockClock`` drives TTLs in tests.

Spec: SEP-2663 §Task Creation, §Task Update Requests, §Task Cancellation;
tasks ref §5, §6.1; DESIGN.md "Tasks: one nursery per task".
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs
import trio

from presa_trio.server.context import RequestContext
from presa_trio.server.tools import error_for
from presa_trio.tasks import model
from presa_trio.tasks.model import JSONObject, Task
from presa_trio.tasks.store import Conflict, MemoryStore, TaskNotFound, TaskStore
from presa_trio.wire.errors import InternalError, McpError, MissingRequiredClientCapability
from presa_trio.wire.mrtr import InputRequest, answers_for

log = logging.getLogger(__name__)

#: Told of every stored change: the access scope and the task as it now is.
ChangeListener = Callable[[str, Task], None]


def ignore_change(scope: str, task: Task) -> None:
    """The default listener: nobody subscribes."""


#: What a task runs: given its detached context, the request's final result as
#: a JSON object, or a raised error (T-12: not tied to ``tools/call``).
Job = Callable[["WorkerContext"], Awaitable[JSONObject]]


def new_task_id() -> str:
    """192 random bits, base64url: unguessable and ``Mcp-Name``-safe (T-64; D-25)."""
    return secrets.token_urlsafe(24)


@attrs.frozen
class Clock:
    """Where the runner reads time: ``now`` for deadlines, ``wall`` for timestamps."""

    # Seconds on Trio's clock; the reaper sleeps on the same clock.
    now: Callable[[], float] = trio.current_time
    # Seconds since the epoch, for createdAt/lastUpdatedAt.
    wall: Callable[[], float] = time.time

    def stamp(self) -> str:
        """RFC 3339 UTC with milliseconds, e.g. ``2026-11-03T18:04:05.123Z`` (D-08)."""
        moment = datetime.fromtimestamp(self.wall(), UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def capacity_error(
    limit: str, *, retryable: bool, message: str = "Task capacity exhausted"
) -> McpError:
    """-32603 naming the limit hit, and whether trying again later can succeed.

    presa chooses: the SEP defines no capacity error, so every limit is an
    internal error with ``data: {retryable, limit}`` (tasks ref §3.2; D-30).
    """
    return InternalError(message, {"retryable": retryable, "limit": limit})


@attrs.frozen
class Limits:
    """Bounds on what tasks may take; each is checked before anything is stored."""

    # Non-terminal tasks overall, and per access scope.
    max_active: int = 1000
    max_active_per_scope: int = 100
    # Size of a task's input (the tool arguments) as compact UTF-8 JSON.
    max_input_bytes: int = 256 * 1024

    def check_active(self, total: int, in_scope: int) -> None:
        """The caller's own limit first: it names the limit the caller can act on."""
        if in_scope >= self.max_active_per_scope:
            raise capacity_error("max_active_tasks_per_scope", retryable=True)
        if total >= self.max_active:
            raise capacity_error("max_active_tasks", retryable=True)

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
    """The running side of one task: how to stop it, and what it waits for."""

    task_id: str
    # The access scope of the creating request; the worker writes within it.
    scope: str
    # The task nursery's scope: cancelled by tasks/cancel, the reaper, or shutdown.
    cancel_scope: trio.CancelScope
    # Input key -> the Event its answer sets. A fresh Event per key: once set,
    # an Event cannot un-happen, and keys are never reused anyway.
    waiting: dict[str, trio.Event] = attrs.field(factory=dict)
    # Input key -> the answer tasks/update delivered, until the worker takes it.
    answers: dict[str, JSONObject] = attrs.field(factory=dict)

    def deliver(self, key: str, answer: JSONObject) -> None:
        """Hand over one answer and wake whoever waits for exactly that key."""
        event = self.waiting.pop(key, None)
        if event is not None:
            self.answers[key] = answer
            event.set()


@attrs.define(eq=False)
class WorkerContext(RequestContext):
    """The context a task's worker runs with: the creating request, detached.

    It keeps what the request declared (version, capabilities, the verified
    multi round-trip answers) and loses its stream: ``send`` drops every
    message, and the progress token and log level are gone, so a task never
    sends progress or log notifications (SEP-2663 §Task Status Notifications;
    tasks ref §5.3; T-55).
    """

    runner: TaskRunner = attrs.field(kw_only=True, repr=False)
    worker: Worker = attrs.field(kw_only=True)


async def drop(message: dict[str, Any]) -> None:
    """A worker's ``send``: there is no stream to write to."""


async def ask(ctx: RequestContext, requests: Mapping[str, InputRequest]) -> dict[str, JSONObject]:
    """Ask the client for input; the answers by key (raw, as the client sent them, checked).

    One call serves both ways a tool may run, and the tool reads the same:

    - in a task, the requests go on the task (``input_required``) and the
      call returns once ``tasks/update`` has answered every key;
    - in a plain request, it returns the answers once the client has given
      them all (multi round-trip retries); until then it raises
      :class:`~presa_trio.wire.mrtr.InputPending`, which the tools boundary
      answers as ``input_required`` for the missing keys, carrying the
      answers already given in ``requestState``.

    Each answer is checked against the kind of its request (-32602 if it
    is not, say, a valid ``ElicitResult``). A request the creating
    request's capabilities do not allow is -32021 on both paths: here, in
    a task, before anything is recorded; on the plain path where the round
    closes (2026-07-28 basic/patterns/mrtr §Server Requirements; T-76; D-18).
    """
    if isinstance(ctx, WorkerContext):
        for request in requests.values():
            if not request.allowed_by(ctx.capabilities):
                raise MissingRequiredClientCapability.for_capability(request.capability)
        return await ctx.runner.wait_inputs(ctx.worker, requests)
    return answers_for(requests, ctx.input_responses, ctx.state)


def is_json_object(value: Any) -> bool:
    """Whether ``value`` is a dict that encodes as strict JSON (no NaN, no sets…)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return isinstance(value, dict)


@attrs.define(eq=False, repr=False)
class TaskRunner:
    """Creates, runs, answers and cancels tasks; see the module docstring."""

    store: TaskStore = attrs.field(factory=MemoryStore)
    clock: Clock = Clock()
    limits: Limits = Limits()
    # ttlMs of new tasks, counted from creation; None is unlimited (T-18).
    ttl_ms: int | None = 3_600_000
    poll_interval_ms: int | None = 500
    # How often the reaper deletes expired tasks, in clock seconds.
    reap_every: float = 60.0
    # Told of every stored change (status notifications); synchronous.
    on_change: ChangeListener = ignore_change
    # The server-lifetime nursery, while :meth:`run` runs.
    _root: trio.Nursery | None = None
    # task_id -> its worker, while the task's nursery is open.
    _workers: dict[str, Worker] = attrs.field(factory=dict)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own every worker and the reaper until cancelled (server shutdown)."""
        async with trio.open_nursery() as nursery:
            self._root = nursery
            try:
                nursery.start_soon(self._reap)
                task_status.started()
                await trio.sleep_forever()
            finally:
                self._root = None

    async def start(self, scope: str, job: Job, creator: RequestContext) -> Task:
        """Create a task running ``job`` and return its seed, once it is stored."""
        if self._root is None:
            raise RuntimeError("the task runner is not running")
        task = model.create(
            new_task_id(),
            now=self.clock.now(),
            stamp=self.clock.stamp(),
            ttl_ms=self.ttl_ms,
            poll_interval_ms=self.poll_interval_ms,
        )
        await self._root.start(self._supervise, scope, task, job, creator)
        return task

    async def _supervise(
        self,
        scope: str,
        task: Task,
        job: Job,
        creator: RequestContext,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        # The capacity check and the store write share one step: no checkpoint
        # between them, so two creations cannot both take the last slot.
        self.limits.check_active(self.store.active(), self.store.active(scope))
        task_id = task.task_id
        try:
            async with trio.open_nursery() as nursery:
                worker = Worker(task_id, scope, nursery.cancel_scope)
                self.store.create(scope, task)
                self._workers[task_id] = worker
                context = self._detach(creator, worker)
                task_status.started()
                # This frame lives as long as the task: let go of the creating
                # request's context (and its stream), the seed and the start
                # handshake now, or every parked task keeps them alive.
                del creator, task, task_status
                # The worker runs as the nursery's body, in this Trio task: one
                # Trio task per MCP task, and the nursery's cancel scope is the
                # task's. Work the job starts in the nursery is cancelled with it.
                await self._work(worker, job, context)
        finally:
            self._workers.pop(task_id, None)

    def _detach(self, creator: RequestContext, worker: Worker) -> WorkerContext:
        meta = attrs.evolve(creator.meta, progress_token=None, log_level=None)
        return WorkerContext(
            request_id=worker.task_id,
            method=creator.method,
            meta=meta,
            server=creator.server,
            send=drop,
            input_responses=creator.input_responses,
            state=creator.state,
            principal=creator.principal,
            runner=self,
            worker=worker,
        )

    async def _work(self, worker: Worker, job: Job, context: WorkerContext) -> None:
        """Run the job and write its outcome; ``trio.Cancelled`` passes through untouched."""
        try:
            result = await job(context)
        except* Exception as group:
            # The plain path's mapping: the job's own spec error, else -32603.
            self._write(worker, model.fail, error_for(group).to_wire())
        else:
            if is_json_object(result):
                self._write(worker, model.complete, result)
            else:
                log.error("task %s: the job returned %r, not a JSON object", worker.task_id, result)
                failure = InternalError("Task worker returned a non-JSON result")
                self._write(worker, model.fail, failure.to_wire())

    # --- transitions ------------------------------------------------------------

    def _transition(
        self, scope: str, task_id: str, move: Callable[..., Task], *args: Any
    ) -> tuple[Task, Task]:
        """Apply ``move`` by compare-and-set; return the task before and after.

        A lost race re-reads and re-applies: the move is a pure function of
        the task, so retrying it is always safe.
        """
        while True:
            before = self.store.get(scope, task_id, self.clock.now())
            after = move(before, *args, self.clock.stamp())
            if after is before:
                return before, after
            try:
                self.store.compare_and_set(scope, after, before.revision)
            except Conflict:
                continue
            self.on_change(scope, after)
            return before, after

    def _write(self, worker: Worker, move: Callable[..., Task], *args: Any) -> None:
        """A worker's own write; dropped if its task expired or was reaped meanwhile."""
        try:
            self._transition(worker.scope, worker.task_id, move, *args)
        except TaskNotFound:
            log.info("task %s is gone; its worker's write is dropped", worker.task_id)

    def knows(self, scope: str, task_id: str) -> bool:
        """Whether ``task_id`` names a live task in ``scope`` (another scope's: no)."""
        try:
            self.get(scope, task_id)
        except TaskNotFound:
            return False
        return True

    def get(self, scope: str, task_id: str) -> Task:
        """The task as stored; a pure read (SEP-2663 §Rationale, Splitting Reads; T-36)."""
        return self.store.get(scope, task_id, self.clock.now())

    def update(self, scope: str, task_id: str, answers: Mapping[str, JSONObject]) -> None:
        """Record ``answers`` and wake the worker for exactly the keys they matched."""
        before, after = self._transition(scope, task_id, model.fulfil, answers.keys())
        worker = self._workers.get(task_id)
        if worker is not None:
            for key in before.input_requests.keys() - after.input_requests.keys():
                worker.deliver(key, answers[key])

    def cancel(self, scope: str, task_id: str) -> None:
        """Write ``cancelled``, then stop the worker; a terminal task is left as is."""
        before, after = self._transition(scope, task_id, model.cancel)
        worker = self._workers.get(task_id)
        if after is not before and worker is not None:
            worker.cancel_scope.cancel(reason="tasks/cancel")

    async def wait_inputs(
        self, worker: Worker, requests: Mapping[str, InputRequest]
    ) -> dict[str, JSONObject]:
        """Park ``worker`` until every key of ``requests`` is answered.

        If the wait ends early (the tool's own timeout, a cancel), the keys
        still outstanding are withdrawn, so the task never shows requests
        nobody waits for.
        """
        wire = {key: request.to_wire() for key, request in requests.items()}
        self._transition(worker.scope, worker.task_id, model.request_input, wire)
        events = {key: trio.Event() for key in requests}
        worker.waiting.update(events)
        try:
            for event in events.values():
                await event.wait()
            return {key: worker.answers.pop(key) for key in requests}
        finally:
            unanswered = [key for key, event in events.items() if not event.is_set()]
            for key in requests:
                worker.waiting.pop(key, None)
                worker.answers.pop(key, None)
            if unanswered:
                self._write(worker, model.withdraw, unanswered)

    async def _reap(self) -> None:
        """Every ``reap_every`` seconds, delete expired tasks and stop their workers.

        presa chooses: an expired running task is forgotten, never rewritten
        to ``failed``; a terminal one is never rewritten at all (D-09, D-12).
        """
        while True:
            await trio.sleep(self.reap_every)
            for task_id in self.store.expire(self.clock.now()):
                worker = self._workers.get(task_id)
                if worker is not None:
                    worker.cancel_scope.cancel(reason="ttlMs elapsed")
