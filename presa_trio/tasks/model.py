"""The Task record and its state machine: pure data in, pure data out.

A task is the server-side state of one ``tools/call`` that answered with a
``CreateTaskResult`` instead of its result (SEP-2663 §Tasks). This module is
the whole state machine: every status change goes through one of the
transition functions below, and nothing else in the package edits a
:class:`Task`. It imports neither Trio nor the server, so it is tested on its
own, the way h11 tests its ``_state.py``.

House rules
-----------
1. A task is immutable. A transition returns a new task with ``revision``
   one higher; the store's compare-and-set is keyed on that number.
2. Terminal statuses absorb. Any transition on a ``completed``, ``failed``
   or ``cancelled`` task returns *the same object*: a late worker result, a
   second cancel or an answer to an old input request changes nothing
   (overview §Task lifecycle; T-66).
3. Every other illegal move raises :class:`IllegalTransition` and, the task
   being immutable, changes nothing. A malformed argument (an empty key, a
   result that is not an object) is illegal whatever the status.
4. ``status`` is ``input_required`` exactly when ``input_requests`` (the
   outstanding requests) is non-empty (SEP-2663 §Task Update Requests; D-16).
5. An input key is issued once per task, ever: ``issued`` remembers every
   key, answered or not, and a request for any of them is illegal (T-37–T-39).

Time is passed in, never read: ``now`` is the runner's clock in seconds (it
fixes the expiry deadline) and ``stamp`` is the wall-clock ISO 8601 string
written to ``createdAt``/``lastUpdatedAt``.

Spec: SEP-2663 §Tasks, §Task Status, §Task Polling (Response), §Task Update
Requests; tasks ref §4.1, §4.2.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

JSONObject = dict[str, Any]


class Status(enum.Enum):
    """The five task statuses, spelt as on the wire (SEP-2663 §Task Status)."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL: frozenset[Status] = frozenset({Status.COMPLETED, Status.FAILED, Status.CANCELLED})

#: Where each status may go next (tasks ref §4.1). ``input_required`` may
#: stay ``input_required``: more input asked, or one of several answered.
#: Terminal statuses go nowhere; rule 2 makes every move on them a no-op.
TRANSITIONS: Mapping[Status, frozenset[Status]] = {
    Status.WORKING: frozenset(
        {Status.INPUT_REQUIRED, Status.COMPLETED, Status.FAILED, Status.CANCELLED}
    ),
    Status.INPUT_REQUIRED: frozenset(
        {Status.WORKING, Status.INPUT_REQUIRED, Status.COMPLETED, Status.FAILED, Status.CANCELLED}
    ),
    Status.COMPLETED: frozenset(),
    Status.FAILED: frozenset(),
    Status.CANCELLED: frozenset(),
}

#: presa's status messages: fixed plain text, never exception detail, since a
#: client may show them to the model (SEP-2663 §Tasks ``statusMessage``; D-11).
#: A failed task's message is its JSON-RPC error message instead.
STATUS_MESSAGES: Mapping[Status, str] = {
    Status.WORKING: "The task is running",
    Status.INPUT_REQUIRED: "The task is waiting for input",
    Status.CANCELLED: "The task was cancelled",
}


class IllegalTransition(ValueError):
    """A move the state machine forbids; the task it was tried on is unchanged."""


@attrs.frozen
class Task:
    """One task as the server knows it; :meth:`to_wire` is what clients see."""

    # Server-generated, unguessable, never reused (SEP-2663 §Security Implications).
    task_id: str
    status: Status
    # ISO 8601 UTC with milliseconds. ``created_at`` never changes;
    # ``last_updated_at`` moves on every status or input change, never on a read.
    created_at: str
    last_updated_at: str
    # The advertised lifetime from creation in ms; ``None`` is unlimited.
    ttl_ms: int | None
    # When the TTL elapses, in runner-clock seconds; ``None`` with ``ttl_ms``.
    expires_at: float | None
    poll_interval_ms: int | None
    # Outstanding input requests by key, in wire form; non-empty iff input_required.
    input_requests: Mapping[str, JSONObject] = attrs.field(factory=dict)
    # Every input key ever issued to this task (rule 5).
    issued: frozenset[str] = frozenset()
    # The request's final result (completed) or JSON-RPC error (failed); else None.
    result: JSONObject | None = None
    error: JSONObject | None = None
    # Bumped by every transition; the compare-and-set token of the store.
    revision: int = 0

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def status_message(self) -> str | None:
        if self.status is Status.FAILED and self.error is not None:
            return str(self.error["message"])
        return STATUS_MESSAGES.get(self.status)

    def expired(self, now: float) -> bool:
        """Whether the TTL has elapsed at runner time ``now`` (counted from creation)."""
        return self.expires_at is not None and now >= self.expires_at

    def to_wire(self) -> JSONObject:
        """The ``Task`` shape: the body of a ``CreateTaskResult`` (SEP-2663 §Task Creation).

        ``ttlMs`` is always present, ``null`` when unlimited; there is no
        ``result``, ``error`` or ``inputRequests`` here (T-17, T-21).
        """
        wire: JSONObject = {
            "taskId": self.task_id,
            "status": self.status.value,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.last_updated_at,
            "ttlMs": self.ttl_ms,
        }
        if self.poll_interval_ms is not None:
            wire["pollIntervalMs"] = self.poll_interval_ms
        message = self.status_message
        if message is not None:
            wire["statusMessage"] = message
        return wire

    def detailed(self) -> JSONObject:
        """The ``DetailedTask`` shape a ``tasks/get`` returns: the payload of its status.

        Spec: SEP-2663 §Task Polling (Response) items 1–5; T-27–T-31.
        """
        wire = self.to_wire()
        if self.status is Status.INPUT_REQUIRED:
            wire["inputRequests"] = dict(self.input_requests)
        elif self.status is Status.COMPLETED:
            wire["result"] = self.result
        elif self.status is Status.FAILED:
            wire["error"] = self.error
        return wire


