"""The store contract: the same rules on every store (see presa_trio.tasks.stores.base).

Each test runs once per store kind of ``conftest.STORE_KINDS``, on a real
engine (a real SQLite file, …); nothing stands in for a store.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

import attrs
import psycopg
import pytest
import trio

from presa_trio.auth.principal import Principal
from presa_trio.tasks import model
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import (
    RESYNC,
    CapacityExceeded,
    Changed,
    Conflict,
    Counts,
    Deleted,
    Lease,
    LeaseLost,
    Limits,
    StoreEvent,
    StoreRefused,
    TaskExpired,
    TaskNotFound,
    TaskStore,
    Work,
)
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.tasks.stores.postgres.store import PostgresStore
from presa_trio.tasks.stores.record import (
    UnknownRecordVersion,
    from_json,
    from_record,
    to_json,
    to_record,
)
from presa_trio.tasks.stores.sqlite.store import SqliteStore
from presa_trio.wire.errors import INVALID_PARAMS
from presa_trio.wire.tasks import Status
from tests.tasks.stores.records import (
    ASK,
    AWKWARD,
    ROOMY,
    T0,
    WORK,
    awkward_task,
    awkward_work,
    new_task,
    stored,
)


async def test_a_created_task_is_readable_at_once(store: TaskStore) -> None:
    """Spec-mandated (SEP-2663 §Task Creation: no CreateTaskResult before tasks/get
    would resolve; T-23)."""
    await store.create(stored(), ROOMY, T0)
    assert await store.get("alice", "t-1", T0) == stored()
    assert await store.read("t-1") == stored()
    assert await store.read("unknown") is None


async def test_another_scopes_task_is_indistinguishable_from_an_unknown_one(
    store: TaskStore,
) -> None:
    """Spec-mandated (SEP-2663 §Security Implications, auth binding; T-65): same
    error class, code and message for a foreign id as for a missing one, on reads
    and on writes."""
    await store.create(stored(), ROOMY, T0)
    with pytest.raises(TaskNotFound) as foreign:
        await store.get("bob", "t-1", T0)
    with pytest.raises(TaskNotFound) as unknown:
        await store.get("bob", "no-such-task", T0)
    assert type(foreign.value) is type(unknown.value) is TaskNotFound
    assert foreign.value.to_wire() == unknown.value.to_wire()
    assert foreign.value.code == INVALID_PARAMS
    with pytest.raises(TaskNotFound):
        await store.compare_and_set("bob", model.cancel(new_task(), T0), 0)
    assert (await store.get("alice", "t-1", T0)).task.status is Status.WORKING


async def test_compare_and_set_refuses_a_stale_revision_and_changes_nothing(
    store: TaskStore,
) -> None:
    """presa-defined (transitions are compare-and-set on a revision): of two writers
    that read revision 0, one wins and the other gets Conflict."""
    await store.create(stored(), ROOMY, T0)
    cancelled = model.cancel(new_task(), T0 + 1)
    await store.compare_and_set("alice", cancelled, 0)
    with pytest.raises(Conflict):
        await store.compare_and_set("alice", model.complete(new_task(), {"content": []}, T0), 0)
    assert (await store.get("alice", "t-1", T0)).task == cancelled


async def test_a_stale_lease_generation_cannot_write(store: TaskStore) -> None:
    """presa-defined (leases with fencing): once another process claims the task,
    the first worker's writes are refused, even at the right revision."""
    await store.create(stored(lease=Lease("p1", 1, T0)), ROOMY, T0)
    [claimed] = await store.claim_expired("p2", T0 + 1000, T0 + 31_000, 10)
    assert claimed.lease == Lease("p2", 2, T0 + 31_000)
    stale = model.request_input(new_task(), {"k": ASK}, T0 + 1001)
    with pytest.raises(LeaseLost):
        await store.compare_and_set("alice", stale, 0, fence=1)
    assert (await store.get("alice", "t-1", T0)).task.revision == 0
    await store.compare_and_set("alice", stale, 0, fence=2)
    assert (await store.get("alice", "t-1", T0)).task == stale


