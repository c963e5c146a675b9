"""Task events, the pure part: the envelope, the cursor, retention, presa's own event types.

A task's events are an append-only log (SEP-2694, a draft, served only with
``--task-events``): each has a ``seq`` scoped to its task, starting at 0 and
growing by exactly 1, assigned by the store as it appends (the store is the
one place two writers meet, see :mod:`presa_trio.tasks.stores.base`). This
module decides everything about the log that needs no I/O:

- the wire form of ``notifications/tasks/event`` (:meth:`TaskEvent.to_wire`);
- what ``tasks/stream`` may ask for (:func:`read_cursor`), and what a read
  window of the log says to do next (:func:`next_step`): deliver, end,
  or answer ``events_gone``;
- which types may be emitted (:func:`check_type`) and how large a payload
  may be (:class:`Retention`);
- the events presa writes itself for a task's life (:func:`life_events`),
  derived from the task before and after one stored write; their types
  are in :mod:`presa_trio.wire.tasks`.

House rules: nothing here awaits; a rule of the proposal is in one place,
and its docstring names the section.

Spec: SEP-2694 (draft) §Task Event, §Resume and Replay Semantics, §Event
Retention, §Event Types.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from presa_trio.tasks.model import Task
from presa_trio.wire.envelope import WRITE_RESERVE, with_reserve
from presa_trio.wire.errors import InvalidParams, McpError
from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import (
    EVENTS_GONE,
    INPUT_ANSWERED_EVENT,
    INPUT_REQUESTED_EVENT,
    STATUS_EVENT,
)

#: The ``_meta`` key every task event carries (SEP-2694 §Task Event).
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: The largest ``seq`` a store can hold: a signed 64-bit integer, as SQLite and
#: PostgreSQL keep it. A cursor past it names no event any store can have.
MAX_SEQ = 2**63 - 1
#: The smallest payload limit: the size of ``{}``, the smallest JSON object.
MIN_PAYLOAD_BYTES = 2

#: A label of an event type: letters, digits, ``_`` and ``-``.
_LABELS = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+){2,}")


class EventsGone(McpError):
    """The cursor is before what is retained: the stream cannot be gap-free (-32010).

    presa chooses HTTP 410 when the error goes out as plain JSON, as the
    proposal allows (SEP-2694 §events_gone error; spec-notes §50).
    """

    code = EVENTS_GONE
    http_status = 410
    default_message = "Task events are no longer available"

    @classmethod
    def for_task(cls, task_id: str, earliest_seq: int) -> EventsGone:
        return cls(data={"reason": "events_gone", "taskId": task_id, "earliestSeq": earliest_seq})


@attrs.frozen
class TaskEvent:
    """One immutable entry of a task's log, as stored."""

    # 0 for the task's first event, then exactly one more for each.
    seq: int
    task_id: str
    # A prefixed type (:func:`check_type`).
    type: str
    # A JSON object; its schema is the type's.
    payload: JSONObject
    # When it was appended, epoch ms: what maximum age counts from.
    created_ms: int

    def to_wire(self) -> JSONObject:
        """The params of ``notifications/tasks/event``, ``_meta`` naming the same task.

        Spec: SEP-2694 §notifications/tasks/event — "Receivers MUST include
        io.modelcontextprotocol/related-task metadata … The metadata task ID
        MUST match params.taskId."
        """
        return {
            "seq": self.seq,
            "taskId": self.task_id,
            "type": self.type,
            "payload": self.payload,
            "_meta": {RELATED_TASK: {"taskId": self.task_id}},
        }


@attrs.frozen
class NewEvent:
    """An event to append: the store gives it its ``seq`` and time."""

    type: str
    payload: JSONObject


@attrs.frozen
class LogAppend:
    """Events a write of a task appends to its log in the same transaction as the write.

    A write's own events (:func:`life_events`) are committed with it or not
    at all, so the log's order is the order of the task's writes, and a
    terminal write's status event, which closes the log, is that very write.
    """

    events: Sequence[NewEvent]
    # The writer's now, epoch ms (a store on a clock of its own reads that instead).
    now_ms: int
    retention: Retention
    # The write is terminal: its status event, last, closes the log.
    closing: bool


