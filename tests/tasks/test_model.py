"""The task state machine, walked step by step without Trio (h11's test_state.py style).

Each walk asserts the whole task after every step; illegal steps raise and
leave the task as it was. Wire shapes are checked here too, since the model
owns the projections a client sees.
"""

from __future__ import annotations

from operator import attrgetter
from pathlib import Path
from typing import Any

import attrs
import pytest

from presa_trio.tasks import model
from presa_trio.tasks.model import IllegalTransition, Task
from presa_trio.wire.tasks import Status
from tests.import_graph import imported_modules
from tests.wire.layering import forbidden

T0, T1, T2, T3 = (1_793_729_045_000 + 1000 * n for n in range(4))  # 2026-11-03T18:04:0n
ASK = {
    "method": "elicitation/create",
    "params": {"mode": "form", "message": "Sure?", "requestedSchema": {"type": "object"}},
}
RESULT = {"content": [{"type": "text", "text": "done"}], "resultType": "complete"}
ERROR = {"code": -32603, "message": "Internal error"}
YES = {"action": "accept", "content": {}}
#: The terminal statuses (SEP-2663 §Task Status: completed, failed, cancelled).
ENDS = [Status.COMPLETED, Status.FAILED, Status.CANCELLED]


def seed(ttl_ms: int | None = 3_600_000) -> Task:
    return model.create("t-1", now_ms=T0, ttl_ms=ttl_ms, poll_interval_ms=100)


def terminal(status: Status) -> Task:
    moves = {
        Status.COMPLETED: lambda t: model.complete(t, RESULT, T1),
        Status.FAILED: lambda t: model.fail(t, ERROR, T1),
        Status.CANCELLED: lambda t: model.cancel(t, T1),
    }
    return moves[status](model.request_input(seed(), {"k": ASK}, T1))


def test_model_imports_neither_trio_nor_the_server() -> None:
    """presa-defined (docs/architecture.md; docs/tasks.md): model.py is pure."""
    assert sorted(m for m in imported_modules(Path(model.__file__)) if forbidden(m)) == []


def test_a_task_walks_from_creation_through_two_inputs_to_completion() -> None:
    """Spec-mandated (SEP-2663 §Task Status, §Task Update Requests; T-28, T-45, T-66):
    the status is input_required exactly while a key is outstanding."""
    task = seed()
    assert (task.status, task.revision, task.created_ms, task.updated_ms) == (
        Status.WORKING,
        0,
        T0,
        T0,
    )
    assert task.expires_ms == T0 + 3_600_000

    task = model.request_input(task, {"a": ASK, "b": ASK}, T1)
    assert (task.status, dict(task.input_requests), task.issued, task.revision) == (
        Status.INPUT_REQUIRED,
        {"a": ASK, "b": ASK},
        frozenset({"a", "b"}),
        1,
    )
    assert (task.created_ms, task.updated_ms) == (T0, T1)

    task = model.fulfil(task, {"a": YES}, T2)
    assert (task.status, list(task.input_requests), dict(task.inbox), task.revision) == (
        Status.INPUT_REQUIRED,
        ["b"],
        {"a": YES},
        2,
    )

    task = model.fulfil(task, {"b": YES}, T3)
    assert (task.status, dict(task.input_requests), task.issued, task.revision) == (
        Status.WORKING,
        {},
        frozenset({"a", "b"}),
        3,
    )

    task = model.complete(task, RESULT, T3)
    assert (task.status, task.result, task.error, task.revision) == (
        Status.COMPLETED,
        RESULT,
        None,
        4,
    )


@pytest.mark.parametrize("status", ENDS, ids=attrgetter("value"))
@pytest.mark.parametrize(
    "move",
    [
        lambda t: model.request_input(t, {"new": ASK}, T3),
        lambda t: model.fulfil(t, {"k": YES, "other": YES}, T3),
        lambda t: model.withdraw(t, ["k"], T3),
        lambda t: model.complete(t, RESULT, T3),
        lambda t: model.fail(t, ERROR, T3),
        lambda t: model.cancel(t, T3),
    ],
    ids=["request_input", "fulfil", "withdraw", "complete", "fail", "cancel"],
)
def test_a_terminal_task_absorbs_every_move(status: Status, move: Any) -> None:
    """Spec-mandated (overview §Task lifecycle; T-66): once completed, failed or
    cancelled, the task never changes, lastUpdatedAt included."""
    task = terminal(status)
    assert move(task) is task