async def test_renewal_keeps_a_lease_and_reports_the_ones_lost(store: TaskStore) -> None:
    """presa-defined (leases): a renewed lease is not claimable; renewing a lease
    another process claimed, or of a deleted task, or under a generation its own
    holder's claim has replaced, reports it lost."""
    await store.create(stored("a", lease=Lease("p1", 1, T0)), ROOMY, T0)
    await store.create(stored("b", lease=Lease("p1", 1, T0)), ROOMY, T0)
    assert await store.renew("p1", {"a": 1}, T0 + 5000, T0) == set()
    claimed = await store.claim_expired("p2", T0 + 1000, T0 + 2000, 10)
    assert [s.task_id for s in claimed] == ["b"]
    assert await store.renew("p1", {"a": 1, "b": 1, "gone": 1}, T0 + 6000, T0) == {"b", "gone"}
    assert (await store.read("a")) == stored("a", lease=Lease("p1", 1, T0 + 6000))
    # Claimed back by its own holder, "a" is held under a new generation: the old is lost.
    await store.release("p1")
    claimed = await store.claim_expired("p1", T0 + 1000, T0 + 9000, 10)
    assert [s.lease for s in claimed if s.task_id == "a"] == [Lease("p1", 2, T0 + 9000)]
    assert await store.renew("p1", {"a": 1}, T0 + 9500, T0 + 1000) == {"a"}
    assert await store.renew("p1", {"a": 2}, T0 + 9500, T0 + 1000) == set()


async def test_only_unfinished_unexpired_tasks_with_expired_leases_are_claimed(
    store: TaskStore,
) -> None:
    """presa-defined (recovery, at least once): a live lease, a terminal task and an
    expired task (one whose TTL ends at the claim's now included) are never claimed;
    a claim bumps the generation and is bounded.
    Each lease is created expired (its expiry is the creation's now) or live for a
    minute: a store may judge leases on a clock of its own (PostgreSQL's), reading
    each expiry as a length from the caller's now."""
    now = T0 + 10_000
    await store.create(stored("live", lease=Lease("p1", 1, now + 60_000)), ROOMY, now)
    await store.create(stored("done", lease=Lease("p1", 1, T0)), ROOMY, T0)
    await store.compare_and_set("alice", model.cancel(new_task("done"), T0), 0)
    await store.create(stored("old", ttl_ms=5000, lease=Lease("p1", 1, T0)), ROOMY, T0)
    # Its TTL ends at this very now: expired already (SEP-2663 §Tasks, ttlMs).
    await store.create(stored("ending", ttl_ms=10_000, lease=Lease("p1", 1, T0)), ROOMY, T0)
    for name in ("x1", "x2", "x3"):
        await store.create(stored(name, lease=Lease("p1", 4, now)), ROOMY, now)
    first = await store.claim_expired("p2", now, now + 30_000, 2)
    rest = await store.claim_expired("p2", now, now + 30_000, 10)
    assert len(first) == 2
    assert sorted(s.task_id for s in first + rest) == ["x1", "x2", "x3"]
    assert {s.lease for s in first + rest} == {Lease("p2", 5, now + 30_000)}
    assert await store.claim_expired("p3", now, now + 30_000, 10) == []


def write_a_status_of_another_server(store_kind: str, store_url: str, task_id: str) -> None:
    """In a thread: the task's stored status becomes one this server does not know."""
    if store_kind == "sqlite":
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as db:
            db.execute(
                "UPDATE tasks SET record = json_set(record, '$.task.status', 'paused')"
                " WHERE task_id = ?",
                (task_id,),
            )
        return
    with psycopg.connect(store_url, autocommit=True) as connection:
        connection.execute(
            "UPDATE presa_tasks SET task = jsonb_set(task::jsonb, '{status}', '\"paused\"')::json"
            " WHERE task_id = %s",
            (task_id,),
        )


async def test_a_task_this_server_cannot_read_keeps_no_other_from_being_claimed(
    store: TaskStore,
    store_kind: str,
    store_url: str,
    durable: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """presa-defined (recovery, at least once; docs/task-stores.md "Recovery"): a task
    whose record this server cannot read (a status another server wrote, say) is left
    out of a claim, in one line of the log; every other expired lease is still claimed,
    so one such task never stops the recovery of the rest."""
    for name in ("a", "b", "c"):
        await store.create(stored(name, lease=Lease("p1", 1, T0)), ROOMY, T0)
    await trio.to_thread.run_sync(write_a_status_of_another_server, store_kind, store_url, "b")
    with caplog.at_level(logging.ERROR):
        claimed = await store.claim_expired("p2", T0 + 1000, T0 + 31_000, 10)
    assert sorted(s.task_id for s in claimed) == ["a", "c"]
    assert {s.lease for s in claimed} == {Lease("p2", 2, T0 + 31_000)}
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            logging.ERROR,
            "task b cannot be read, so it is not recovered: 'paused' is not a valid Status",
        )
    ]


