"""The memory store's own bookkeeping; the rules every store keeps are in stores/."""

from __future__ import annotations

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from presa_trio.tasks import model
from presa_trio.tasks.stores.base import Capacity, Counts, Lease, StoredTask, Work
from presa_trio.tasks.stores.memory import MemoryStore

T0 = 1_800_000_000_000


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
def test_the_counts_always_agree_with_the_stored_tasks(
    steps: list[tuple[str, str, int]],
) -> None:
    """presa-defined (bounded stores, spec-notes §45):
    the O(1) counts the capacity check reads equal a scan of the stored tasks after
    any sequence of creations, transitions and expiries."""
    store = MemoryStore()

    async def walk() -> None:
        clock = T0
        for action, scope, number in steps:
            task_id = f"{scope}-{number}"
            if action == "create":
                if task_id not in store.entries:
                    task = model.create(
                        task_id, now_ms=clock, ttl_ms=1000 * (number + 1), poll_interval_ms=None
                    )
                    lease = Lease("p", 1, clock)
                    await store.create(StoredTask(scope, task, None, lease), Capacity(), clock)
                continue
            if action == "expire":
                clock += 1500
                await store.expire(clock)
                continue
            entry = store.entries.get(task_id)
            if entry is None or entry.task.expired(clock):
                continue
            before = entry.task
            if action == "complete":
                after = model.complete(before, {"content": []}, clock)
            elif action == "cancel":
                after = model.cancel(before, clock)
            else:
                fresh_key = f"k{len(before.issued)}"
                after = model.request_input(before, {fresh_key: {"method": "roots/list"}}, clock)
            if after is not before:
                await store.compare_and_set(scope, after, before.revision)

    trio.run(walk)
    for owner in (None, "alice", "bob"):
        kept = [e for e in store.entries.values() if owner is None or e.scope == owner]
        active = sum(1 for e in kept if not e.task.terminal)
        assert trio.run(store.counts, owner) == Counts(active, len(kept))


async def test_a_task_that_ends_keeps_only_what_tasks_get_shows() -> None:
    """presa-defined (store rule 4, model rule 8; SEP-2663 §Task Polling (Response)):
    a cancelled task stays until its TTL, holding neither its work, its lease nor its
    input keys, and still reads ``cancelled`` with its times."""
    store = MemoryStore()
    seed = model.create("t-1", now_ms=T0, ttl_ms=60_000, poll_interval_ms=100)
    work = Work("confirm_delete", {"filename": "a.txt"}, "2026-07-28", {})
    await store.create(StoredTask("alice", seed, work, Lease("p1", 1, T0 + 1)), Capacity(), T0)
    parked = model.request_input(seed, {"k": {"method": "roots/list"}}, T0 + 1)
    await store.compare_and_set("alice", parked, 0, fence=1)
    await store.compare_and_set("alice", model.cancel(parked, T0 + 2), 1)
    read = await store.get("alice", "t-1", T0 + 3)
    assert (read.work, read.lease, read.task.issued) == (None, None, frozenset())
    assert read.task.detailed() == {
        "taskId": "t-1",
        "status": "cancelled",
        "createdAt": model.iso_stamp(T0),
        "lastUpdatedAt": model.iso_stamp(T0 + 2),
        "ttlMs": 60_000,
        "pollIntervalMs": 100,
        "statusMessage": "The task was cancelled",
    }
    assert await store.counts("alice") == Counts(active=0, stored=1)
