"""The store contract's rule 7, task event logs, on every store (presa_trio.tasks.stores.base).

Each test runs once per store kind, on a real engine. Two store objects
opened on one PostgreSQL database are two processes as far as the
database can tell (each its own connections and LISTEN connection).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from presa_trio.tasks import model
from presa_trio.tasks.events import EventWindow, NewEvent, Retention
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import TaskStore
from tests.tasks.stores.records import ROOMY, T0, Seen, stored

KEEP_ALL = Retention(max_events=10_000, max_age_ms=None)


def step(n: int) -> NewEvent:
    return NewEvent("com.example.step", {"n": n})


async def window(store: TaskStore, task_id: str = "t-1", after: int = -1) -> EventWindow:
    return await store.read_events(task_id, after, 10_000)


async def test_seq_starts_at_zero_and_grows_by_one(store: TaskStore) -> None:
    """Spec-mandated (SEP-2694 §Task Event; S-03): seq 0 first, then exactly one more,
    across appends of one and of many events."""
    await store.create(stored(), ROOMY, T0)
    first = await store.append_events("t-1", [step(0)], T0, KEEP_ALL)
    more = await store.append_events("t-1", [step(1), step(2)], T0 + 1, KEEP_ALL)
    assert [e.seq for e in first + more] == [0, 1, 2]
    read = await window(store)
    assert [(e.seq, e.payload) for e in read.events] == [
        (0, {"n": 0}),
        (1, {"n": 1}),
        (2, {"n": 2}),
    ]
    assert (read.earliest_seq, read.next_seq, read.closed) == (0, 3, False)
    assert [e.seq for e in (await window(store, after=1)).events] == [2]


@asynccontextmanager
async def another_process(store_url: str, store: TaskStore) -> AsyncIterator[TaskStore]:
    """A second store on the same data, as another process opens it: on PostgreSQL a
    store of its own; memory and SQLite are one process's (one server per file)."""
    if not store_url.startswith("postgres"):
        yield store
        return
    async with open_store(store_url) as other:
        yield other


async def test_concurrent_appenders_never_duplicate_or_skip_a_seq(store_url: str) -> None:
    """Spec-mandated (SEP-2694 §Task Event; S-03, S-23): fifty appends racing from two
    store objects (on PostgreSQL, two processes' worth of connections) get the seqs
    0..49, each once."""
    async with open_store(store_url) as one:
        await one.create(stored(), ROOMY, T0)
        async with another_process(store_url, one) as two, trio.open_nursery() as nursery:
            for n in range(50):
                writer = one if n % 2 else two
                nursery.start_soon(writer.append_events, "t-1", [step(n)], T0, KEEP_ALL)
        read = await window(one)
    assert [e.seq for e in read.events] == list(range(50))
    assert sorted(e.payload["n"] for e in read.events) == list(range(50))


async def test_nothing_is_appended_to_an_unknown_task_or_a_closed_log(store: TaskStore) -> None:
    """presa-defined (rule 7; S-03): an unknown task gets no log; the closing append
    closes the log, and later appends (a late emit) are refused, seq unchanged."""
    assert await store.append_events("nope", [step(0)], T0, KEEP_ALL) == []
    assert await window(store, "nope") == EventWindow.empty()
    await store.create(stored(), ROOMY, T0)
    await store.append_events("t-1", [step(0)], T0, KEEP_ALL, closing=True)
    assert await store.append_events("t-1", [step(1)], T0, KEEP_ALL) == []
    assert await store.append_events("t-1", [step(1)], T0, KEEP_ALL, closing=True) == []
    read = await window(store)
    assert (len(read.events), read.next_seq, read.closed) == (1, 1, True)


async def test_retention_drops_the_oldest_events_and_keeps_next_seq(store: TaskStore) -> None:
    """Spec-mandated (SEP-2694 §Event Retention; S-14, S-21): beyond max_events the
    oldest go, earliest_seq moves, next_seq never does."""
    await store.create(stored(), ROOMY, T0)
    few = Retention(max_events=3, max_age_ms=None)
    for n in range(5):
        await store.append_events("t-1", [step(n)], T0, few)
    read = await window(store)
    assert [e.seq for e in read.events] == [2, 3, 4]
    assert (read.earliest_seq, read.next_seq) == (2, 5)