async def test_released_leases_are_claimable_at_once(store: TaskStore) -> None:
    """presa-defined (graceful shutdown): a process that stops releases its leases,
    so the next one recovers its tasks without waiting for them to expire."""
    await store.create(stored("mine", lease=Lease("p1", 3, T0 + 30_000)), ROOMY, T0)
    await store.create(stored("theirs", lease=Lease("p9", 1, T0 + 30_000)), ROOMY, T0)
    await store.release("p1")
    [claimed] = await store.claim_expired("p2", T0 + 1, T0 + 30_000, 10)
    assert (claimed.task_id, claimed.lease) == ("mine", Lease("p2", 4, T0 + 30_000))


async def test_a_claim_of_released_leases_only_leaves_the_lapsed_ones(store: TaskStore) -> None:
    """presa-defined (docs/task-stores.md, "An outage longer than the lease"): the
    first claim after an outage takes the leases a stopped process let go, and
    none that merely lapsed: their holder may be alive, kept from renewing."""
    await store.create(stored("released", lease=Lease("p1", 3, T0 + 30_000)), ROOMY, T0)
    await store.create(stored("lapsed", lease=Lease("p9", 1, T0)), ROOMY, T0)
    await store.release("p1")
    [claimed] = await store.claim_expired("p2", T0 + 1, T0 + 30_000, 10, released_only=True)
    assert (claimed.task_id, claimed.lease) == ("released", Lease("p2", 4, T0 + 30_000))
    assert await store.claim_expired("p2", T0 + 1, T0 + 30_000, 10, released_only=True) == []
    [lapsed] = await store.claim_expired("p2", T0 + 1, T0 + 30_000, 10)
    assert lapsed.task_id == "lapsed"


async def test_an_expired_task_says_expired_to_its_owner_only_then_is_deleted(
    store: TaskStore,
) -> None:
    """Spec-mandated (SEP-2663 §Protocol Errors: -32602, informative message; T-35,
    T-60): the owner learns it expired; anyone else sees "not found". presa-defined:
    expiry deletes, never rewrites, and a null TTL never expires."""
    await store.create(stored("short", ttl_ms=1000), ROOMY, T0)
    await store.create(stored("forever", ttl_ms=None), ROOMY, T0)
    assert (await store.get("alice", "short", T0 + 999)).task_id == "short"
    with pytest.raises(TaskExpired) as expired:
        await store.get("alice", "short", T0 + 1000)
    with pytest.raises(TaskNotFound) as foreign:
        await store.get("bob", "short", T0 + 1000)
    assert type(foreign.value) is TaskNotFound
    assert expired.value.message != foreign.value.message
    assert await store.expire(T0 + 1000) == ["short"]
    assert await store.expire(T0 + 1000) == []
    assert await store.read("short") is None
    assert (await store.get("alice", "forever", 10**15)).task_id == "forever"


@pytest.mark.parametrize(
    ("capacity", "scope", "limit"),
    [
        (Limits(max_active_per_scope=2), "alice", "max_active_tasks_per_scope"),
        (Limits(max_stored_per_scope=3), "alice", "max_stored_tasks_per_scope"),
        (Limits(max_active=3), "carol", "max_active_tasks"),
        (Limits(max_stored=4), "carol", "max_stored_tasks"),
    ],
)
async def test_capacity_is_checked_inside_create(
    store: TaskStore, capacity: Limits, scope: str, limit: str
) -> None:
    """presa-defined (bounded stores; spec-notes §45):
    active and stored (finished included) tasks are bounded per scope and overall;
    a refused task is not stored; expired tasks do not count."""
    await store.create(stored("a1"), ROOMY, T0)
    await store.create(stored("a2"), ROOMY, T0)
    await store.create(stored("done", scope="alice"), ROOMY, T0)
    await store.compare_and_set("alice", model.cancel(new_task("done"), T0), 0)
    await store.create(stored("b1", scope="bob"), ROOMY, T0)
    with pytest.raises(CapacityExceeded) as refused:
        await store.create(stored("new", scope=scope), capacity, T0)
    assert refused.value.limit == limit
    assert await store.read("new") is None
    await store.create(stored("short", ttl_ms=10, scope="bob"), ROOMY, T0)
    assert (await store.counts()).stored == 5
    with pytest.raises(CapacityExceeded):
        await store.create(stored("new", scope=scope), capacity, T0 + 5)
    if limit.startswith("max_stored") and scope == "carol":
        # The expired task makes room once its TTL has passed.
        await store.create(stored("new", scope=scope), Limits(max_stored=5), T0 + 10)


