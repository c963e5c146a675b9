"""A task's worker: its stop handle, its input waits (one ``trio.Event`` per key), its moves.

The :class:`~presa_trio.tasks.supervisor.Supervisor` opens one nursery per
task and runs the task's job in it; this module holds what that nursery is
seen through, and what the worker writes:

- :class:`Worker` — the running side of one task: the task's nursery's
  cancel scope, the one handle every stop goes through, and the
  ``trio.Event`` of each input key the job waits for. An announced state
  of the task sets the Events of exactly the keys it answered
  (:meth:`Worker.see`), so a partial update is a partial wake-up
  (SEP-2663 §Task Update Requests).
- :class:`Move` — a pure move of the state machine, named by what it writes,
  so a write the store refuses can say what could not be stored.

The job's side, the creating request's context detached, is
:class:`~presa_trio.tasks.context.WorkerContext`.

Spec: SEP-2663 §Task Update Requests, §Task Execution Errors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs
import trio

from presa_trio.server.faults import report_fault
from presa_trio.tasks import model
from presa_trio.tasks.model import Task
from presa_trio.wire.envelope import compact_encoder, with_reserve
from presa_trio.wire.errors import InternalError, McpError
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import InputRequest

log = logging.getLogger(__name__)


@attrs.define(eq=False, weakref_slot=False)
class Worker:
    """The running side of one task: how to stop it, what it waits for, the task as last seen.

    Ten thousand of these may be parked on input at once, so a worker holds
    no more than it must: the task's nursery's own cancel scope is the stop
    handle (no second scope around it), and the Events exist only while
    their keys are awaited (the shields of writes, only while one is made).
    """

    task_id: str
    # The access scope of the creating request; the worker writes within it.
    scope: str
    # The lease generation this worker runs under; its writes carry it.
    generation: int
    # The task as the store last announced it (or as this worker last wrote it).
    latest: Task
    # Whether this run is a recovery: it may ask again what an earlier run asked.
    rerun: bool = False
    # False while its creation is still being stored: a lease renewal that
    # runs meanwhile must not find the task missing and call its lease lost.
    stored: bool = True
    # Why the worker was stopped (tasks/cancel, the TTL, lease loss, shutdown); None while it
    # may run.
    _stop_reason: str | None = None
    # What a stop cancels: the task's nursery's scope, then the scope of its final write.
    _cancel_scope: trio.CancelScope | None = None
    # The shielded scopes of writes in flight (:meth:`shielded`); None while there are none.
    _shields: list[trio.CancelScope] | None = None
    # Input key -> the Event its waiter waits on, for each key not yet answered.
    _waiting: dict[str, trio.Event] | None = None

    def see(self, task: Task) -> None:
        """Take an announced state of the task; set the Events of the keys it answered."""
        if task.revision < self.latest.revision:
            return
        self.latest = task
        waiting = self._waiting
        if waiting:
            for key in [key for key in waiting if key in task.inbox]:
                waiting.pop(key).set()

    def stop(self, reason: str) -> None:
        """Stop the worker: cancel its scope now, or as soon as it has one, and its shields."""
        if self._stop_reason is None:
            self._stop_reason = reason
        if self._cancel_scope is not None:
            self._cancel_scope.cancel(reason=reason)
        for shield in self._shields or ():
            shield.cancel(reason=reason)

    def stopped(self) -> bool:
        """Whether the worker was stopped: it writes nothing for its task any more."""
        return self._stop_reason is not None

    def guard(self, cancel_scope: trio.CancelScope) -> None:
        """From now on a stop cancels ``cancel_scope`` (at once, if one came already)."""
        self._cancel_scope = cancel_scope
        if self._stop_reason is not None:
            cancel_scope.cancel(reason=self._stop_reason)

    @contextmanager
    def shielded(self, seconds: float) -> Iterator[None]:
        """A shielded scope for a write the worker makes while its own wait is cancelled.

        The shield keeps the cancel that ended the wait (the tool's own
        timeout) from ending the write too; it lasts at most ``seconds``, and
        a stop of the worker (``tasks/cancel``, the TTL, lease loss, shutdown)
        ends it at once: a shield never holds a stop or a shutdown back.
        """
        with trio.CancelScope(shield=True, deadline=trio.current_time() + seconds) as shield:
            if self._stop_reason is not None:
                shield.cancel(reason=self._stop_reason)
            shields = self._shields = self._shields or []
            shields.append(shield)
            try:
                yield
            finally:
                shields.remove(shield)
                if not shields:
                    self._shields = None

    def expect(self, keys: tuple[str, ...]) -> bool:
        """Give each of ``keys`` not answered yet a ``trio.Event``; whether any was not.

        :meth:`see` sets a key's Event when an announced state answers it,
        and drops it. Several waits of one task (from child tasks of the
        tool) share the table, each with its own keys.
        """
        pending = [key for key in keys if key not in self.latest.inbox]
        if pending:
            waiting = self._waiting = {} if self._waiting is None else self._waiting
            for key in pending:
                waiting[key] = trio.Event()
        return bool(pending)

    def awaited(self, keys: tuple[str, ...]) -> trio.Event | None:
        """The Event of the first of ``keys`` still unanswered; None once all are set."""
        waiting = self._waiting or {}
        return next((waiting[key] for key in keys if key in waiting), None)

    def forget(self, keys: tuple[str, ...]) -> None:
        """Nobody waits for ``keys`` any more."""
        if self._waiting is not None:
            for key in keys:
                self._waiting.pop(key, None)
            if not self._waiting:
                self._waiting = None

    def answers(self, keys: tuple[str, ...]) -> dict[str, JSONObject]:
        """The answers to ``keys``, all of them in the inbox."""
        inbox = self.latest.inbox
        return {key: inbox[key] for key in keys}


# --- the moves a worker writes ---------------------------------------------------------


@attrs.frozen
class Move:
    """A pure move of the state machine, given the task and the time (epoch ms).

    ``what`` names what the move writes ("the task's result"), for the
    error of a task whose write the store refused. ``again`` is the move to
    try once a try may have committed unseen (the store unavailable, its
    answer lost), for a move that would refuse its own write: None when
    the move, applied twice, changes nothing the second time.
    """

    what: str
    apply: Callable[[Task, int], Task]
    again: Callable[[Task, int], Task] | None = None

    def retried(self) -> Move:
        """The move to try after a try that may have committed unseen."""
        return self if self.again is None else Move(self.what, self.again)


def _not_json(value: Any) -> Any:
    raise TypeError(f"a {type(value).__name__} is not JSON")


#: Strict JSON (no NaN), the encoder built once; anything else is a TypeError.
_strict_json = compact_encoder(_not_json)


def is_json_object(value: Any) -> bool:
    """Whether ``value`` is a dict that encodes as strict JSON (no NaN, no sets…),
    with :data:`~presa_trio.wire.envelope.WRITE_RESERVE` levels of nesting to spare:
    every ``tasks/get`` and ``notifications/tasks`` of its task writes it later."""
    if not isinstance(value, dict):
        return False
    try:
        _strict_json(with_reserve(value))
    except (TypeError, ValueError, RecursionError):
        return False
    return True


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
    (:func:`resume_input`); so does a write tried again after one that may
    have committed unseen, which must not refuse its own requests.
    """

    def resume(task: Task, now_ms: int) -> Task:
        return resume_input(task, requests, now_ms)

    if rerun:
        return Move("the task's input requests", resume)
    return Move(
        "the task's input requests",
        lambda t, now: model.request_input(t, requests, now),
        again=resume,
    )


