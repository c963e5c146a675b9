"""Every store method checkpoints: a caller cancelled at the await changes nothing, on every store.

Trio's rule is that an ``await`` of an async function may be cancelled, and
a caller already cancelled gets ``trio.Cancelled`` there. The memory store
does no I/O, yet it checkpoints first like the others, so the runner's code
behaves the same on each (the ``store`` fixture runs this on memory,
SQLite and PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

from presa_trio.tasks import model
from presa_trio.tasks.stores.base import Lease, Limits, StoredTask, TaskStore, Work

T0 = 1_800_000_000_000
WORK = Work("tool", {}, "2026-07-28", {})


def seed(task_id: str) -> StoredTask:
    task = model.create(task_id, now_ms=T0, ttl_ms=60_000, poll_interval_ms=100)
    return StoredTask("alice", task, WORK, Lease("p1", 1, T0 + 30_000))


#: Each method of the protocol, called on a store holding task "t" (and a free id "u").
CALLS: dict[str, Callable[[TaskStore], Awaitable[Any]]] = {
    "create": lambda store: store.create(seed("u"), Limits(), T0),
    "get": lambda store: store.get("alice", "t", T0),
    "read": lambda store: store.read("t"),
    "compare_and_set": lambda store: store.compare_and_set(
        "alice", model.cancel(seed("t").task, T0 + 1), 0
    ),
    "renew": lambda store: store.renew("p1", {"t": 1}, T0 + 60_000, T0),
    "claim_expired": lambda store: store.claim_expired("p2", T0 + 40_000, T0 + 70_000, 10),
    "release": lambda store: store.release("p1"),
    "expire": lambda store: store.expire(T0 + 120_000),
    "counts": lambda store: store.counts(),
}


@pytest.mark.parametrize("method", list(CALLS))
async def test_a_call_whose_caller_is_cancelled_raises_cancelled_and_changes_nothing(
    store: TaskStore, method: str
) -> None:
    """presa-defined (trio's checkpoint rule; the store contract): every method
    awaited in a cancelled scope raises Cancelled at its await, and the store
    reads back as before: the same on every store."""
    await store.create(seed("t"), Limits(), T0)
    before = await store.read("t")
    reached_the_end = False
    with trio.CancelScope() as scope:
        scope.cancel()
        await CALLS[method](store)
        reached_the_end = True
    assert scope.cancelled_caught
    assert not reached_the_end
    assert await store.read("t") == before
    assert await store.read("u") is None
