"""What only the PostgreSQL store has: several processes on one database, signals between them.

Two opened stores on one database stand for two processes. Nothing is
mocked: a real PostgreSQL (tests/postgres.py), real LISTEN/NOTIFY, and the
database's own controls to cut the listening connection.
"""

from __future__ import annotations

import logging
import threading
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import psycopg
import pytest
import trio
import trio.testing
from psycopg import sql
from psycopg.types.json import Jsonb

from presa_trio.tasks import model
from presa_trio.tasks.events import NewEvent, Retention
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import (
    RESYNC,
    CapacityExceeded,
    Changed,
    Counts,
    Lease,
    Limits,
    StoreUnavailable,
    TaskStore,
)
from presa_trio.tasks.stores.postgres.database import Database, Lane
from presa_trio.tasks.stores.postgres.event_logs import EVENTS_CHANNEL, EVENTS_VERSION
from presa_trio.tasks.stores.postgres.schema import CHANNEL, NOTIFY_LIMIT, SCHEMA_VERSION
from presa_trio.tasks.stores.postgres.store import PostgresStore
from presa_trio.tasks.stores.record import to_record
from tests.postgres import Postgres, listeners_cut
from tests.tasks.stores.records import (
    ASK,
    AWKWARD,
    PATIENCE,
    ROOMY,
    T0,
    WORK,
    Seen,
    awkward_task,
    awkward_work,
    new_task,
    stored,
)

STEP = "com.example.step"


class DatabaseClock:
    """The database's clock (``presa_now_ms()``, schema.py) of ``url``, replaced by one
    that reads a table, so a test moves it where it would otherwise sleep and race
    it: a stall of the test machine cannot pass time on it."""

    def __init__(self, url: str, at_ms: int) -> None:
        self.url = url
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("CREATE TABLE presa_test_clock (now_ms bigint NOT NULL)")
            connection.execute("INSERT INTO presa_test_clock VALUES (%s)", (at_ms,))
            connection.execute(
                "CREATE OR REPLACE FUNCTION presa_now_ms() RETURNS bigint"
                " LANGUAGE sql VOLATILE AS $$ SELECT now_ms FROM presa_test_clock $$"
            )

    def move_to(self, at_ms: int) -> None:
        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute("UPDATE presa_test_clock SET now_ms = %s", (at_ms,))


async def test_a_change_made_by_one_process_reaches_the_others_watchers(
    postgres_url: str,
) -> None:
    """presa-defined (signals between processes): what B writes, A's watcher
    receives, with the task as stored."""
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        seen = Seen()
        async with trio.open_nursery() as nursery:
            await nursery.start(a.watch, seen)
            await b.create(stored(), ROOMY, T0)
            await seen.until(Changed(stored()))
            nursery.cancel_scope.cancel()
    assert seen.events == [Changed(stored())]


async def test_a_claim_by_another_process_reaches_the_watchers_as_not_moved(
    postgres_url: str,
) -> None:
    """presa-defined (listen streams get each change once; SEP-2663 §Task Status
    Notifications): B's claim of a task A announced reaches A's watcher with the
    new lease, as not moved (the revision is the one A delivered), so A tells no
    listen stream of it; B's next write of the task is moved."""
    parked = model.request_input(new_task(), {"k": ASK}, T0 + 1)
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        seen = Seen()
        async with trio.open_nursery() as nursery:
            await nursery.start(a.watch, seen)
            await a.create(stored(lease=Lease("a", 1, T0)), ROOMY, T0)
            [claimed] = await b.claim_expired("b", T0 + 1, T0 + 500, 10)
            await b.compare_and_set("alice", parked, 0, fence=2)
            written = attrs.evolve(claimed, task=parked)
            await seen.until(Changed(written))
            nursery.cancel_scope.cancel()
    assert seen.events == [
        Changed(stored(lease=Lease("a", 1, T0))),
        Changed(claimed, moved=False),
        Changed(written),
    ]


async def race(postgres_url: str, capacity: Limits, scopes: int) -> tuple[int, list[str]]:
    """40 creations over ``scopes`` scopes through two stores at once; the tasks
    stored, and the limits that refused the rest."""
    refused: list[str] = []

    async def create(store: TaskStore, number: int) -> None:
        try:
            await store.create(stored(f"t{number}", scope=f"s{number % scopes}"), capacity, T0)
        except CapacityExceeded as full:
            refused.append(full.limit)

    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        async with trio.open_nursery() as nursery:
            for number in range(40):
                nursery.start_soon(create, (a, b)[number % 2], number)
        return (await a.counts()).active, refused