@attrs.frozen
class EventWindow:
    """What one read of a task's log found: events after a cursor, and the log's bounds.

    ``earliest_seq`` is the oldest event still retained (``next_seq`` when
    none is), ``next_seq`` the one the next append gets, and ``closed`` says
    the task's terminal status event was appended, so nothing will follow it.
    Retention drops only a prefix of a log (:class:`Retention`), so the
    retained events are exactly ``earliest_seq`` to ``next_seq - 1``.
    """

    events: Sequence[TaskEvent]
    earliest_seq: int
    next_seq: int
    closed: bool

    @classmethod
    def empty(cls) -> EventWindow:
        """The log of a task that has no event yet."""
        return cls((), 0, 0, False)

    @classmethod
    def of_log(
        cls,
        events: Sequence[TaskEvent],
        earliest_seq: int,
        next_seq: int,
        closed_ms: int | None,
        now_ms: int,
        retention: Retention,
    ) -> EventWindow:
        """A read of a log as ``retention`` keeps it at ``now_ms``, on the store's clock.

        ``events`` and ``earliest_seq`` are read without the events past
        the maximum age at ``now_ms`` (each store's read leaves them out);
        a log closed longer ago than the terminal retention reads as its
        bounds alone. Either takes effect at its time, whether or not the
        pruning pass has dropped the events yet.
        """
        if not retention.keeps_closed(closed_ms, now_ms):
            return cls([], next_seq, next_seq, True)
        return cls(events, earliest_seq, next_seq, closed_ms is not None)

    @classmethod
    def from_rows(
        cls,
        task_id: str,
        rows: Sequence[tuple[Any, ...]],
        now_ms: int,
        retention: Retention,
    ) -> EventWindow:
        """A window from a SQL store's one read: a row per event, each with the log's bounds.

        Each row is ``(next_seq, closed_ms, lowest retained seq, seq, type,
        payload, created_ms)``, the event's part ``None`` in the one row of a
        read that found no event; no row at all: the task has no log.
        """
        if not rows:
            return cls.empty()
        next_seq, closed_ms, earliest = rows[0][:3]
        events = [
            TaskEvent(seq, task_id, kind, body, made)
            for *_, seq, kind, body, made in rows
            if seq is not None
        ]
        retained = next_seq if earliest is None else earliest
        return cls.of_log(events, retained, next_seq, closed_ms, now_ms, retention)


