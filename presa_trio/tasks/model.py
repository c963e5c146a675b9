"""The Task record and its state machine: pure data in, pure data out.

A task is the server-side state of one ``tools/call`` that answered with a
``CreateTaskResult`` instead of its result (SEP-2663 §Tasks). This module is
the whole state machine: every status change goes through one of the
transition functions below, and nothing else in the package edits a
:class:`Task`. It imports neither Trio nor the server, so it is tested on its
own, the way h11 tests its ``_state.py``.

The machine is the table
------------------------
:data:`TRANSITIONS` maps a status and an :class:`Event` to the next status,
as h11's ``_state.py`` does. A transition function names its event; the
table decides where it leads, and an event the table does not list for the
current status is illegal. Nothing else picks a status. The statuses
themselves, shared with the client, are :class:`presa_trio.wire.tasks.Status`.

House rules
-----------
1. A task is immutable. A transition returns a new task with ``revision``
   one higher; the store's compare-and-set is keyed on that number.
2. Terminal statuses absorb. Any transition on a ``completed``, ``failed``
   or ``cancelled`` task returns *the same object*: a late worker result, a
   second cancel or an answer to an old input request changes nothing
   (SEP-2663 §Task Status; tasks overview).
3. Every other illegal move raises :class:`IllegalTransition` and, the task
   being immutable, changes nothing. A malformed argument (an empty key, a
   result that is not an object) is illegal whatever the status.
4. ``status`` is ``input_required`` exactly when ``input_requests`` (the
   outstanding requests) is non-empty (SEP-2663 §Task Update Requests).
5. An input key is issued once per task, ever: ``issued`` is every key,
   answered or not, and a request for any of them is illegal (SEP-2663 §Task Update
   Requests; spec-notes §15).
   A key is outstanding (``input_requests``), answered (``inbox``) or
   withdrawn (``withdrawn``), and ``issued`` is their union, so a parked
   task does not keep a set of the keys it already holds twice.
6. Answers are kept. ``inbox`` holds every answer ``tasks/update`` delivered
   while the task runs, so a worker run again after its process stopped gets
   them back instead of asking the client twice.
7. A worker's own status message (:func:`report`) describes the status it
   was written in: it is a move that keeps the status, and every status
   change drops it, back to presa's fixed text for the new status.
8. A task that ends keeps only what a ``tasks/get`` of it shows (its
   status, times, and result or error; SEP-2663 §Task Polling (Response)):
   its requests, answers and keys are dropped. Nothing can be asked of it
   or answered any more (rule 2), and it is stored until its TTL elapses,
   thousands of them at a time.

Time is passed in, never read: ``now_ms`` is wall-clock milliseconds since
the epoch. It stamps ``createdAt``/``lastUpdatedAt`` and fixes the expiry, and
it means the same in every process and after a restart; :func:`epoch_ms`
is the one clock the runtime and the stores read it from.

Spec: SEP-2663 §Tasks, §Task Status, §Task Polling (Response), §Task Update
Requests.
"""

from __future__ import annotations

import enum
import functools
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Protocol

import attrs

from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import TERMINAL, Status


class Event(enum.Enum):
    """What can happen to a task; the table says where each leads."""

    ASK = "ask"  # the worker issued input requests
    ANSWER_SOME = "answer_some"  # some outstanding keys left, others remain
    ANSWER_LAST = "answer_last"  # the last outstanding keys left
    COMPLETE = "complete"
    FAIL = "fail"
    CANCEL = "cancel"
    REPORT = "report"  # the worker set its status message; the status stays


#: The machine: status -> event -> next status. Terminal statuses have no
#: events; rule 2 makes every move on them a no-op before the table is read.
TRANSITIONS: Mapping[Status, Mapping[Event, Status]] = {
    Status.WORKING: {
        Event.REPORT: Status.WORKING,
        Event.ASK: Status.INPUT_REQUIRED,
        Event.COMPLETE: Status.COMPLETED,
        Event.FAIL: Status.FAILED,
        Event.CANCEL: Status.CANCELLED,
    },
    Status.INPUT_REQUIRED: {
        Event.REPORT: Status.INPUT_REQUIRED,
        Event.ASK: Status.INPUT_REQUIRED,
        Event.ANSWER_SOME: Status.INPUT_REQUIRED,
        Event.ANSWER_LAST: Status.WORKING,
        Event.COMPLETE: Status.COMPLETED,
        Event.FAIL: Status.FAILED,
        Event.CANCEL: Status.CANCELLED,
    },
    Status.COMPLETED: {},
    Status.FAILED: {},
    Status.CANCELLED: {},
}