async def test_creations_racing_from_two_processes_never_overshoot_a_limit(
    postgres_url: str,
) -> None:
    """presa-defined (atomic create-if-under-limit, across processes): 40 creations
    in one scope racing through two stores for its 10 slots store exactly 10."""
    active, refused = await race(postgres_url, Limits(max_active_per_scope=10), 1)
    assert active == 10
    assert refused == ["max_active_tasks_per_scope"] * 30


async def test_the_overall_limit_is_passed_by_at_most_the_creations_in_flight(
    postgres_url: str,
) -> None:
    """presa-defined (no lock shared by every creation; postgres.schema docstring):
    creations in different scopes take no common lock, so the overall limit is
    checked on the counts as committed. 40 creations over 4 scopes racing through
    two stores for 10 overall slots store at least 10, and at most as many more as
    their request connections can have in flight (3 each)."""
    active, refused = await race(postgres_url, Limits(max_active=10), 4)
    assert 10 <= active <= 10 + 2 * 3
    assert refused == ["max_active_tasks"] * (40 - active)


async def test_a_deleted_task_frees_its_room_before_its_ttl_would(postgres_url: str) -> None:
    """presa-defined (bounded stores; spec-notes §45): once one process's reaper
    deleted expired tasks, another's creation counts them no longer, even at a
    moment before their TTL (the stored count follows deletions, not the clock)."""
    full = Limits(max_stored=2)
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        await a.create(stored("short-1", ttl_ms=10), ROOMY, T0)
        await a.create(stored("short-2", ttl_ms=10, scope="bob"), ROOMY, T0)
        with pytest.raises(CapacityExceeded):
            await a.create(stored("new"), full, T0 + 5)
        assert sorted(await b.expire(T0 + 10)) == ["short-1", "short-2"]
        await a.create(stored("new-1"), full, T0 + 5)
        await b.create(stored("new-2"), full, T0 + 5)
        with pytest.raises(CapacityExceeded):
            await a.create(stored("new-3"), full, T0 + 5)


async def test_a_finished_task_frees_its_active_slot_every_time(postgres_url: str) -> None:
    """presa-defined (bounded stores): with room for one active task, finishing
    it lets the next be created, twenty times over; an unfinished one refuses."""
    one = Limits(max_active=1)
    async with open_store(postgres_url) as store:
        for number in range(20):
            await store.create(stored(f"t{number}"), one, T0)
            await store.compare_and_set("alice", model.cancel(new_task(f"t{number}"), T0), 0)
        await store.create(stored("last"), one, T0)
        with pytest.raises(CapacityExceeded) as refused:
            await store.create(stored("over"), one, T0)
    assert refused.value.limit == "max_active_tasks"


async def test_expiries_racing_creations_keep_the_counts_exact(postgres_url: str) -> None:
    """presa-defined (bounded stores, across processes): two processes reaping
    while both create neither fail nor miscount; the per-scope and overall
    counts the creations read equal the rows stored."""
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        for number in range(40):
            await a.create(stored(f"short-{number}", ttl_ms=10, scope=f"s{number % 4}"), ROOMY, T0)

        async def create(store: TaskStore, number: int) -> None:
            await store.create(stored(f"t{number}", scope=f"s{number % 3}"), ROOMY, T0 + 20)

        async with trio.open_nursery() as nursery:
            for number in range(40):
                nursery.start_soon(create, (a, b)[number % 2], number)
                if number % 10 == 0:
                    nursery.start_soon(a.expire, T0 + 20)
                    nursery.start_soon(b.expire, T0 + 20)
        await a.expire(T0 + 20)
        assert (await a.counts()).stored == 40
    with psycopg.connect(postgres_url) as connection:
        rows = connection.execute(
            "SELECT scope, count(*) FROM presa_tasks GROUP BY scope"
            " UNION ALL SELECT '', count(*) FROM presa_tasks"
        ).fetchall()
        counted = connection.execute(
            "SELECT scope, stored FROM presa_counts WHERE NOT overall"
            " UNION ALL SELECT '', sum(stored) FROM presa_counts WHERE overall"
        ).fetchall()
    # A scope whose every task was deleted has no row.
    assert sorted(rows) == sorted(counted)
    assert "s3" not in {scope for scope, _ in counted}