def withdrawing(keys: tuple[str, ...]) -> Move:
    """The move that withdraws ``keys``: nobody waits for them any more."""
    return Move("the withdrawal of input requests", lambda t, now: model.withdraw(t, keys, now))


def reporting(message: str) -> Move:
    """The move that sets the task's status message (:func:`~presa_trio.tasks.model.report`)."""
    return Move("the task's status message", lambda t, now: model.report(t, message, now))


def failure(error: McpError) -> Move:
    """The move that ends a task ``failed`` with ``error`` (SEP-2663 §Task Execution Errors).

    An error whose code is no integer or a reserved one the spec does not define
    (:meth:`~presa_trio.wire.errors.McpError.is_well_formed`), whose message is no
    string, or whose ``data`` JSON cannot hold is the job's bug: the task holds a
    generic -32603 instead, the detail logged, as the plain call answers
    (:func:`~presa_trio.server.dispatch.encode_error`); the model would refuse a
    code that is no integer or a message that is no string (the task left
    ``working``), and stored as it was, every ``tasks/get`` of the task would fail
    to be written. So does ``data``
    nested too deeply to be written with
    :data:`~presa_trio.wire.envelope.WRITE_RESERVE` levels to spare
    (spec-notes §25).
    """
    wire = error.to_wire()
    if not (error.is_well_formed() and is_json_object(wire)):
        fault = report_fault(
            log, "a task's error %r cannot be written as a JSON-RPC error", error.code
        )
        wire = fault.to_wire()
    return Move("the task's error", lambda t, now: model.fail(t, wire, now))


def outcome(task_id: str, result: Any) -> Move:
    """The move for what a job returned: ``completed`` if a JSON object, else a -32603."""
    if is_json_object(result):
        return Move("the task's result", lambda t, now: model.complete(t, result, now))
    log.error("task %s: the job returned %r, not a JSON object", task_id, result)
    return failure(InternalError("Task worker returned a non-JSON result"))
