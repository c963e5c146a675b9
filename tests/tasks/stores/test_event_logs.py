"""The store contract's rule 7, task event logs, on every store (presa_trio.tasks.stores.base).

Each test runs once per store kind, on a real engine. Two store objects
opened on one PostgreSQL database are two processes as far as the
database can tell (each its own connections and LISTEN connection).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from presa_trio.tasks import model
from presa_trio.tasks.events import EventWindow, LogAppend, NewEvent, Retention
from presa_trio.tasks.events import status_event as status_event_of
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import Conflict, Lease, TaskStore
from tests.tasks.stores.records import AWKWARD, ROOMY, T0, Seen, awkward_value, new_task, stored

KEEP_ALL = Retention(max_events=10_000, max_age_ms=None)


def step(n: int) -> NewEvent:
    return NewEvent("com.example.step", {"n": n})


async def window(
    store: TaskStore,
    task_id: str = "t-1",
    after: int = -1,
    now_ms: int = T0,
    retention: Retention = KEEP_ALL,
) -> EventWindow:
    return await store.read_events(task_id, after, 10_000, now_ms, retention)


@pytest.fixture
def callers_clock(store_kind: str) -> None:
    """Skip a test that moves the store's clock through the caller's now on PostgreSQL,
    which stamps and ages events on the database's clock (tested in its own file)."""
    if store_kind == "postgresql":
        pytest.skip("PostgreSQL ages events on its own clock: see test_postgresql.py")


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


async def test_events_older_than_the_maximum_age_are_dropped(
    store: TaskStore, callers_clock: None
) -> None:
    """Spec-mandated (SEP-2694 §Event Retention, maximum event age; S-14, S-21): on the
    next append, and by pruning."""
    await store.create(stored(), ROOMY, T0)
    aged = Retention(max_age_ms=1000)
    await store.append_events("t-1", [step(0)], T0, aged)
    await store.append_events("t-1", [step(1)], T0 + 600, aged)
    await store.append_events("t-1", [step(2)], T0 + 1000, aged)
    assert [e.seq for e in (await window(store)).events] == [1, 2]
    await store.prune_events(T0 + 1700, aged)
    read = await window(store, now_ms=T0 + 1700, retention=aged)
    assert [e.seq for e in read.events] == [2]
    assert read.earliest_seq == 2


async def test_a_read_leaves_out_what_the_maximum_age_drops_before_any_pruning(
    store: TaskStore, callers_clock: None
) -> None:
    """Spec-mandated (SEP-2694 §Event Retention, maximum event age; S-14, S-30): an age limit
    takes effect at its time: a read at a later now leaves the aged events out, with
    earliest_seq past them, though nothing has pruned them yet."""
    await store.create(stored(), ROOMY, T0)
    aged = Retention(max_age_ms=1000)
    await store.append_events("t-1", [step(0), step(1)], T0, aged)
    await store.append_events("t-1", [step(2)], T0 + 500, aged)
    read = await window(store, now_ms=T0 + 1200, retention=aged)
    assert ([e.seq for e in read.events], read.earliest_seq, read.next_seq) == ([2], 2, 3)
    read = await window(store, after=0, now_ms=T0 + 1500, retention=aged)
    assert (read.events, read.earliest_seq, read.next_seq) == ([], 3, 3)


async def test_a_log_whose_clock_went_back_is_still_cut_at_one_seq(
    store: TaskStore, callers_clock: None
) -> None:
    """presa-defined (rule 7, retention drops a prefix; SEP-2694 §Resume and Replay
    Semantics, no gap without events_gone; S-13, S-30): the second event is appended at an earlier
    now than the first (a clock stepped back); it is stamped no earlier than the first,
    so the age drops both or neither, never a hole between."""
    await store.create(stored(), ROOMY, T0)
    aged = Retention(max_age_ms=1000)
    await store.append_events("t-1", [step(0)], T0 + 1000, aged)
    await store.append_events("t-1", [step(1)], T0, aged)
    await store.append_events("t-1", [step(2)], T0 + 1000, aged)
    await store.prune_events(T0 + 1500, aged)
    read = await window(store, now_ms=T0 + 1500, retention=aged)
    assert ([e.seq for e in read.events], read.earliest_seq) == ([0, 1, 2], 0)
    await store.prune_events(T0 + 2000, aged)
    read = await window(store, now_ms=T0 + 2000, retention=aged)
    assert (read.events, read.earliest_seq, read.next_seq) == ([], 3, 3)


async def test_a_finished_tasks_events_go_after_its_terminal_retention(
    store: TaskStore, callers_clock: None
) -> None:
    """Spec-mandated (SEP-2694 §Event Retention, terminal retention; S-15, S-30): a
    closed log keeps its events for terminal_ms, then keeps only its bounds: a read at that
    time finds them gone before any pruning, and pruning then frees them."""
    await store.create(stored(), ROOMY, T0)
    kept = Retention(max_age_ms=None, terminal_ms=500)
    await store.append_events("t-1", [step(0)], T0, kept, closing=True)
    await store.prune_events(T0 + 400, kept)
    assert len((await window(store, now_ms=T0 + 499, retention=kept)).events) == 1
    read = await window(store, now_ms=T0 + 500, retention=kept)
    assert (read.events, read.earliest_seq, read.next_seq, read.closed) == ([], 1, 1, True)
    await store.prune_events(T0 + 500, kept)
    read = await window(store)
    assert (read.events, read.earliest_seq, read.next_seq, read.closed) == ([], 1, 1, True)