async def test_a_change_missed_while_the_listener_was_cut_off_is_delivered_after(
    postgres: Postgres, postgres_url: str
) -> None:
    """presa-defined (signals between processes: a lost notification never leaves a
    worker parked or a listener silent): while A's LISTEN connection is down, B
    moves a task A holds; once A listens again it re-reads, delivers the change,
    then RESYNC."""
    database = urlsplit(postgres_url).path.lstrip("/")
    parked = model.request_input(new_task(), {"k": ASK}, T0 + 1)
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        seen = Seen()
        async with trio.open_nursery() as nursery:
            await nursery.start(a.watch, seen)
            await a.create(stored(), ROOMY, T0)
            with listeners_cut(postgres, database):
                await b.compare_and_set("alice", parked, 0)
            await seen.until(RESYNC)
            nursery.cancel_scope.cancel()
    assert seen.events == [Changed(stored()), Changed(attrs.evolve(stored(), task=parked)), RESYNC]


async def test_a_process_keeps_no_version_of_the_tasks_that_ended(postgres_url: str) -> None:
    """presa-defined (docs/task-stores.md, "What a process remembers"): B creates and
    finishes 300 tasks without a TTL, one more runs on; A hears every change and
    reads every finished task, yet keeps a version (and re-reads after a lost
    connection) of the running task alone: what it remembers of the others is
    bounded by a count, not by how many tasks ever ended."""
    count = 300
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        assert isinstance(a, PostgresStore)
        seen = Seen()
        async with trio.open_nursery() as nursery:
            await nursery.start(a.watch, seen)
            for number in range(count):
                await b.create(stored(f"t{number}", ttl_ms=None), ROOMY, T0)
                done = model.complete(new_task(f"t{number}", None), {"content": []}, T0 + 1)
                await b.compare_and_set("alice", done, 0)
            running = stored("running", ttl_ms=None)
            await b.create(running, ROOMY, T0)
            await seen.until(Changed(running))  # every change before it was heard too
            for number in range(count):
                assert await a.read(f"t{number}") is not None
            assert a.remembered() == 1
            nursery.cancel_scope.cancel()
    assert len(seen.events) == 2 * count + 1


async def test_a_record_too_large_to_announce_is_read_and_delivered(postgres_url: str) -> None:
    """presa-defined (signals between processes): a change whose record is larger
    than a notification may carry is announced by id alone; the other process
    reads it and its watcher receives the task as stored, in order."""
    done = model.complete(new_task(), {"text": "x" * (2 * NOTIFY_LIMIT)}, T0 + 1)
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        seen = Seen()
        async with trio.open_nursery() as nursery:
            await nursery.start(a.watch, seen)
            await b.create(stored(), ROOMY, T0)
            await b.compare_and_set("alice", done, 0)
            await seen.until(Changed(attrs.evolve(stored(), task=done)))
            nursery.cancel_scope.cancel()
    assert seen.events == [Changed(stored()), Changed(attrs.evolve(stored(), task=done))]


async def test_an_unreachable_database_is_a_one_line_store_unavailable(
    postgres: Postgres,
) -> None:
    """presa-defined (a store that cannot be opened fails at start with one line): a
    URL naming a database nobody serves raises StoreUnavailable, one line."""
    with pytest.raises(StoreUnavailable) as refused:
        async with open_store(f"postgresql://postgres@127.0.0.1:{postgres.port}/no_such_db"):
            pass
    assert "\n" not in str(refused.value)
    assert "no_such_db" in str(refused.value)


@pytest.mark.parametrize("key", ["schema_version", "events_schema_version"])
@pytest.mark.parametrize("version", ["99", "3.5"])
async def test_a_database_of_another_schema_version_is_refused_in_one_line(
    postgres_url: str, key: str, version: str
) -> None:
    """presa-defined (versioned storage; a store that cannot be opened fails at start
    with one line): a database whose tables a newer server set up, whatever its
    version says, is not misread; opening it raises StoreUnavailable naming both
    versions, which the command line prints as its one line."""
    async with open_store(postgres_url):
        pass
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("UPDATE presa_meta SET value = %s WHERE key = %s", (version, key))
    with pytest.raises(StoreUnavailable) as refused:
        async with open_store(postgres_url):
            pass
    what, ours = ("", SCHEMA_VERSION) if key == "schema_version" else (" event", EVENTS_VERSION)
    assert str(refused.value) == (
        f"the database holds presa task{what} schema version {version}; this server reads {ours}"
    )