async def counted_scopes(store: TaskStore) -> set[str]:
    """The scopes ``store`` keeps a count of tasks for, in its own counters."""
    if isinstance(store, MemoryStore):
        return set(store._stored) | set(store._active)
    if isinstance(store, SqliteStore):
        rows = await store.database.run(
            lambda db: db.execute("SELECT scope FROM task_counts").fetchall()
        )
    else:
        assert isinstance(store, PostgresStore)
        rows = await store.database.run(
            lambda c: c.execute("SELECT scope FROM presa_counts WHERE NOT overall").fetchall()
        )
    return {scope for (scope,) in rows}


async def test_a_scope_is_counted_while_it_holds_tasks_only(store: TaskStore) -> None:
    """presa-defined (bounded stores): the per-scope counts hold the scopes that have
    stored tasks, not every caller that ever made one, so a server that meets ever
    more callers keeps its counters (and what each creation counts) bounded; a
    scope that comes back is counted from zero."""
    for number in range(5):
        await store.create(stored(f"t{number}", scope=f"c{number}", ttl_ms=10), ROOMY, T0)
    await store.compare_and_set("c0", model.cancel(new_task("t0", ttl_ms=10), T0), 0)
    await store.create(stored("kept", scope="c1"), ROOMY, T0)
    assert await counted_scopes(store) == {"c0", "c1", "c2", "c3", "c4"}
    await store.expire(T0 + 10)
    assert await counted_scopes(store) == {"c1"}
    await store.create(stored("again", scope="c2"), ROOMY, T0 + 10)
    assert (await store.counts("c2"), await store.counts()) == (Counts(1, 1), Counts(2, 2))


async def test_concurrent_creations_never_overshoot_a_limit(store: TaskStore) -> None:
    """presa-defined (atomic create-if-under-limit): 20 creations racing for 5 slots
    store exactly 5; the rest are refused."""
    capacity = Limits(max_active_per_scope=5)
    refused = 0

    async def create(number: int) -> None:
        nonlocal refused
        try:
            await store.create(stored(f"t{number}"), capacity, T0)
        except CapacityExceeded:
            refused += 1

    async with trio.open_nursery() as nursery:
        for number in range(20):
            nursery.start_soon(create, number)
    assert (await store.counts("alice"), refused) == ((await store.counts()), 15)
    assert (await store.counts("alice")).active == 5


async def test_an_id_collision_is_refused(store: TaskStore) -> None:
    """presa-defined: ids are random; a repeat is a bug, never an overwrite."""
    await store.create(stored(), ROOMY, T0)
    with pytest.raises(ValueError, match="collision"):
        await store.create(stored(scope="bob"), ROOMY, T0)
    assert (await store.read("t-1")) == stored()


def every_status() -> list[Task]:
    seed = new_task()
    parked = model.request_input(seed, {"a": ASK, "b": ASK}, T0 + 1)
    half = model.fulfil(parked, {"a": {"action": "accept", "content": {"ok": True}}}, T0 + 2)
    return [
        seed,
        parked,
        half,
        model.withdraw(half, ["b"], T0 + 3),
        model.report(seed, "step 2 of 5", T0 + 3),
        model.complete(half, {"content": [{"type": "text", "text": "é"}]}, T0 + 4),
        model.fail(seed, {"code": -32603, "message": "Internal error", "data": {"x": 1}}, T0 + 5),
        model.cancel(parked, T0 + 6),
    ]


@pytest.mark.parametrize("number", range(len(every_status())))
async def test_the_storage_round_trip_keeps_every_field(store: TaskStore, number: int) -> None:
    """presa-defined (a versioned storage format holding the whole task): every status,
    with its requests, issued keys, inbox, result or error, work and lease, reads back
    equal, from the store and through the JSON record; a terminal task's work and
    lease may have been let go of (store rule 4)."""
    task = every_status()[number]
    await store.create(stored(), ROOMY, T0)
    if task.revision:
        await store.compare_and_set("alice", task, 0)
    expected = attrs.evolve(stored(), task=task)
    read = await store.get("alice", "t-1", T0)
    if task.terminal and read.work is None:
        expected = attrs.evolve(expected, work=None, lease=None)
    assert read == expected
    assert from_record(to_record(read)) == read