#: presa's status messages: fixed plain text, never exception detail, since a
#: client may show them to the model (SEP-2663 §Tasks ``statusMessage``).
#: A failed task's message is its JSON-RPC error message instead, and a
#: worker may say more while its task runs (rule 7).
STATUS_MESSAGES: Mapping[Status, str] = {
    Status.WORKING: "The task is running",
    Status.INPUT_REQUIRED: "The task is waiting for input",
    Status.CANCELLED: "The task was cancelled",
}


#: The empty mapping of a task with no outstanding requests or no answers.
#: Read-only and shared: a task is immutable (rule 1), so every task can use
#: the same one instead of a dict of its own.
NOTHING: Mapping[str, JSONObject] = MappingProxyType({})
#: The empty key set, shared the same way.
NO_KEYS: frozenset[str] = frozenset()


class WritesWire(Protocol):
    """An input request that writes its own wire form, as :mod:`presa_trio.wire.mrtr`'s do."""

    def to_wire(self) -> JSONObject: ...


#: An outstanding input request as a task holds it: its wire form (an
#: ``InputRequest`` of schema ``$defs.InputRequests``), or an object that
#: writes it when it is read (:meth:`Task.requests_on_wire`).
Request = JSONObject | WritesWire


def wire_of(request: Request) -> JSONObject:
    """The wire form of one outstanding input request."""
    return request if isinstance(request, dict) else request.to_wire()


class IllegalTransition(ValueError):
    """A move the state machine forbids; the task it was tried on is unchanged."""