@pytest.mark.parametrize(
    ("history", "why"),
    [
        (lambda t: t, "the key is still outstanding"),
        (lambda t: model.fulfil(t, {"k": YES}, T2), "the key was answered"),
        (lambda t: model.withdraw(t, ["k"], T2), "the key was withdrawn"),
    ],
    ids=["outstanding", "answered", "withdrawn"],
)
def test_an_issued_key_is_never_issued_again(history: Any, why: str) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests; T-37, T-38, T-39): keys are
    unique for the task's lifetime, even for an identical request. The illegal
    request raises and the task is unchanged."""
    task = history(model.request_input(seed(), {"k": ASK}, T1))
    before = attrs.asdict(task)
    for request in (ASK, {"method": "roots/list"}):
        with pytest.raises(IllegalTransition, match="already issued"):
            model.request_input(task, {"k": request, "fresh": ASK}, T3)
    assert attrs.asdict(task) == before


def test_answers_to_keys_not_outstanding_change_nothing() -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests (Response), SHOULD ignore; T-44)."""
    working = seed()
    assert model.fulfil(working, {"never-issued": YES}, T1) is working
    parked = model.fulfil(model.request_input(working, {"a": ASK, "b": ASK}, T1), {"a": YES}, T2)
    assert model.fulfil(parked, {"a": YES, "never-issued": YES}, T3) is parked


def test_withdrawing_the_last_key_resumes_working() -> None:
    """presa-defined (SEP-2663 §Task Update Requests, "superseded"; spec-notes §15): a worker
    that stops waiting takes its requests back; the keys stay issued."""
    task = model.withdraw(model.request_input(seed(), {"k": ASK}, T1), ["k"], T2)
    assert (task.status, dict(task.input_requests), task.issued) == (
        Status.WORKING,
        {},
        frozenset({"k"}),
    )


@pytest.mark.parametrize(
    "move",
    [
        lambda t: model.request_input(t, {}, T1),
        lambda t: model.request_input(t, {"": ASK}, T1),
        lambda t: model.complete(t, ["not", "an", "object"], T1),  # type: ignore[arg-type]
        lambda t: model.fail(t, {"message": "no code"}, T1),
        lambda t: model.fail(t, {"code": -32603}, T1),
    ],
    ids=[
        "no-requests",
        "empty-key",
        "result-not-object",
        "error-without-code",
        "error-without-message",
    ],
)
def test_malformed_moves_raise_and_change_nothing(move: Any) -> None:
    """presa-defined: an illegal move raises, whatever the status."""
    for task in (seed(), terminal(Status.COMPLETED)):
        before = attrs.asdict(task)
        with pytest.raises(IllegalTransition):
            move(task)
        assert attrs.asdict(task) == before


def test_the_transition_table_covers_every_status_and_terminals_go_nowhere() -> None:
    """presa-defined (SEP-2663 §Task Status): the table is the whole diagram, and
    input_required leads back to working only when its last key leaves."""
    assert set(model.TRANSITIONS) == set(Status)
    assert all(not model.TRANSITIONS[status] for status in ENDS)
    assert model.TRANSITIONS[Status.INPUT_REQUIRED][model.Event.ANSWER_LAST] is Status.WORKING
    assert model.Event.ANSWER_LAST not in model.TRANSITIONS[Status.WORKING]


def test_the_table_decides_an_event_it_does_not_list_is_illegal() -> None:
    """presa-defined: the moves ask the table; an event missing from the current
    status's row raises and changes nothing."""
    with pytest.raises(IllegalTransition, match="answer_last is not allowed when working"):
        model._move(seed(), model.Event.ANSWER_LAST, T1)


def test_answers_are_kept_in_the_inbox_until_the_task_ends() -> None:
    """presa-defined (recovery hands back answers already received): a matched answer
    goes to the inbox, an unmatched one does not; a terminal task keeps none."""
    parked = model.request_input(seed(), {"a": ASK, "b": ASK}, T1)
    half = model.fulfil(parked, {"a": YES, "stray": {"x": 1}}, T2)
    assert dict(half.inbox) == {"a": YES}
    assert dict(model.withdraw(half, ["b"], T3).inbox) == {"a": YES}
    assert dict(model.complete(half, RESULT, T3).inbox) == {}


def test_the_ttl_counts_from_creation_and_null_is_unlimited() -> None:
    """Spec-mandated (SEP-2663 §Tasks, ttlMs: "from creation ... null for unlimited";
    T-18). A non-positive TTL is refused (runner tasks-wire-field-renames)."""
    task = seed(ttl_ms=1000)
    assert not task.expired(T0 + 999)
    assert task.expired(T0 + 1000)
    assert not seed(ttl_ms=None).expired(10**15)
    for bad in (0, -5):
        with pytest.raises(ValueError, match="positive"):
            seed(ttl_ms=bad)