@pytest.mark.parametrize("text", AWKWARD)
async def test_every_string_round_trips_in_arguments_results_answers_and_messages(
    store: TaskStore, text: str
) -> None:
    """presa-defined (the stores hold the same values): a string with U+0000 or a
    lone surrogate, as a key and as a value, in the tool arguments, the handler
    state, an answer, a status message and the result, reads back unchanged from
    every store (and, on PostgreSQL, through another process's announcements:
    test_postgresql.py)."""
    task = awkward_task(text)
    seed = attrs.evolve(stored(), work=attrs.evolve(WORK, **awkward_work(text)))
    await store.create(seed, ROOMY, T0)
    before = new_task()
    for after in task:
        await store.compare_and_set("alice", after, before.revision)
        read = await store.get("alice", "t-1", T0)
        assert read.task == after
        # A terminal task's work may have been let go of (store rule 4).
        assert read.work == (None if read.work is None and after.terminal else seed.work)
        before = after


#: Arrays and objects nested as deep as a request body presa parses may hold them.
DEEP = 400


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


async def test_values_nested_as_deep_as_a_request_may_hold_are_stored(store: TaskStore) -> None:
    """presa-defined (a versioned storage format holding the whole task): a task's
    arguments, capabilities, answers and handler state nested 400 levels deep, which
    a request body may carry, are stored and read back unchanged, by every store."""
    work = attrs.evolve(
        WORK,
        arguments={"x": nested(DEEP)},
        capabilities={"x": nested(DEEP)},
        input_responses={"k": {"x": nested(DEEP)}},
        state=nested(DEEP),
    )
    await store.create(attrs.evolve(stored(), work=work), ROOMY, T0)
    assert (await store.get("alice", "t-1", T0)).work == work
    assert from_json(to_json(work), Work) == work


async def test_the_creators_principal_is_stored_with_its_scopes(store: TaskStore) -> None:
    """presa-defined (a versioned storage format holding the whole task; A-15): the
    verified caller a task was created by, its scopes a set, is written as JSON (the
    scopes a sorted list) and read back as it was, by every store."""
    principal = Principal("https://as.example", "alice", "cli", frozenset({"write", "read"}))
    work = attrs.evolve(WORK, principal=to_json(principal))
    assert work.principal is not None
    assert work.principal["scopes"] == ["read", "write"]
    await store.create(attrs.evolve(stored(), work=work), ROOMY, T0)
    kept = (await store.get("alice", "t-1", T0)).work
    assert kept is not None
    assert from_json(kept.principal, Principal) == principal


async def test_a_value_too_deep_for_a_record_is_refused_data(
    store: TaskStore, durable: None
) -> None:
    """presa-defined (spec-notes §31: a request's data a store cannot keep is a
    -32603 that is not retryable, never a defect): arguments nested deeper than a
    record's JSON encoder can follow are refused as data, nothing is stored, and the
    store goes on storing."""
    work = attrs.evolve(WORK, arguments={"x": nested(5000)})
    with pytest.raises(StoreRefused):
        await store.create(attrs.evolve(stored(), work=work), ROOMY, T0)
    with pytest.raises(TaskNotFound):
        await store.get("alice", "t-1", T0)
    await store.create(stored(), ROOMY, T0)
    assert await store.get("alice", "t-1", T0) == stored()


def test_a_version_1_record_without_a_status_message_still_reads() -> None:
    """presa-defined (versioned storage format): ``statusMessage`` is written only
    when a worker set one, so records written before it existed read as before."""
    record = to_record(stored())
    assert "statusMessage" not in record["task"]
    assert from_record(record) == stored()
    said = attrs.evolve(stored(), task=model.report(new_task(), "step 1", T0 + 1))
    assert to_record(said)["task"]["statusMessage"] == "step 1"
    assert from_record(to_record(said)) == said