async def test_events_older_than_the_maximum_age_are_dropped(store: TaskStore) -> None:
    """Spec-mandated (SEP-2694 §Event Retention, maximum event age; S-14, S-21): on the
    next append, and by pruning."""
    await store.create(stored(), ROOMY, T0)
    aged = Retention(max_age_ms=1000)
    await store.append_events("t-1", [step(0)], T0, aged)
    await store.append_events("t-1", [step(1)], T0 + 600, aged)
    await store.append_events("t-1", [step(2)], T0 + 1000, aged)
    assert [e.seq for e in (await window(store)).events] == [1, 2]
    await store.prune_events(T0 + 1700, aged)
    read = await window(store)
    assert [e.seq for e in read.events] == [2]
    assert read.earliest_seq == 2


async def test_a_finished_tasks_events_go_after_its_terminal_retention(store: TaskStore) -> None:
    """Spec-mandated (SEP-2694 §Event Retention, terminal retention; S-15): a closed
    log keeps its events for terminal_ms, then keeps only its bounds."""
    await store.create(stored(), ROOMY, T0)
    kept = Retention(max_age_ms=None, terminal_ms=500)
    await store.append_events("t-1", [step(0)], T0, kept, closing=True)
    await store.prune_events(T0 + 400, kept)
    assert len((await window(store)).events) == 1
    await store.prune_events(T0 + 500, kept)
    read = await window(store)
    assert (read.events, read.earliest_seq, read.next_seq, read.closed) == ([], 1, 1, True)


async def test_a_deleted_tasks_log_goes_with_it(store: TaskStore) -> None:
    """Spec-mandated (SEP-2694 §Event Retention; S-15): events never outlive their
    task; by default they stay exactly as long as it does."""
    await store.create(stored(ttl_ms=1000), ROOMY, T0)
    await store.append_events("t-1", [step(0)], T0, Retention())
    await store.prune_events(T0 + 999, Retention())
    assert len((await window(store)).events) == 1
    await store.expire(T0 + 1000)
    await store.prune_events(T0 + 1000, Retention())
    assert await window(store) == EventWindow.empty()


async def test_every_append_is_announced(store: TaskStore) -> None:
    """presa-defined (signals between processes; S-23): a watcher hears the task id of
    each append, and nothing for a refused one."""
    heard = Seen()
    await store.create(stored(), ROOMY, T0)
    async with trio.open_nursery() as nursery:
        await nursery.start(store.watch_events, heard)
        await store.append_events("nope", [step(0)], T0, KEEP_ALL)
        await store.append_events("t-1", [step(0)], T0, KEEP_ALL)
        await heard.until("t-1")
        nursery.cancel_scope.cancel()
    assert "nope" not in heard.events


async def test_an_append_in_one_process_is_heard_in_another(store_url: str) -> None:
    """presa-defined (S-23): on PostgreSQL through LISTEN/NOTIFY; memory and SQLite are
    one process's, so there the other watcher is the same store's."""
    async with open_store(store_url) as writer:
        await writer.create(stored(), ROOMY, T0)
        heard = Seen()
        async with another_process(store_url, writer) as reader, trio.open_nursery() as nursery:
            await nursery.start(reader.watch_events, heard)
            await writer.append_events("t-1", [step(0)], T0, KEEP_ALL)
            await heard.until("t-1")
            nursery.cancel_scope.cancel()


async def test_a_log_survives_reopening_the_store(store_url: str, durable: None) -> None:
    """presa-defined (S-23): events and next_seq are durable with the task, so a
    stream resumes after a restart and the seqs go on."""
    async with open_store(store_url) as first:
        await first.create(stored(), ROOMY, T0)
        await first.append_events("t-1", [step(0), step(1)], T0, KEEP_ALL)
    async with open_store(store_url) as second:
        assert [e.seq for e in (await window(second)).events] == [0, 1]
        [again] = await second.append_events("t-1", [step(2)], T0, KEEP_ALL)
        assert again.seq == 2


async def test_payloads_are_held_exactly(store: TaskStore) -> None:
    """presa-defined (S-05): any JSON object comes back as given, U+0000 and
    non-ASCII text included."""
    await store.create(stored(), ROOMY, T0)
    payload = {"text": "a\u0000b ünï 🎉", "nested": {"list": [1, 2.5, None, True]}}
    await store.append_events("t-1", [NewEvent("com.example.x", payload)], T0, KEEP_ALL)
    assert (await window(store)).events[0].payload == payload


async def test_a_finished_task_is_still_read_with_its_log(store: TaskStore) -> None:
    """presa-defined (S-15): the log of a terminal task is read as long as the task is."""
    await store.create(stored(), ROOMY, T0)
    done = model.complete(stored().task, {"content": []}, T0 + 1)
    await store.compare_and_set("alice", done, 0)
    await store.append_events("t-1", [step(0)], T0 + 1, KEEP_ALL, closing=True)
    assert (await window(store)).closed