@attrs.frozen
class Retention:
    """How long and how much of a task's log is kept; every store applies it the same.

    Every limit drops a prefix of a log, never an event from its middle, so
    what is retained is contiguous and ``earliestSeq`` is exact (SEP-2694
    §Resume and Replay Semantics forbids a gap without ``events_gone``):

    - the count keeps the last :attr:`max_events` seqs;
    - the age compares each event's stamp with the store's now, and a log's
      stamps never go back (a store stamps each event with the later of its
      now and the previous event's stamp), so "older than" cuts a log at
      one seq. Stamps and now are the store's one clock for every process:
      the caller's on memory and SQLite (one process), the database's on
      PostgreSQL (spec-notes §50);
    - the terminal retention drops a whole closed log, events only: its
      bounds stay, so a stream still answers ``events_gone`` or ``{}``.

    Defaults, flags and the table: docs/tasks.md "Task event streams".
    SEP-2694 §Event Retention asks a server to document each.
    """

    # Most events kept per task; older ones are dropped (--task-events-max).
    max_events: int = 1000
    # Events older than this are dropped, in ms; None: no limit (--task-events-max-age).
    max_age_ms: int | None = 3_600_000
    # How long the events of a terminal task stay, in ms, and never longer
    # than the task itself; None: as long as the task (--task-events-terminal-retention).
    terminal_ms: int | None = None
    # Largest payload, as compact UTF-8 JSON (--task-events-max-payload).
    max_payload_bytes: int = 64 * 1024

    def __attrs_post_init__(self) -> None:
        if self.max_events < 1 or self.max_payload_bytes < MIN_PAYLOAD_BYTES:
            raise ValueError("a log keeps at least one event and a payload of at least {}")
        # Each is a statement's parameter on SQLite and PostgreSQL, and one no
        # 64-bit integer holds fails every append, and with it every task write.
        if max(self.max_events, self.max_age_ms or 0, self.terminal_ms or 0) > MAX_SEQ:
            raise ValueError(f"a retention's count and ages are at most {MAX_SEQ} (a store's most)")

    def age_cutoff(self, now_ms: int) -> int | None:
        """Stamps at or before this are past the maximum age at ``now_ms``; None: no limit."""
        return None if self.max_age_ms is None else now_ms - self.max_age_ms

    def keeps_closed(self, closed_ms: int | None, now_ms: int) -> bool:
        """Whether a log closed at ``closed_ms`` (None: open) keeps its events at ``now_ms``."""
        return (
            closed_ms is None or self.terminal_ms is None or closed_ms > now_ms - self.terminal_ms
        )

    def check_payload(self, payload: Any) -> JSONObject:
        """A payload is a JSON object no larger than :attr:`max_payload_bytes`, else ValueError.

        What is returned is the payload as its JSON reads back: a copy of
        its own, the value every store holds, so the event never changes
        when the tool changes its objects after emitting them.

        Spec: SEP-2694 §Task Event ("Event payloads MUST be JSON objects";
        "A task event is an immutable entry"), §Security Implications
        (payload size limits).
        """
        if not isinstance(payload, dict):
            raise TypeError("a task event's payload must be a JSON object")
        try:
            # Written with WRITE_RESERVE levels to spare, as every stream of the task
            # writes it later from deeper in the stack; the payload's own text is inside.
            padded = json.dumps(
                with_reserve(payload), separators=(",", ":"), ensure_ascii=False, allow_nan=False
            )
        except (TypeError, ValueError, RecursionError) as error:
            raise ValueError(f"a task event's payload must be JSON: {error}") from None
        text = padded[WRITE_RESERVE:-WRITE_RESERVE]
        if len(text.encode("utf-8", "surrogatepass")) > self.max_payload_bytes:
            raise ValueError(
                f"a task event's payload is larger than max_payload_bytes "
                f"({self.max_payload_bytes})"
            )
        try:
            held: JSONObject = json.loads(text)
        except RecursionError:
            raise ValueError("a task event's payload is nested too deeply") from None
        return held


def check_type(event_type: Any) -> str:
    """An event type must carry a namespace: at least three dot-separated labels, else ValueError.

    Unprefixed names (``content.partial``, ``task.status``, ``tool.started``)
    are reserved for future MCP standardization; an implementation-defined
    type uses a vendor prefix, preferably reverse-DNS
    (``com.example.review.comment``). Which prefixes a vendor controls cannot
    be checked; three labels refuse every reserved example of the proposal
    (spec-notes §50). Spec: SEP-2694 §Event Types.
    """
    if not (isinstance(event_type, str) and _LABELS.fullmatch(event_type)):
        raise ValueError(
            f"task event type {event_type!r} needs a vendor prefix, e.g. com.example.step"
        )
    return event_type


# --- tasks/stream: the cursor and what to do next -------------------------------------


def read_cursor(params: Mapping[str, Any]) -> int | None:
    """``params.after``: absent, or a non-negative integer a store can hold; else -32602.

    ``true`` and ``1.0`` are not integers here: JSON has one number type,
    but a cursor that is not written as an integer is not "a valid sequence
    number value"; nor is one above :data:`MAX_SEQ`, which no log can reach,
    checked here so that every store answers it alike. Spec: SEP-2694
    §Resume and Replay Semantics ("The after parameter MUST be a non-negative
    integer. Receivers MUST return -32602").
    """
    if "after" not in params:
        return None
    after = params["after"]
    if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after <= MAX_SEQ:
        raise InvalidParams(f"after must be an integer from 0 to {MAX_SEQ}")
    return after


@attrs.frozen
class Deliver:
    """Send these events, in order, then read again after the last."""

    events: Sequence[TaskEvent]


@attrs.frozen
class Wait:
    """Nothing new and the task goes on: wait for the next append."""


@attrs.frozen
class End:
    """Everything up to the task's terminal event was delivered: answer ``{}``."""