async def test_a_role_that_may_not_create_the_tables_is_refused_in_one_line(
    postgres: Postgres, postgres_url: str
) -> None:
    """presa-defined (a store that cannot be opened fails at start with one line): a
    role without the CREATE privilege on the schema (PostgreSQL 15 on gives none on
    ``public``) cannot set up presa's tables; opening the store raises StoreUnavailable,
    one line saying so."""
    role = f"r_{uuid.uuid4().hex[:12]}"
    postgres.execute(f'CREATE ROLE "{role}" LOGIN')  # a name made here, not input
    parts = urlsplit(postgres_url)
    url = parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}").geturl()
    with pytest.raises(StoreUnavailable) as refused:
        async with open_store(url):
            pass
    assert str(refused.value) == (
        "cannot set up presa's tables: postgresql: permission denied for schema public"
    )


def lesser_role(postgres: Postgres, url: str) -> tuple[str, str]:
    """A new role that may read and write the tables of ``url``'s database and create
    nothing; its name, and ``url`` as that role."""
    role = f"r_{uuid.uuid4().hex[:12]}"
    postgres.execute(f'CREATE ROLE "{role}" LOGIN')  # a name made here, not input
    parts = urlsplit(url)
    postgres.execute(
        f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "{role}"',
        parts.path.lstrip("/"),
    )
    return role, parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}").geturl()


async def test_a_role_that_may_only_use_the_tables_set_up_by_another_serves(
    postgres: Postgres, postgres_url: str
) -> None:
    """presa-defined (deployment): once presa's tables exist (set up by a first start
    as their owner), a role that may read and write them but create nothing opens the
    store and serves: nothing is created when nothing is missing."""
    async with open_store(postgres_url):
        pass
    _, url = lesser_role(postgres, postgres_url)
    async with open_store(url) as store:
        await store.create(stored(), ROOMY, T0)
        assert await store.get("alice", "t-1", T0) == stored()


async def test_a_privilege_revoked_while_serving_is_unavailable_until_granted_again(
    postgres: Postgres, postgres_url: str
) -> None:
    """presa-defined (docs/task-stores.md "Faults"; the store's three classes): a
    privilege taken from the server's role while it serves is the database refusing
    to write, or to read, for now, like a read-only spell: unavailable (retryable),
    so a worker's write waits rather than failing its task; once it is granted
    again, the same calls succeed."""
    async with open_store(postgres_url):
        pass
    role, url = lesser_role(postgres, postgres_url)
    database = urlsplit(postgres_url).path.lstrip("/")
    async with open_store(url) as store:
        await store.create(stored(), ROOMY, T0)
        reported = model.report(new_task(), "half way", T0)
        postgres.execute(f'REVOKE UPDATE, SELECT ON presa_tasks FROM "{role}"', database)
        with pytest.raises(StoreUnavailable, match="permission denied"):
            await store.compare_and_set("alice", reported, 0)
        with pytest.raises(StoreUnavailable, match="permission denied"):
            await store.get("alice", "t-1", T0)
        postgres.execute(f'GRANT UPDATE, SELECT ON presa_tasks TO "{role}"', database)
        await store.compare_and_set("alice", reported, 0)
        assert (await store.get("alice", "t-1", T0)).task == reported


async def test_a_request_never_waits_behind_the_background_lane(postgres_url: str) -> None:
    """presa-defined (threads and connections): while every background connection is
    busy, and more background calls wait, a call in the request lane still runs."""
    database = Database(postgres_url, request_connections=1, background_connections=1)
    await database.open()
    release = threading.Event()
    try:
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(database.run, lambda _: release.wait(), Lane.BACKGROUND)
            await trio.testing.wait_all_tasks_blocked()
            with trio.fail_after(PATIENCE):
                row = await database.run(
                    lambda connection: connection.execute("SELECT 1").fetchone()
                )
            release.set()
    finally:
        release.set()
        await database.close()
    assert row == (1,)