# --- transitions ------------------------------------------------------------------


def create(
    task_id: str, *, now: float, stamp: str, ttl_ms: int | None, poll_interval_ms: int | None
) -> Task:
    """A new task, ``working``: the seed a ``CreateTaskResult`` carries (T-22)."""
    if ttl_ms is not None and ttl_ms <= 0:
        raise ValueError("ttlMs must be positive, or None for unlimited")
    expires_at = None if ttl_ms is None else now + ttl_ms / 1000
    return Task(task_id, Status.WORKING, stamp, stamp, ttl_ms, expires_at, poll_interval_ms)


def _move(task: Task, target: Status, stamp: str, **changes: Any) -> Task:
    """Apply one move: rule 2 (absorb), then the table (rule 3), then rule 1."""
    if task.terminal:
        return task
    if target not in TRANSITIONS[task.status]:
        raise IllegalTransition(f"can't go to {target.value} from {task.status.value}")
    return attrs.evolve(
        task, status=target, last_updated_at=stamp, revision=task.revision + 1, **changes
    )


def request_input(task: Task, requests: Mapping[str, JSONObject], stamp: str) -> Task:
    """The worker needs input: record ``requests`` (key -> wire InputRequest) at once.

    All keys are added in one move, so a client never sees half of a batch.
    A key issued before — answered, withdrawn or still outstanding — is
    illegal, even for an identical request (SEP-2663 §Task Update Requests).
    """
    if not requests or not all(isinstance(key, str) and key for key in requests):
        raise IllegalTransition("request_input needs requests under non-empty string keys")
    if task.terminal:
        return task
    reused = sorted(key for key in requests if key in task.issued)
    if reused:
        raise IllegalTransition(f"input keys already issued for this task: {reused}")
    return _move(
        task,
        Status.INPUT_REQUIRED,
        stamp,
        input_requests={**task.input_requests, **requests},
        issued=task.issued | frozenset(requests),
    )


def _drop_inputs(task: Task, keys: Iterable[str], stamp: str) -> Task:
    """Remove outstanding keys; back to ``working`` when none are left (rule 4)."""
    gone = set(keys) & set(task.input_requests)
    if not gone:
        return task
    remaining = {k: r for k, r in task.input_requests.items() if k not in gone}
    target = Status.INPUT_REQUIRED if remaining else Status.WORKING
    return _move(task, target, stamp, input_requests=remaining)


def fulfil(task: Task, keys: Iterable[str], stamp: str) -> Task:
    """``tasks/update`` answered ``keys``; only the outstanding ones count.

    Keys never issued, already answered or withdrawn are ignored, and an
    update that matches nothing returns the task unchanged (SEP-2663 §Task
    Update Requests (Response); T-44). A strict subset is a partial
    fulfilment: the rest stay outstanding (T-45).
    """
    return _drop_inputs(task, keys, stamp)


def withdraw(task: Task, keys: Iterable[str], stamp: str) -> Task:
    """The worker stopped waiting for ``keys`` (it moved on): they are superseded.

    Their keys stay issued, so a late answer is ignored like any other
    answer to a key that is not outstanding (SEP-2663 §Task Update Requests).
    """
    return _drop_inputs(task, keys, stamp)


def complete(task: Task, result: JSONObject, stamp: str) -> Task:
    """The request produced its result, ``isError`` or not (SEP-2663 §Task Status)."""
    if not isinstance(result, dict):
        raise IllegalTransition("a completed task's result must be a JSON object")
    return _move(task, Status.COMPLETED, stamp, input_requests={}, result=result)


def fail(task: Task, error: JSONObject, stamp: str) -> Task:
    """The request ended in a JSON-RPC error, carried as ``{code, message, data?}``.

    Spec: SEP-2663 §Task Execution Errors — ``failed`` is for JSON-RPC errors only.
    """
    if not (isinstance(error.get("code"), int) and isinstance(error.get("message"), str)):
        raise IllegalTransition("a failed task's error needs an integer code and a message")
    return _move(task, Status.FAILED, stamp, input_requests={}, error=error)


def cancel(task: Task, stamp: str) -> Task:
    """``tasks/cancel`` was honoured; outstanding requests are dropped with the work."""
    return _move(task, Status.CANCELLED, stamp, input_requests={})