def test_the_create_result_body_is_a_flat_task() -> None:
    """Spec-mandated (SEP-2663 §Task Creation, Result & Task; T-17, T-21, T-22): the
    SEP's example keys, with ttlMs always present; no result, error or inputRequests."""
    sep_example_keys = {
        "resultType",
        "taskId",
        "status",
        "statusMessage",
        "createdAt",
        "lastUpdatedAt",
        "ttlMs",
        "pollIntervalMs",
    }
    assert set(seed().to_wire()) | {"resultType"} == sep_example_keys
    assert seed(ttl_ms=None).to_wire()["ttlMs"] is None
    assert seed().to_wire()["status"] == "working"


def test_each_status_reads_back_with_exactly_its_payload() -> None:
    """Spec-mandated (SEP-2663 §Task Polling (Response) items 1-5; T-27 to T-31)."""
    payload = {"inputRequests", "result", "error"}
    parked = model.request_input(seed(), {"k": ASK}, T1)
    expected: list[tuple[Task, set[str]]] = [
        (seed(), set()),
        (parked, {"inputRequests"}),
        (model.complete(parked, RESULT, T2), {"result"}),
        (model.fail(parked, ERROR, T2), {"error"}),
        (model.cancel(parked, T2), set()),
    ]
    for task, present in expected:
        wire = task.detailed()
        assert payload & set(wire) == present, task.status
        assert wire["status"] == task.status.value
        assert "requestState" not in wire
    assert parked.detailed()["inputRequests"] == {"k": ASK}


def test_a_failed_task_says_its_error_message_and_nothing_more() -> None:
    """Spec-mandated (SEP-2663 §Task Execution Errors, SHOULD diagnostic message;
    T-20, T-33): the statusMessage is the JSON-RPC error's message."""
    failed = model.fail(seed(), ERROR, T1)
    assert failed.detailed()["statusMessage"] == "Internal error"
    assert failed.detailed()["error"] == ERROR
    assert "statusMessage" not in model.complete(seed(), RESULT, T1).to_wire()


def test_a_status_message_keeps_the_status_until_the_status_changes() -> None:
    """Spec-mandated (SEP-2663 §Tasks ``statusMessage``, "progress descriptions for
    working"; spec-notes §46): a report is a move that keeps the status, moves
    ``revision`` and ``lastUpdatedAt``, and lasts until the status changes."""
    said = model.report(seed(), "step 1 of 2", T1)
    assert (said.status, said.revision, said.updated_ms) == (Status.WORKING, 1, T1)
    assert said.to_wire()["statusMessage"] == "step 1 of 2"
    assert model.report(said, "step 1 of 2", T2) is said
    parked = model.request_input(said, {"k": ASK}, T2)
    assert parked.to_wire()["statusMessage"] == "The task is waiting for input"
    waiting = model.report(parked, "waiting for the user", T3)
    assert (waiting.status, waiting.input_requests) == (Status.INPUT_REQUIRED, {"k": ASK})
    resumed = model.fulfil(waiting, {"k": YES}, T3)
    assert resumed.to_wire()["statusMessage"] == "The task is running"


@pytest.mark.parametrize("status", [Status.COMPLETED, Status.FAILED, Status.CANCELLED])
def test_a_terminal_task_absorbs_a_status_message(status: Status) -> None:
    """Spec-mandated (SEP-2663 §Task Status; T-66): a late report changes nothing."""
    done = terminal(status)
    assert model.report(done, "too late", T3) is done


@pytest.mark.parametrize("message", ["", None, 5])
def test_a_status_message_must_be_a_non_empty_string(message: Any) -> None:
    """presa-defined (spec-notes §46): anything else is illegal, whatever the status."""
    with pytest.raises(IllegalTransition):
        model.report(seed(), message, T1)


def test_last_updated_never_goes_back_when_the_clock_does() -> None:
    """presa-defined (docs/tasks.md): a change made by a clock behind the last one's
    (stepped back, or a peer's on a shared store) leaves ``lastUpdatedAt`` where it
    was, never before ``createdAt`` nor before an earlier change."""
    task = model.request_input(seed(), {"k": ASK}, T2)
    answered = model.fulfil(task, {"k": YES}, T1)
    assert answered.status is Status.WORKING
    assert answered.updated_ms == T2
    assert answered.revision == task.revision + 1
    reported = model.report(
        model.create("t-2", now_ms=T3, ttl_ms=None, poll_interval_ms=100), "half", T0
    )
    assert reported.to_wire()["lastUpdatedAt"] == reported.to_wire()["createdAt"]