async def test_a_log_past_its_terminal_retention_reads_as_its_bounds_on_every_store(
    store: TaskStore,
) -> None:
    """Spec-mandated (SEP-2694 §Event Retention, terminal retention; S-15, S-30): with a
    terminal retention of 0 a closed log reads as gone at once, on each store's own
    clock (the caller's, or PostgreSQL's), while an open log keeps its events."""
    await store.create(stored(), ROOMY, T0)
    await store.create(stored("open"), ROOMY, T0)
    at_once = Retention(max_age_ms=None, terminal_ms=0)
    await store.append_events("t-1", [step(0), step(1)], T0, at_once, closing=True)
    await store.append_events("open", [step(0)], T0, at_once)
    read = await window(store, retention=at_once)
    assert (read.events, read.earliest_seq, read.next_seq, read.closed) == ([], 2, 2, True)
    assert [e.seq for e in (await window(store, "open", retention=at_once)).events] == [0]


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


@pytest.mark.parametrize("text", AWKWARD)
async def test_every_string_round_trips_in_a_payload_on_every_store(
    store: TaskStore, text: str
) -> None:
    """presa-defined (the stores hold the same values, as test_contract.py holds them
    for a task): U+0000 or a lone surrogate, as a key and as a value, in an event's
    payload (a tool's, or a status message presa writes) is stored by every store and
    reads back unchanged; the SQL stores refused a lone surrogate the memory store held."""
    await store.create(stored(), ROOMY, T0)
    payload = awkward_value(text)
    [appended] = await store.append_events(
        "t-1", [NewEvent("com.example.x", payload)], T0, KEEP_ALL
    )
    assert appended.payload == payload
    assert (await window(store)).events[0].payload == payload


async def test_a_finished_task_is_still_read_with_its_log(store: TaskStore) -> None:
    """presa-defined (S-15): the log of a terminal task is read as long as the task is."""
    await store.create(stored(), ROOMY, T0)
    done = model.complete(stored().task, {"content": []}, T0 + 1)
    await store.compare_and_set("alice", done, 0)
    await store.append_events("t-1", [step(0)], T0 + 1, KEEP_ALL, closing=True)
    read = await window(store)
    assert read.closed
    assert [(e.seq, e.type, e.payload) for e in read.events] == [(0, "com.example.step", {"n": 0})]


async def test_a_workers_events_are_fenced_by_its_lease_and_the_tasks_end(
    store: TaskStore,
) -> None:
    """presa-defined (rule 7, fenced appends; SEP-2694 §Task Event, nothing after the
    terminal status event; S-31): a worker's events (fence: its lease generation) are taken
    while its generation holds the lease; once another process claimed the task they
    are refused, and once the task is terminal so are the new holder's, even before
    any closing event; presa's own unfenced events are not."""
    await store.create(stored(lease=Lease("p1", 1, T0)), ROOMY, T0)
    assert [e.seq for e in await store.append_events("t-1", [step(0)], T0, KEEP_ALL, fence=1)] == [
        0
    ]
    await store.claim_expired("p2", T0 + 1000, T0 + 31_000, 10)
    assert await store.append_events("t-1", [step(1)], T0, KEEP_ALL, fence=1) == []
    assert [e.seq for e in await store.append_events("t-1", [step(2)], T0, KEEP_ALL, fence=2)] == [
        1
    ]
    await store.compare_and_set("alice", model.cancel(new_task(), T0 + 1), 0)
    assert await store.append_events("t-1", [step(3)], T0, KEEP_ALL, fence=2) == []
    read = await window(store)
    assert ([e.payload["n"] for e in read.events], read.next_seq, read.closed) == ([0, 2], 2, False)
    closing = [status_event_of(model.cancel(new_task(), T0 + 1))]
    assert len(await store.append_events("t-1", closing, T0, KEEP_ALL, closing=True)) == 1


async def test_a_writes_own_events_are_appended_by_its_compare_and_set(store: TaskStore) -> None:
    """presa-defined (rule 7: a write's events commit with it; S-31): a compare-and-set with
    events appends them in its transaction and announces them; one that loses its
    race appends nothing; a terminal one closes the log, refusing what follows."""
    heard = Seen()
    await store.create(stored(), ROOMY, T0)
    cancelled = model.cancel(new_task(), T0 + 1)
    with_status = LogAppend([status_event_of(cancelled)], T0 + 1, KEEP_ALL, closing=True)
    async with trio.open_nursery() as nursery:
        await nursery.start(store.watch_events, heard)
        stale = model.report(new_task(), "late", T0 + 1)
        with pytest.raises(Conflict):
            await store.compare_and_set(
                "alice", stale, 1, events=LogAppend([step(9)], T0, KEEP_ALL, closing=False)
            )
        assert await window(store) == EventWindow.empty()
        await store.compare_and_set("alice", cancelled, 0, events=with_status)
        await heard.until("t-1")
        nursery.cancel_scope.cancel()
    read = await window(store)
    assert ([e.payload["status"] for e in read.events], read.next_seq, read.closed) == (
        ["cancelled"],
        1,
        True,
    )
    assert await store.append_events("t-1", [step(0)], T0, KEEP_ALL) == []