async def test_a_call_cancelled_while_it_waits_for_a_connection_never_runs(
    postgres_url: str,
) -> None:
    """presa-defined (threads and connections): a call withdrawn by its cancellation
    before a thread took it is not run, and the one running finishes."""
    database = Database(postgres_url, request_connections=1, background_connections=1)
    await database.open()
    release = threading.Event()
    ran: list[str] = []

    def first(_: object) -> None:
        release.wait()
        ran.append("first")

    async def second(*, task_status: trio.TaskStatus[trio.CancelScope]) -> None:
        with trio.CancelScope() as scope:
            task_status.started(scope)
            await database.run(lambda _: ran.append("second"))

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(database.run, first)
            await trio.testing.wait_all_tasks_blocked()
            waiting = await nursery.start(second)
            await trio.testing.wait_all_tasks_blocked()
            waiting.cancel()
            release.set()
    finally:
        release.set()
        await database.close()
    assert ran == ["first"]


#: An advisory lock key the tests below hold, so that a call waits on it.
HELD_LOCK = 4242


async def waiting_on_the_lock(connection: psycopg.Connection[Any]) -> int:
    """How many sessions wait for :data:`HELD_LOCK` (read from the holder's connection)."""
    row = await trio.to_thread.run_sync(
        lambda: connection.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()
    )
    assert row is not None
    return int(row[0])


async def until_one_waits(connection: psycopg.Connection[Any]) -> None:
    """Return once a call waits for :data:`HELD_LOCK` (a bound, not a check)."""
    with trio.fail_after(PATIENCE):
        # The database offers no event for a session starting to wait: poll.
        while await waiting_on_the_lock(connection) == 0:  # noqa: ASYNC110
            await trio.sleep(0.01)


@pytest.mark.parametrize("how", ["cancelled", "deadline"])
async def test_a_call_stopped_from_trio_is_cancelled_on_the_server(
    postgres_url: str, how: str
) -> None:
    """presa-defined (postgres.database, cancellation and deadlines): a call whose
    caller is cancelled, or whose store timeout passes, while its statement
    waits on the server ends at once: the caller gets Cancelled (or
    StoreUnavailable at the deadline), the server no longer runs the
    statement (psycopg's cancel), and the next call works. The Cancelled is
    bare, as every other store raises it, not in an exception group: a
    caller's ``except trio.Cancelled`` (the withdrawal of a task's input
    requests) sees it."""
    timeout = 3.0 if how == "deadline" else 60.0
    database = Database(
        postgres_url, request_connections=1, background_connections=1, timeout=timeout
    )
    await database.open()
    holder = await trio.to_thread.run_sync(lambda: psycopg.connect(postgres_url, autocommit=True))
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", (HELD_LOCK,))
        outcomes: list[str] = []

        async def wait_for_the_lock() -> None:
            try:
                await database.run(lambda c: c.execute("SELECT pg_advisory_lock(%s)", (HELD_LOCK,)))
            except StoreUnavailable:
                outcomes.append("unavailable")
            except trio.Cancelled:
                outcomes.append("cancelled")
                raise

        with trio.CancelScope() as caller:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait_for_the_lock)
                await until_one_waits(holder)
                if how == "cancelled":
                    caller.cancel()
        assert outcomes == (["unavailable"] if how == "deadline" else ["cancelled"])
        assert caller.cancelled_caught == (how == "cancelled")
        assert await waiting_on_the_lock(holder) == 0
        assert await database.run(lambda c: c.execute("SELECT 1").fetchone()) == (1,)
    finally:
        await trio.to_thread.run_sync(holder.close)
        await database.close()


