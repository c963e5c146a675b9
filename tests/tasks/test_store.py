"""The memory store's own bookkeeping; the rules every store keeps are in stores/."""

from __future__ import annotations

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from presa_trio.tasks import model
from presa_trio.tasks.store import Capacity, Counts, Lease, MemoryStore, StoredTask

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