@functools.lru_cache(maxsize=4096)
def iso_stamp(at_ms: int) -> str:
    """RFC 3339 UTC with milliseconds, e.g. ``2026-11-03T18:04:05.123Z``.

    Kept for the last few thousand moments: every ``tasks/get`` and change
    notification formats a task's two timestamps, and they rarely change.
    """
    moment = datetime.fromtimestamp(at_ms / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch_ms() -> int:
    """This process's wall clock in epoch milliseconds: what every ``now_ms`` is."""
    return time.time_ns() // 1_000_000


# No weak reference slot: a parked task holds one, and nothing refers to it weakly.
@attrs.frozen(weakref_slot=False)
class Task:
    """One task as the server knows it; :meth:`to_wire` is what clients see."""

    # Server-generated, unguessable, never reused (SEP-2663 §Security Implications).
    task_id: str
    status: Status
    # Wall-clock epoch milliseconds. ``created_ms`` never changes; ``updated_ms``
    # moves on every status, input or message change, never on a read, and never
    # back: a clock stepped back, or a peer's behind this one on a shared store,
    # leaves it where it was, so ``lastUpdatedAt`` orders a task's changes.
    created_ms: int
    updated_ms: int
    # The advertised lifetime from creation in ms; ``None`` is unlimited.
    ttl_ms: int | None
    poll_interval_ms: int | None
    # Outstanding input requests by key; non-empty iff input_required. Each is
    # its wire form, or the request object that writes it (a worker's own
    # question: a parked task keeps it anyway, so a wire copy would be a second).
    input_requests: Mapping[str, Request] = NOTHING
    # Input keys issued and withdrawn, neither outstanding nor answered (rule 5).
    withdrawn: frozenset[str] = NO_KEYS
    # Answers received by key (rule 6). All three are emptied when the task ends (rule 8).
    inbox: Mapping[str, JSONObject] = NOTHING
    # The request's final result (completed) or JSON-RPC error (failed); else None.
    result: JSONObject | None = None
    error: JSONObject | None = None
    # Bumped by every transition; the compare-and-set token of the store.
    revision: int = 0
    # The worker's own status message (rule 7); None: presa's text for the status.
    message: str | None = None
    # The scopes the creating request needed (authorization): every later
    # request on the task needs them too. Never changes; empty without auth.
    required_scopes: frozenset[str] = NO_KEYS

    @property
    def issued(self) -> frozenset[str]:
        """Every input key ever issued to this task (rule 5)."""
        return self.withdrawn.union(self.input_requests, self.inbox)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def status_message(self) -> str | None:
        if self.status is Status.FAILED and self.error is not None:
            return str(self.error["message"])
        if self.message is not None:
            return self.message
        return STATUS_MESSAGES.get(self.status)

    @property
    def expires_ms(self) -> int | None:
        """When the TTL elapses, in epoch ms; ``None`` with an unlimited TTL."""
        return None if self.ttl_ms is None else self.created_ms + self.ttl_ms

    def expired(self, now_ms: int) -> bool:
        """Whether the TTL has elapsed at wall-clock ``now_ms`` (counted from creation)."""
        expires = self.expires_ms
        return expires is not None and now_ms >= expires

    def to_wire(self) -> JSONObject:
        """The ``Task`` shape: the body of a ``CreateTaskResult`` (SEP-2663 §Task Creation).

        ``ttlMs`` is always present, ``null`` when unlimited; there is no
        ``result``, ``error`` or ``inputRequests`` here (spec-notes §22).
        """
        wire: JSONObject = {
            "taskId": self.task_id,
            "status": self.status.value,
            "createdAt": iso_stamp(self.created_ms),
            "lastUpdatedAt": iso_stamp(self.updated_ms),
            "ttlMs": self.ttl_ms,
        }
        if self.poll_interval_ms is not None:
            wire["pollIntervalMs"] = self.poll_interval_ms
        message = self.status_message
        if message is not None:
            wire["statusMessage"] = message
        return wire

    def requests_on_wire(self) -> dict[str, JSONObject]:
        """The outstanding input requests in wire form (schema ``$defs.InputRequests``)."""
        return {key: wire_of(request) for key, request in self.input_requests.items()}

    def detailed(self) -> JSONObject:
        """The ``DetailedTask`` shape a ``tasks/get`` returns: the payload of its status.

        Spec: SEP-2663 §Task Polling (Response) items 1–5.
        """
        wire = self.to_wire()
        if self.status is Status.INPUT_REQUIRED:
            wire["inputRequests"] = self.requests_on_wire()
        elif self.status is Status.COMPLETED:
            wire["result"] = self.result
        elif self.status is Status.FAILED:
            wire["error"] = self.error
        return wire


# --- transitions ------------------------------------------------------------------


def create(
    task_id: str,
    *,
    now_ms: int,
    ttl_ms: int | None,
    poll_interval_ms: int | None,
    required_scopes: frozenset[str] = NO_KEYS,
) -> Task:
    """A new task, ``working``: the seed a ``CreateTaskResult`` carries (spec-notes §22)."""
    if ttl_ms is not None and ttl_ms <= 0:
        raise ValueError("ttlMs must be positive, or None for unlimited")
    return Task(
        task_id,
        Status.WORKING,
        now_ms,
        now_ms,
        ttl_ms,
        poll_interval_ms,
        required_scopes=required_scopes,
    )


def _move(task: Task, event: Event, now_ms: int, **changes: Any) -> Task:
    """Apply one event: rule 2 (absorb), then the table (rule 3), then rules 8 and 1."""
    if task.terminal:
        return task
    target = TRANSITIONS[task.status].get(event)
    if target is None:
        raise IllegalTransition(f"{event.value} is not allowed when {task.status.value}")
    if target in TERMINAL:
        changes.update(input_requests=NOTHING, inbox=NOTHING, withdrawn=NO_KEYS)
    if target is not task.status:
        changes.setdefault("message", None)
    updated_ms = max(now_ms, task.updated_ms)
    return attrs.evolve(
        task, status=target, updated_ms=updated_ms, revision=task.revision + 1, **changes
    )


def request_input(task: Task, requests: Mapping[str, Request], now_ms: int) -> Task:
    """The worker needs input: record ``requests`` (key -> :data:`Request`) at once.

    All keys are added in one move, so a client never sees half of a batch.
    A key issued before — answered, withdrawn or still outstanding — is
    illegal, even for an identical request (SEP-2663 §Task Update Requests).
    """
    if not requests or not all(isinstance(key, str) and key for key in requests):
        raise IllegalTransition("request_input needs requests under non-empty string keys")
    if task.terminal:
        return task
    issued = task.issued
    reused = sorted(key for key in requests if key in issued)
    if reused:
        raise IllegalTransition(f"input keys already issued for this task: {reused}")
    return _move(task, Event.ASK, now_ms, input_requests={**task.input_requests, **requests})


def _drop_inputs(
    task: Task, keys: Iterable[str], answers: Mapping[str, JSONObject], now_ms: int
) -> Task:
    """Remove outstanding ``keys``, keeping ``answers`` for them in the inbox (rule 4, 6)."""
    gone = set(keys) & set(task.input_requests)
    if not gone:
        return task
    remaining = {k: r for k, r in task.input_requests.items() if k not in gone} or NOTHING
    event = Event.ANSWER_SOME if remaining else Event.ANSWER_LAST
    kept = {key: answers[key] for key in gone if key in answers}
    unanswered = gone.difference(kept)
    withdrawn = task.withdrawn.union(unanswered) if unanswered else task.withdrawn
    return _move(
        task,
        event,
        now_ms,
        input_requests=remaining,
        inbox={**task.inbox, **kept},
        withdrawn=withdrawn,
    )


def fulfil(task: Task, answers: Mapping[str, JSONObject], now_ms: int) -> Task:
    """``tasks/update`` answered these keys; only the outstanding ones count.

    Keys never issued, already answered or withdrawn are ignored, and an
    update that matches nothing returns the task unchanged (SEP-2663 §Task
    Update Requests (Response)). A strict subset is a partial fulfilment:
    the rest stay outstanding (SEP-2663 §Task Update Requests). The matched answers go to
    the inbox, where the worker reads them.
    """
    return _drop_inputs(task, answers.keys(), answers, now_ms)


def withdraw(task: Task, keys: Iterable[str], now_ms: int) -> Task:
    """The worker stopped waiting for ``keys`` (it moved on): they are superseded.

    Their keys stay issued, so a late answer is ignored like any other
    answer to a key that is not outstanding (SEP-2663 §Task Update Requests).
    """
    return _drop_inputs(task, keys, {}, now_ms)


def complete(task: Task, result: JSONObject, now_ms: int) -> Task:
    """The request produced its result, ``isError`` or not (SEP-2663 §Task Status)."""
    if not isinstance(result, dict):
        raise IllegalTransition("a completed task's result must be a JSON object")
    return _move(task, Event.COMPLETE, now_ms, result=result)


def fail(task: Task, error: JSONObject, now_ms: int) -> Task:
    """The request ended in a JSON-RPC error, carried as ``{code, message, data?}``.

    Spec: SEP-2663 §Task Execution Errors — ``failed`` is for JSON-RPC errors only.
    """
    if not (isinstance(error.get("code"), int) and isinstance(error.get("message"), str)):
        raise IllegalTransition("a failed task's error needs an integer code and a message")
    return _move(task, Event.FAIL, now_ms, error=error)


def report(task: Task, message: str, now_ms: int) -> Task:
    """The worker describes where it is (e.g. "step 2 of 5"); the status stays.

    The message is the task's ``statusMessage`` until the status changes
    (rule 7). The same message again changes nothing, and a terminal task
    absorbs it (rule 2). Spec: SEP-2663 §Tasks ``statusMessage`` ("progress
    descriptions for working"); progress notifications are not supported on
    tasks (§Task Status Notifications; spec-notes §46).
    """
    if not (isinstance(message, str) and message):
        raise IllegalTransition("a status message must be a non-empty string")
    if message == task.message:
        return task
    return _move(task, Event.REPORT, now_ms, message=message)


def cancel(task: Task, now_ms: int) -> Task:
    """``tasks/cancel`` was honoured; outstanding requests are dropped with the work."""
    return _move(task, Event.CANCEL, now_ms)
