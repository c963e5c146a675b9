"""The in-memory store: scoped access, compare-and-set, expiry. No Trio needed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from presa_trio.tasks import model
from presa_trio.tasks.model import Task
from presa_trio.tasks.store import Conflict, MemoryStore, TaskExpired, TaskNotFound
from presa_trio.wire.errors import INVALID_PARAMS

STAMP = "2026-11-03T18:04:05.000Z"


def new_task(task_id: str = "t-1", ttl_ms: int | None = 1000) -> Task:
    return model.create(task_id, now=10.0, stamp=STAMP, ttl_ms=ttl_ms, poll_interval_ms=None)


def test_a_created_task_is_readable_at_once() -> None:
    """Spec-mandated (SEP-2663 §Task Creation: no CreateTaskResult before tasks/get
    would resolve; T-23)."""
    store = MemoryStore()
    task = new_task()
    store.create("alice", task)
    assert store.get("alice", "t-1", now=10.0) is task


def test_another_scopes_task_is_indistinguishable_from_an_unknown_one() -> None:
    """Spec-mandated (SEP-2663 §Security Implications, auth binding; T-65): same
    error class, code and message for a foreign id as for a missing one."""
    store = MemoryStore()
    store.create("alice", new_task())
    with pytest.raises(TaskNotFound) as foreign:
        store.get("bob", "t-1", now=10.0)
    with pytest.raises(TaskNotFound) as unknown:
        store.get("bob", "no-such-task", now=10.0)
    assert type(foreign.value) is type(unknown.value) is TaskNotFound
    assert foreign.value.to_wire() == unknown.value.to_wire()
    assert foreign.value.code == INVALID_PARAMS
    with pytest.raises(TaskNotFound):
        store.compare_and_set("bob", model.cancel(new_task(), STAMP), expected_revision=0)


def test_compare_and_set_refuses_a_stale_revision_and_changes_nothing() -> None:
    """presa-defined (DESIGN.md "Tasks": transitions by compare-and-set on a revision)."""
    store = MemoryStore()
    task = new_task()
    store.create("alice", task)
    cancelled = model.cancel(task, STAMP)
    store.compare_and_set("alice", cancelled, expected_revision=0)
    completed = model.complete(task, {"content": []}, STAMP)
    with pytest.raises(Conflict):
        store.compare_and_set("alice", completed, expected_revision=0)
    assert store.get("alice", "t-1", now=10.0) is cancelled


def test_an_expired_task_says_expired_to_its_owner_only() -> None:
    """Spec-mandated (SEP-2663 §Protocol Errors: -32602, informative message; T-35,
    T-60): the owner learns it expired; anyone else sees "not found"."""
    store = MemoryStore()
    store.create("alice", new_task(ttl_ms=1000))
    assert store.get("alice", "t-1", now=10.999).task_id == "t-1"
    with pytest.raises(TaskExpired) as expired:
        store.get("alice", "t-1", now=11.0)
    with pytest.raises(TaskNotFound) as foreign:
        store.get("bob", "t-1", now=11.0)
    assert type(foreign.value) is TaskNotFound
    assert expired.value.code == foreign.value.code == INVALID_PARAMS
    assert expired.value.message != foreign.value.message


def test_expire_deletes_only_tasks_past_their_ttl() -> None:
    """presa-defined (tasks ref §5.2; D-09): null TTL is never reaped; a terminal task
    is deleted, never rewritten."""
    store = MemoryStore()
    store.create("s", new_task("short", ttl_ms=1000))
    store.create("s", new_task("long", ttl_ms=60_000))
    store.create("s", new_task("forever", ttl_ms=None))
    store.compare_and_set("s", model.cancel(store.get("s", "short", 10.0), STAMP), 0)
    assert store.expire(now=11.0) == ["short"]
    assert store.expire(now=11.0) == []
    with pytest.raises(TaskNotFound):
        store.get("s", "short", now=0.0)
    assert store.expire(now=1e9) == ["long"]
    assert store.get("s", "forever", now=1e9).task_id == "forever"


def test_active_counts_non_terminal_tasks_per_scope_and_overall() -> None:
    """presa-defined (tasks ref §3.2: capacity limits count active tasks)."""
    store = MemoryStore()
    for scope, task_id in [("a", "1"), ("a", "2"), ("b", "3")]:
        store.create(scope, new_task(task_id))
    store.compare_and_set("a", model.cancel(store.get("a", "2", 10.0), STAMP), 0)
    assert (store.active(), store.active("a"), store.active("b"), store.active("c")) == (2, 1, 1, 0)


def test_an_id_collision_is_refused() -> None:
    """presa-defined: ids are random; a repeat is a bug, never an overwrite."""
    store = MemoryStore()
    store.create("a", new_task())
    with pytest.raises(ValueError, match="collision"):
        store.create("b", new_task())


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["create", "complete", "cancel", "ask", "expire"]),
            st.sampled_from(["alice", "bob"]),
            st.integers(min_value=0, max_value=5),
        ),
        max_size=40,
    )
)
def test_active_counts_always_agree_with_the_stored_tasks(
    steps: list[tuple[str, str, int]],
) -> None:
    """presa-defined (capacity limits, tasks ref §3.2): the O(1) active counts the
    capacity check reads equal a scan of the stored tasks after any sequence of
    creations, transitions and expiries."""
    store = MemoryStore()
    clock = 10.0
    for action, scope, number in steps:
        task_id = f"{scope}-{number}"
        if action == "create":
            if task_id not in store.entries:
                store.create(scope, new_task(task_id, ttl_ms=1000 * (number + 1)))
            continue
        if action == "expire":
            clock += 1.5
            store.expire(clock)
            continue
        entry = store.entries.get(task_id)
        if entry is None or entry.task.expired(clock):
            continue
        before = entry.task
        if action == "complete":
            after = model.complete(before, {"content": []}, STAMP)
        elif action == "cancel":
            after = model.cancel(before, STAMP)
        else:
            fresh_key = f"k{len(before.issued)}"
            after = model.request_input(before, {fresh_key: {"method": "roots/list"}}, STAMP)
        if after is not before:
            store.compare_and_set(scope, after, before.revision)
    for owner in (None, "alice", "bob"):
        expected = sum(
            1
            for e in store.entries.values()
            if not e.task.terminal and (owner is None or e.scope == owner)
        )
        assert store.active(owner) == expected