async def test_a_connection_tested_after_a_breakage_is_held_no_longer_than_a_call(
    postgres: Postgres,
) -> None:
    """presa-defined (postgres.database, "Every call ends within the store timeout"):
    once a connection broke, each other connection is tested before its next call;
    a database that stops answering then (frozen: its host still acknowledges every
    byte) holds that test, and so the call, no longer than any call: the call is
    StoreUnavailable within its bound, not stuck until the database answers again."""
    timeout = 2.0
    database = Database(
        postgres.new_database(), request_connections=2, background_connections=1, timeout=timeout
    )
    await database.open()
    release = threading.Event()
    outcomes: dict[str, str] = {}
    tested = trio.Event()

    async def run(name: str, work: Any) -> None:
        try:
            await database.run(work)
        except StoreUnavailable:
            outcomes[name] = "unavailable"
        else:
            outcomes[name] = "answered"

    async def run_tested() -> None:
        await run("tested", lambda c: c.execute("SELECT 1"))
        tested.set()

    try:
        pid = await database.run(lambda c: c.info.backend_pid)
        postgres.execute(f"SELECT pg_terminate_backend({pid})")
        await run("broken", lambda c: c.execute("SELECT 1"))  # the breakage, counted
        async with trio.open_nursery() as nursery:
            # The connection made again for the broken one's slot is kept busy, so the
            # next call takes the other slot, whose connection is tested first.
            nursery.start_soon(run, "holder", lambda _: release.wait())
            await trio.testing.wait_all_tasks_blocked()
            postgres.freeze()
            try:
                nursery.start_soon(run_tested)
                with trio.move_on_after(PATIENCE):  # a bound, not a check
                    await tested.wait()
                ended_while_frozen = tested.is_set()
            finally:
                postgres.thaw()
                release.set()
    finally:
        release.set()
        await database.close()
    assert ended_while_frozen
    assert (outcomes["broken"], outcomes["tested"]) == ("unavailable", "unavailable")


@pytest.mark.parametrize("text", AWKWARD)
async def test_every_string_reaches_another_process_unchanged(postgres_url: str, text: str) -> None:
    """presa-defined (the stores hold the same values): U+0000 and lone surrogates in
    a task's work, answers, message and result reach another process's watcher
    through NOTIFY as they were written."""
    seed = attrs.evolve(stored(), work=attrs.evolve(WORK, **awkward_work(text)))
    *_, reported, done = awkward_task(text)
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        seen = Seen()
        async with trio.open_nursery() as nursery:
            await nursery.start(a.watch, seen)
            await b.create(seed, ROOMY, T0)
            await b.compare_and_set("alice", reported, 0)
            await b.compare_and_set("alice", done, reported.revision)
            await seen.until(Changed(attrs.evolve(seed, task=reported)))
            nursery.cancel_scope.cancel()


async def test_a_lease_is_judged_on_the_databases_clock(postgres_url: str) -> None:
    """presa-defined (one clock for leases; README "Tasks across processes"): a
    process whose clock is far ahead cannot claim a live lease, and one whose
    clock is far behind cannot keep a lease that has run its length."""
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        clock = DatabaseClock(postgres_url, T0)
        await a.create(stored("live", lease=Lease("p1", 1, T0 + 60_000)), ROOMY, T0)
        await a.create(stored("short", lease=Lease("p1", 1, T0 + 300)), ROOMY, T0)
        ahead = T0 + 3_600_000
        assert await b.claim_expired("ahead", ahead, ahead + 60_000, 10) == []
        clock.move_to(T0 + 400)
        behind = T0 - 3_600_000
        [claimed] = await b.claim_expired("behind", behind, behind + 60_000, 10)
        assert (claimed.task_id, claimed.lease) == ("short", Lease("behind", 2, behind + 60_000))
        assert await a.renew("p1", {"short": 1, "live": 1}, T0 + 60_000, T0) == {"short"}


async def test_a_version_2_database_is_upgraded_in_place(postgres_url: str) -> None:
    """presa-defined (versioned storage): a database the previous schema version made
    (fixtures/postgres_schema_v2.sql) is upgraded at start; its tasks read back as they
    were, leases included, and count against the limits."""
    v2 = (Path(__file__).parent / "fixtures" / "postgres_schema_v2.sql").read_text()
    kept = stored("kept")
    record = to_record(kept)
    del record["lease"]
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE TABLE presa_meta (key text PRIMARY KEY, value text NOT NULL)")
        connection.execute("INSERT INTO presa_meta VALUES ('schema_version', '2')")
        connection.execute(v2)
        assert kept.lease is not None
        connection.execute(
            "INSERT INTO presa_tasks VALUES (%s, %s, 0, false, %s, %s, %s, %s, %s)",
            (
                "kept", "alice", kept.task.expires_ms,
                kept.lease.owner, kept.lease.generation, kept.lease.expires_ms, Jsonb(record),
            ),
        )  # fmt: skip
    async with open_store(postgres_url) as store:
        assert await store.get("alice", "kept", T0) == kept
        with pytest.raises(CapacityExceeded):
            await store.create(stored("new"), Limits(max_stored=1), T0)
        await store.create(stored("new"), Limits(max_stored=2), T0)
        assert await store.counts() == Counts(active=2, stored=2)


