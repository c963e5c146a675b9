"""The pure part of task event streams: the envelope, the cursor, the next step, presa's events.

No Trio, no store: each rule of SEP-2694 that needs no I/O, checked on values.
"""

from __future__ import annotations

from typing import Any

import pytest

from presa_trio.tasks import model
from presa_trio.tasks.events import (
    MAX_SEQ,
    RELATED_TASK,
    Deliver,
    End,
    EventsGone,
    EventWindow,
    Retention,
    TaskEvent,
    Wait,
    check_type,
    first_cursor,
    life_events,
    next_step,
    read_cursor,
    status_event,
)
from presa_trio.wire.errors import InvalidParams
from presa_trio.wire.tasks import (
    EVENTS_GONE,
    INPUT_ANSWERED_EVENT,
    INPUT_REQUESTED_EVENT,
    STATUS_EVENT,
)


def event(seq: int, task_id: str = "t") -> TaskEvent:
    return TaskEvent(seq, task_id, "com.example.step", {"n": seq}, 0)


def test_an_event_names_its_task_in_related_task_meta() -> None:
    """Spec-mandated (SEP-2694 §notifications/tasks/event; S-02): the params carry
    seq, taskId, type, payload and `_meta[related-task].taskId` equal to taskId."""
    wire = TaskEvent(42, "task-123", "com.example.content.partial", {"a": 1}, 5).to_wire()
    assert wire == {
        "seq": 42,
        "taskId": "task-123",
        "type": "com.example.content.partial",
        "payload": {"a": 1},
        "_meta": {RELATED_TASK: {"taskId": "task-123"}},
    }


@pytest.mark.parametrize("reserved", ["content.partial", "task.status", "tool.started", "x", ""])
def test_unprefixed_event_types_are_refused(reserved: str) -> None:
    """Spec-mandated (SEP-2694 §Event Types; S-06): the proposal's reserved examples,
    and anything without a namespace, can never be emitted."""
    with pytest.raises(ValueError, match="vendor prefix"):
        check_type(reserved)


@pytest.mark.parametrize("prefixed", ["com.example.review.comment", STATUS_EVENT, "io.a.b"])
def test_prefixed_event_types_are_accepted(prefixed: str) -> None:
    """Spec-mandated (SEP-2694 §Event Types; S-06): implementation-defined types with a
    vendor prefix, presa's own included."""
    assert check_type(prefixed) == prefixed


@pytest.mark.parametrize("payload", [[1], "text", 3, None])
def test_a_payload_must_be_a_json_object(payload: Any) -> None:
    """Spec-mandated (SEP-2694 §Task Event; S-05): "Event payloads MUST be JSON objects"."""
    with pytest.raises(TypeError, match="a task event's payload must be a JSON object"):
        Retention().check_payload(payload)


def test_a_payload_over_the_size_limit_is_refused() -> None:
    """Spec-mandated (SEP-2694 §Security Implications, payload size; S-21): the limit
    counts compact UTF-8 JSON."""
    retention = Retention(max_payload_bytes=18)
    assert retention.check_payload({"a": "1234567890"}) == {"a": "1234567890"}
    with pytest.raises(ValueError, match="max_payload_bytes"):
        retention.check_payload({"a": "12345678901"})
    with pytest.raises(ValueError, match="JSON"):
        retention.check_payload({"a": float("nan")})


@pytest.mark.parametrize(
    "limits",
    [{"max_events": MAX_SEQ + 1}, {"max_age_ms": MAX_SEQ + 1}, {"terminal_ms": MAX_SEQ + 1}],
    ids=["count", "age", "terminal"],
)
def test_a_retention_beyond_what_a_store_holds_is_refused(limits: dict[str, int]) -> None:
    """presa-defined (docs/task-events.md "Retention"): each limit is a parameter of the
    SQL stores' statements, so one past a signed 64-bit integer failed every append on
    SQLite and PostgreSQL, and with it every write of every task (they stayed
    `working`); it is refused when the retention is made, at the most a store holds."""
    with pytest.raises(ValueError, match="at most 9223372036854775807"):
        Retention(**limits)
    assert Retention(max_events=MAX_SEQ, max_age_ms=MAX_SEQ, terminal_ms=MAX_SEQ)