Step = Deliver | Wait | End


def first_cursor(task_id: str, after: int | None, window: EventWindow) -> int:
    """Where a stream starts: after ``after``, or before the earliest retained event.

    A cursor beyond the last event ever appended names no event this task
    has: -32602, like any other invalid sequence number. A cursor before
    the retained range is ``events_gone`` with ``earliestSeq``.

    Spec: SEP-2694 §Resume and Replay Semantics ("If after is omitted, the
    receiver MUST start at the earliest event it still retains"; "Return an
    events_gone error if events after the supplied sequence number are no
    longer retained").
    """
    if after is None:
        return window.earliest_seq - 1
    if after >= window.next_seq:
        raise InvalidParams(f"after is beyond the task's last event ({window.next_seq - 1})")
    if after + 1 < window.earliest_seq:
        raise EventsGone.for_task(task_id, window.earliest_seq)
    return after


def next_step(task_id: str, cursor: int, window: EventWindow) -> Step:
    """What a stream that has delivered up to ``cursor`` does with a read of the log after it.

    A gap between the cursor and the first event read means retention
    dropped events this stream had not delivered yet (a reader slower than
    the log's bounds): never skipped silently, it is ``events_gone``.

    Spec: SEP-2694 §Resume and Replay Semantics ("Receivers MUST NOT
    silently skip retained events after the requested cursor"; a terminal
    task with nothing after the cursor "MUST return TaskStreamResult
    immediately"), §Task Event ("Servers MUST deliver events in sequence
    order").
    """
    first = window.events[0].seq if window.events else window.earliest_seq
    if first > cursor + 1:
        raise EventsGone.for_task(task_id, window.earliest_seq)
    if window.events:
        return Deliver(window.events)
    if window.closed and cursor + 1 >= window.next_seq:
        return End()
    return Wait()


# --- presa's own events: a task's life ------------------------------------------------


#: How many distinct events of presa's own each builder keeps for sharing.
SHARED_EVENTS = 1024


def status_event(task: Task) -> NewEvent:
    """``presa_trio.task.status``: the status ``tasks/get`` shows from this revision on.

    Spec: SEP-2694 §Relationship to Task Status Notifications (status
    events "consistent with the task status visible through tasks/get").
    """
    return _status_event(task.status.value, task.revision, task.status_message)


def life_events(before: Task, after: Task) -> list[NewEvent]:
    """The events presa appends for one stored write that took ``before`` to ``after``.

    Input keys newly issued give
    ``input_requested``, keys newly in the inbox ``input_answered``, and a
    changed status ``status``, in that order: the status event, last, is
    the one a terminal write closes the log with. A write that changes
    none of them (a status message, a withdrawal of keys) gives none.
    """
    events: list[NewEvent] = []
    issued = after.issued - before.issued
    if issued:
        keys = sorted(issued & set(after.input_requests))
        if keys:
            events.append(_keys_event(INPUT_REQUESTED_EVENT, tuple(keys), after.revision))
    answered = set(after.inbox) - set(before.inbox)
    if answered:
        events.append(_keys_event(INPUT_ANSWERED_EVENT, tuple(sorted(answered)), after.revision))
    if before.status is not after.status:
        events.append(status_event(after))
    return events


@functools.lru_cache(maxsize=SHARED_EVENTS)
def _status_event(status: str, revision: int, message: str | None) -> NewEvent:
    """One status event, built once and shared by every task that appends it.

    presa's own events repeat from task to task (every task of a tool asks
    the same keys at the same revisions), so a store that keeps events as
    objects (the memory store) keeps one copy of each, not one per task.
    Nothing changes an event or its payload once built.
    """
    payload: JSONObject = {"status": status, "revision": revision}
    if message is not None:
        payload["statusMessage"] = message
    return NewEvent(STATUS_EVENT, payload)


@functools.lru_cache(maxsize=SHARED_EVENTS)
def _keys_event(event_type: str, keys: tuple[str, ...], revision: int) -> NewEvent:
    """One ``input_requested`` or ``input_answered`` event, shared as :func:`_status_event` is."""
    return NewEvent(event_type, {"keys": list(keys), "revision": revision})