async def test_task_events_are_stamped_and_aged_on_the_databases_clock(
    postgres_url: str,
) -> None:
    """presa-defined (rule 7, one clock; SEP-2694 §Event Retention; S-28): two processes
    whose clocks are 100 s apart, one each way, append to one log with a 300 ms
    maximum age: every event is kept, in one run of seqs, whatever their nows or the
    pruner's say; once 300 ms have passed on the database's clock, a read finds them
    all gone, earliest_seq past them, and pruning frees them."""
    aged = Retention(max_events=100, max_age_ms=300)
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        clock = DatabaseClock(postgres_url, T0)
        await a.create(stored(), ROOMY, T0)
        appended = []
        for n, (store, now) in enumerate([(a, T0), (b, T0 + 100_000), (a, T0), (b, T0 - 100_000)]):
            appended += await store.append_events("t-1", [NewEvent(STEP, {"n": n})], now, aged)
        stamps = [e.created_ms for e in appended]
        assert stamps == sorted(stamps)
        await b.prune_events(T0 + 3_600_000, aged)
        read = await a.read_events("t-1", -1, 100, T0 + 3_600_000, aged)
        assert ([e.seq for e in read.events], read.earliest_seq) == ([0, 1, 2, 3], 0)
        clock.move_to(T0 + 400)
        read = await b.read_events("t-1", -1, 100, T0 - 3_600_000, aged)
        assert (read.events, read.earliest_seq, read.next_seq) == ([], 4, 4)
        await a.prune_events(T0 - 3_600_000, aged)
        with psycopg.connect(postgres_url) as connection:
            left = connection.execute("SELECT count(*) FROM presa_task_events").fetchone()
        assert left == (0,)


async def test_a_version_1_event_schema_is_upgraded_in_place(postgres_url: str) -> None:
    """presa-defined (versioned storage): event tables the previous event schema made
    (fixtures/postgres_events_v1.sql), their stamps from clocks that disagreed, are
    upgraded at start: each log's stamps never go back, and appends go on after it."""
    v1 = (Path(__file__).parent / "fixtures" / "postgres_events_v1.sql").read_text()
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE TABLE presa_meta (key text PRIMARY KEY, value text NOT NULL)")
        connection.execute("INSERT INTO presa_meta VALUES ('events_schema_version', '1')")
        connection.execute(v1)
        connection.execute("INSERT INTO presa_task_event_logs VALUES ('t-1', 3, NULL)")
        for seq, stamp in enumerate([T0 + 1000, T0, T0 + 500]):
            connection.execute(
                "INSERT INTO presa_task_events VALUES ('t-1', %s, %s, '{}', %s)", (seq, STEP, stamp)
            )
    async with open_store(postgres_url) as store:
        await store.create(stored(), ROOMY, T0)
        keep_all = Retention(max_events=100, max_age_ms=None)
        read = await store.read_events("t-1", -1, 100, T0, keep_all)
        assert [(e.seq, e.created_ms) for e in read.events] == [(n, T0 + 1000) for n in range(3)]
        [again] = await store.append_events("t-1", [NewEvent(STEP, {})], T0, keep_all)
        assert again.seq == 3