async def test_a_tasks_required_scopes_outlive_its_writes(store: TaskStore) -> None:
    """A-15: the scopes a task's creating call needed are part of its record, in
    every store, through every write to its end; a task without any (authorization
    off) writes none, so records written before them read as before."""
    scopes = frozenset({"mcp", "files:delete"})
    seed = model.create("t-1", now_ms=T0, ttl_ms=60_000, poll_interval_ms=100,
                        required_scopes=scopes)  # fmt: skip
    await store.create(attrs.evolve(stored(), task=seed), ROOMY, T0)
    parked = model.request_input(seed, {"a": ASK}, T0 + 1)
    await store.compare_and_set("alice", parked, 0)
    await store.compare_and_set("alice", model.cancel(parked, T0 + 2), parked.revision)
    read = await store.get("alice", "t-1", T0 + 3)
    assert read.task.required_scopes == scopes
    assert to_record(read)["task"]["requiredScopes"] == ["files:delete", "mcp"]
    assert from_record(to_record(read)) == read
    assert "requiredScopes" not in to_record(stored())["task"]


def test_a_record_of_another_version_is_refused() -> None:
    """presa-defined (versioned storage format): a record a newer server wrote is
    not misread."""
    record: dict[str, Any] = {**to_record(stored()), "version": 2}
    with pytest.raises(UnknownRecordVersion):
        from_record(record)


async def test_every_change_is_announced_in_commit_order(store: TaskStore) -> None:
    """presa-defined (signals between processes): creation, transitions, claims and
    deletions reach a watcher in order, each with the task as stored; a claim, which
    moves the lease alone (rule 4), as not moved, so no listen stream is told of it
    (SEP-2663 §Task Status Notifications)."""
    seen: list[StoreEvent] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(store.watch, seen.append)
        await store.create(stored(ttl_ms=1000, lease=Lease("p1", 1, T0)), ROOMY, T0)
        parked = model.request_input(new_task(ttl_ms=1000), {"k": ASK}, T0 + 1)
        await store.compare_and_set("alice", parked, 0)
        [claimed] = await store.claim_expired("p2", T0 + 2, T0 + 500, 10)
        await store.expire(T0 + 1000)
        nursery.cancel_scope.cancel()
    changes = [e for e in seen if e is not RESYNC]
    assert changes == [
        Changed(stored(ttl_ms=1000, lease=Lease("p1", 1, T0))),
        Changed(attrs.evolve(stored(ttl_ms=1000, lease=Lease("p1", 1, T0)), task=parked)),
        Changed(claimed, moved=False),
        Deleted("alice", "t-1"),
    ]


async def test_a_refused_creation_announces_no_deletion_it_did_not_commit(
    store: TaskStore,
) -> None:
    """presa-defined (rule 6: every committed change is announced, and only those): a
    creation that deletes expired tasks to make room, and is refused all the same,
    announces a deletion only for a task that is gone from the store."""
    full = Limits(max_stored_per_scope=1)
    seen: list[StoreEvent] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(store.watch, seen.append)
        await store.create(stored("b-1", scope="bob", ttl_ms=1000), full, T0)
        await store.create(stored("a-1"), full, T0)
        with pytest.raises(CapacityExceeded):
            await store.create(stored("a-2"), full, T0 + 2000)
        nursery.cancel_scope.cancel()
    announced = [event.task_id for event in seen if isinstance(event, Deleted)]
    assert [task_id for task_id in announced if await store.read(task_id) is not None] == []


async def test_tasks_survive_reopening_the_store(store_url: str, durable: None) -> None:
    """presa-defined (tasks that outlive the process): what one opening wrote, the
    next reads back unchanged, leases included."""
    parked = model.request_input(new_task(), {"k": ASK}, T0 + 1)
    async with open_store(store_url) as first:
        await first.create(stored(), ROOMY, T0)
        await first.compare_and_set("alice", parked, 0)
    async with open_store(store_url) as second:
        assert await second.get("alice", "t-1", T0) == attrs.evolve(stored(), task=parked)


async def test_the_counts_survive_reopening_the_store(store_url: str, durable: None) -> None:
    """presa-defined (rule 2 across restarts): the next opening counts what the last
    one stored, active and finished, per scope and overall, as the limits see it."""
    done = model.cancel(new_task("t-2"), T0 + 1)
    async with open_store(store_url) as first:
        await first.create(stored(), ROOMY, T0)
        await first.create(stored("t-2"), ROOMY, T0)
        await first.compare_and_set("alice", done, 0)
        before = (await first.counts("alice"), await first.counts(), await first.counts("bob"))
    async with open_store(store_url) as second:
        after = (await second.counts("alice"), await second.counts(), await second.counts("bob"))
    assert before == after == (Counts(1, 2), Counts(1, 2), Counts(0, 0))