@pytest.mark.parametrize("after", [-1, 1.5, 1.0, True, "3", None, [1]])
def test_a_cursor_that_is_not_a_non_negative_integer_is_invalid_params(after: Any) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics; S-10): negative, fractional,
    boolean and non-numeric `after` are -32602."""
    with pytest.raises(InvalidParams):
        read_cursor({"taskId": "t", "after": after})


def test_an_absent_cursor_reads_as_none_and_zero_is_a_cursor() -> None:
    """Spec-mandated (SEP-2694 §tasks/stream; S-10, S-12)."""
    assert read_cursor({"taskId": "t"}) is None
    assert read_cursor({"after": 0}) == 0


def test_without_a_cursor_the_stream_starts_at_the_earliest_retained_event() -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics; S-12)."""
    assert first_cursor("t", None, EventWindow((), 7, 10, False)) == 6
    assert first_cursor("t", None, EventWindow.empty()) == -1


def test_a_cursor_before_the_retained_range_is_events_gone() -> None:
    """Spec-mandated (SEP-2694 §events_gone error; S-13, S-14): code -32010 and
    data {reason, taskId, earliestSeq}; a cursor just before the earliest is fine."""
    window = EventWindow((), 7, 10, False)
    with pytest.raises(EventsGone) as gone:
        first_cursor("task-1", 5, window)
    assert gone.value.to_wire() == {
        "code": EVENTS_GONE,
        "message": "Task events are no longer available",
        "data": {"reason": "events_gone", "taskId": "task-1", "earliestSeq": 7},
    }
    assert first_cursor("task-1", 6, window) == 6


def test_a_cursor_beyond_the_last_event_is_invalid_params() -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics, "not a valid sequence number
    value"; S-10): a seq this task never had is -32602."""
    with pytest.raises(InvalidParams):
        first_cursor("t", 10, EventWindow((), 0, 10, False))
    with pytest.raises(InvalidParams):
        first_cursor("t", 0, EventWindow.empty())


def test_the_next_step_delivers_waits_or_ends() -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics; S-11, S-12): events after
    the cursor are delivered; a closed log read to its end ends; an open one waits."""
    events = (event(3), event(4))
    assert next_step("t", 2, EventWindow(events, 0, 5, False)) == Deliver(events)
    assert next_step("t", 4, EventWindow((), 0, 5, True)) == End()
    assert next_step("t", 4, EventWindow((), 0, 5, False)) == Wait()
    assert next_step("t", -1, EventWindow((), 0, 0, True)) == End()


def test_a_gap_after_the_cursor_is_never_skipped() -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics, "MUST NOT silently skip";
    S-13): a read whose first event is not the cursor's next, or a log whose retained
    range begins after it, is events_gone."""
    with pytest.raises(EventsGone):
        next_step("t", 2, EventWindow((event(5),), 5, 6, False))
    with pytest.raises(EventsGone):
        next_step("t", 2, EventWindow((), 6, 6, True))


def test_life_events_of_a_task_follow_its_writes() -> None:
    """presa-defined (S-22, S-17): a run's start gives a status event; asking gives
    input_requested; an answer gives input_answered; a status change a status event
    naming the status and revision tasks/get then shows."""
    created = model.create("t", now_ms=0, ttl_ms=None, poll_interval_ms=None)
    assert (status_event(created).type, status_event(created).payload) == (
        STATUS_EVENT,
        {"status": "working", "revision": 0, "statusMessage": "The task is running"},
    )
    asking = model.request_input(created, {"k": {"method": "elicitation/create"}}, 1)
    assert [(e.type, e.payload) for e in life_events(created, asking)] == [
        (INPUT_REQUESTED_EVENT, {"keys": ["k"], "revision": 1}),
        (STATUS_EVENT, status_event(asking).payload),
    ]
    assert status_event(asking).payload["status"] == "input_required"
    answered = model.fulfil(asking, {"k": {"action": "accept"}}, 2)
    assert [e.type for e in life_events(asking, answered)] == [INPUT_ANSWERED_EVENT, STATUS_EVENT]
    reported = model.report(answered, "halfway", 3)
    assert life_events(answered, reported) == []
    done = model.complete(reported, {"content": []}, 4)
    assert [e.payload["status"] for e in life_events(reported, done)] == ["completed"]