async def test_a_task_this_process_cannot_read_keeps_it_listening_to_the_others(
    postgres: Postgres, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """presa-defined (signals between processes; docs/task-stores.md "Faults"): A hears
    of B's tasks; one is then written in a form A cannot read (a status another server
    wrote). Its announcement is dropped in one line, and A hears on. Once A's LISTEN
    connection is cut, A listens again and delivers B's change made meanwhile: the
    unreadable task is left out of the re-read, in one line, where it failed every
    re-read and so kept A from listening again at all."""
    database = urlsplit(postgres_url).path.lstrip("/")
    parked = model.request_input(new_task("y"), {"k": ASK}, T0 + 1)
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        seen = Seen()
        async with trio.open_nursery() as nursery:
            await nursery.start(a.watch, seen)
            await b.create(stored("x"), ROOMY, T0)
            await b.create(stored("y"), ROOMY, T0)
            await seen.until(Changed(stored("y")))
            with psycopg.connect(postgres_url, autocommit=True) as connection:
                connection.execute(
                    "UPDATE presa_tasks SET revision = 1, task = jsonb_set(jsonb_set("
                    """task::jsonb, '{status}', '"paused"'), '{revision}', '1')::json"""
                    " WHERE task_id = 'x'"
                )
            # Announcements come in commit order: once z's is heard, x's was.
            await b.create(stored("z"), ROOMY, T0)
            await seen.until(Changed(stored("z")))
            with listeners_cut(postgres, database):
                await b.compare_and_set("alice", parked, 0)
            await seen.until(RESYNC)
            nursery.cancel_scope.cancel()
    assert seen.events == [
        Changed(stored("x")),
        Changed(stored("y")),
        Changed(stored("z")),
        Changed(attrs.evolve(stored("y"), task=parked)),
        RESYNC,
    ]
    unreadable = (
        "task x cannot be read, so its change is not delivered: 'paused' is not a valid Status"
    )
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == [
        unreadable,
        unreadable,
    ]


async def test_a_database_that_ends_idle_sessions_ends_none_of_the_stores(
    postgres: Postgres, postgres_url: str
) -> None:
    """presa-defined (docs/task-stores.md "Faults"): a database whose
    ``idle_session_timeout`` ends sessions idle for 0.2 s ends none of the store's:
    they are idle by design (the connections between calls, the listening one
    always). After idling well past it, the first read is answered, not a retryable
    error, and a change made by another process is heard on the first listening
    connection, with no resync."""
    database = urlsplit(postgres_url).path.lstrip("/")
    with psycopg.connect(postgres.url(), autocommit=True) as admin:
        admin.execute(
            sql.SQL("ALTER DATABASE {} SET idle_session_timeout = 200").format(
                sql.Identifier(database)
            )
        )
    async with open_store(postgres_url) as a, open_store(postgres_url) as b:
        seen = Seen()
        async with trio.open_nursery() as nursery:
            await nursery.start(a.watch, seen)
            await a.create(stored(), ROOMY, T0)
            await trio.sleep(1)  # five times the database's idle limit
            assert await a.read("t-1") == stored()
            await b.compare_and_set("alice", model.cancel(new_task(), T0 + 1), 0)
            await seen.until(Changed(attrs.evolve(stored(), task=model.cancel(new_task(), T0 + 1))))
            nursery.cancel_scope.cancel()
    assert RESYNC not in seen.events


KEEP_ALL = Retention(max_events=100, max_age_ms=None)
FOREIGN_PAYLOADS = [
    "not json",
    "[1, 2]",
    '{"changed": 7}',
    '{"deleted": "t-9"}',
    '{"taskId": null}',
]


async def test_notifications_presa_did_not_send_are_ignored_in_one_line_each(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """presa-defined (signals between processes; docs/task-stores.md "Faults"): any role
    that may connect may NOTIFY on presa's channels. A payload presa did not send (not
    JSON, JSON of another shape) is ignored with one warning each, on the task channel
    and the event log channel alike, and the listening goes on: B's next change and
    append are heard on the same connection, with no resync."""
    seen, appended = Seen(), Seen()
    async with (
        open_store(postgres_url) as a,
        open_store(postgres_url) as b,
        trio.open_nursery() as nursery,
    ):
        await nursery.start(a.watch, seen)
        await nursery.start(a.watch_events, appended)
        with psycopg.connect(postgres_url, autocommit=True) as other:
            for channel in (CHANNEL, EVENTS_CHANNEL):
                for payload in FOREIGN_PAYLOADS:
                    other.execute(
                        sql.SQL("NOTIFY {}, {}").format(
                            sql.Identifier(channel), sql.Literal(payload)
                        )
                    )
        await b.create(stored(), ROOMY, T0)
        await b.append_events("t-1", [NewEvent(STEP, {})], T0, KEEP_ALL)
        await seen.until(Changed(stored()))
        await appended.until("t-1")
        nursery.cancel_scope.cancel()
    assert seen.events == [Changed(stored())]
    assert appended.events == ["t-1"]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2 * len(FOREIGN_PAYLOADS)
    assert all("that is not presa's" in line for line in warned), warned
