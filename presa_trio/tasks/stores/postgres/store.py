"""The PostgreSQL task store: many presa processes, on many hosts, share one database.

``--store postgresql://USER@HOST:PORT/DATABASE`` (any libpq URL). Each
method of :class:`~presa_trio.tasks.stores.base.TaskStore` is one function run off
the Trio thread (:mod:`presa_trio.tasks.stores.postgres.database`), against the schema of
:mod:`presa_trio.tasks.stores.postgres.schema`; changes reach every process through
LISTEN/NOTIFY (:mod:`presa_trio.tasks.stores.postgres.listen`).

How each rule of the store contract is kept:

- **Compare-and-set** is one statement,
  ``UPDATE … WHERE task_id = %s AND scope = %s AND revision = %s``
  (and, for a worker's write, ``AND lease_generation = %s``): PostgreSQL
  re-checks the condition on the row's latest version under its row lock,
  so of two concurrent writers of one revision exactly one updates a row.
  When none is updated, one read says why (unknown, lease lost, conflict).
- **Capacity is checked in the creating transaction.** One statement,
  ``SELECT presa_create_task(…)`` (a function of the schema), takes its
  scope's advisory lock (``pg_advisory_xact_lock``), counts the live tasks
  of the scope and overall (from counters and a partial index, so the count
  does not grow with the tasks kept for their TTL: see
  :mod:`~presa_trio.tasks.stores.postgres.schema`), and inserts only if under
  every limit; the lock is held until commit, so no two creations in one
  scope, in any process, count the same free slot. Creations in different
  scopes share no lock: the overall limits are checked on the counts as
  committed, so concurrent creations may pass them by the few in flight
  (the schema's docstring). presa chooses the lock over SERIALIZABLE (which
  would make every creation ready to retry on serialization failures).
  Being one statement, the span the scope's lock is held holds no network
  round trip, only the counting, the insert and the commit.
- **Leases** are three columns; renewal and release touch only the expiry,
  claiming bumps the generation with ``FOR UPDATE SKIP LOCKED`` so two
  processes recovering at once claim different tasks.
- **Time.** Leases are judged on the database's clock: beside the expiry
  the caller gives (kept and read back as given), a lease gets a deadline
  on the database's clock, the database's time plus the lease's length (the
  caller's expiry less its now), and a claim takes what has passed its
  deadline by the database's time, so a process whose clock is wrong can
  neither take live tasks nor keep dead ones. Task events are stamped and
  aged on the database's clock too
  (:mod:`~presa_trio.tasks.stores.postgres.event_logs`). Task timestamps
  and TTLs are the caller's epoch milliseconds, as in every store. At
  start, a process whose clock is more than
  :data:`~presa_trio.tasks.stores.postgres.database.CLOCK_WARNING_MS` from
  the database's logs a warning.
- **Announcements.** A write is announced to this process's watchers as
  soon as it commits, before the call returns, and to every process by the
  schema's trigger (NOTIFY). A change can so arrive twice, or a change
  from another process can arrive after a later one made here; each task's
  announcements carry ``(revision, lease generation)``, which only grows,
  so anything not newer than what was already delivered for that task is
  dropped, and watchers see each change once, in order. Only unfinished
  tasks keep their version: of the last :data:`REMEMBERED_ENDINGS` that
  finished, and as many deleted, the id alone is kept, so what a process
  remembers is bounded however many tasks end.
- **The server's own changes** (a list changed, a resource updated) are
  no task's: :meth:`PostgresStore.relay_changes` carries them between the
  processes on a channel of their own
  (:mod:`~presa_trio.tasks.stores.postgres.relay`).

Spec: SEP-2663 §Task Creation (durable creation), §Security Implications
(scoped access), §Protocol Errors (expiry).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import attrs
import psycopg
import trio
from psycopg.types.json import Json

from presa_trio.server.subscriptions import ChangeBus
from presa_trio.tasks import events as task_events
from presa_trio.tasks.model import Task, epoch_ms
from presa_trio.tasks.stores.base import (
    DEFAULT_STORE_TIMEOUT_S,
    RESYNC,
    CapacityExceeded,
    Changed,
    Conflict,
    Counts,
    Deleted,
    Deliver,
    DeliverAppend,
    LeaseLost,
    Limits,
    StoredTask,
    StoreError,
    StoreEvent,
    StoreUnavailable,
    TaskIdCollision,
    TaskNotFound,
)
from presa_trio.tasks.stores.local import Announcer, check_read
from presa_trio.tasks.stores.postgres import event_logs
from presa_trio.tasks.stores.postgres.database import Database, Lane, warn_of_clock_skew
from presa_trio.tasks.stores.postgres.listen import Appends, TaskChanges, listen
from presa_trio.tasks.stores.postgres.relay import relay_changes
from presa_trio.tasks.stores.postgres.schema import (
    CHANNEL,
    COLUMNS,
    SchemaMismatch,
    decode,
    ensure_schema,
)
from presa_trio.tasks.stores.record import (
    UNCLAIMED,
    UNDELIVERED,
    readable,
    record_text,
    task_to_json,
    to_json,
)

log = logging.getLogger(__name__)

Connection = psycopg.Connection[Any]

#: How many finished tasks, and how many deleted ones, :meth:`PostgresStore._offer`
#: remembers; late copies arrive within moments, so this covers bursts of
#: endings and of expiry with room to spare.
REMEMBERED_ENDINGS = 10_000

#: The version of a task read but never announced here: older than any.
NEVER = (-1, -1)

#: Live (not yet expired) rows at epoch ms %(now)s.
LIVE = "(expires_ms IS NULL OR expires_ms > %(now)s)"


def remember(ids: OrderedDict[str, None], task_id: str) -> None:
    """Add ``task_id`` to ``ids``, forgetting the oldest past :data:`REMEMBERED_ENDINGS`."""
    ids[task_id] = None
    if len(ids) > REMEMBERED_ENDINGS:
        ids.popitem(last=False)


def as_json(value: Any) -> Json:
    """A ``json`` column's value: text that holds every string (:func:`record_text`)."""
    return Json(value, dumps=record_text)


def version_of(stored: StoredTask) -> tuple[int, int]:
    """What orders a task's announcements: both parts only ever grow."""
    return stored.task.revision, 0 if stored.lease is None else stored.lease.generation


def returning(alias: str) -> str:
    """``RETURNING`` the columns :func:`decode` reads, qualified by ``alias``."""
    return "RETURNING " + ", ".join(f"{alias}.{c.strip()}" for c in COLUMNS.split(","))


@attrs.define(eq=False, repr=False)
class PostgresStore:
    """The task store on PostgreSQL; see the module docstring."""

    database: Database = attrs.field(kw_only=True)
    # This process's watchers, told of its own writes as they commit.
    announcer: Announcer = attrs.field(factory=Announcer)
    # task_id -> the version last delivered to the watchers (see the module
    # docstring), for the tasks not finished; :data:`NEVER` for a task only
    # read so far. Every id here is re-read after the LISTEN connection is
    # lost (:meth:`_resync`). So it holds at most the unfinished tasks, which
    # the active limits bound, whatever number of tasks ever ended.
    _delivered: dict[str, tuple[int, int]] = attrs.field(factory=dict)
    # The ids of the tasks that finished last, and of those deleted last,
    # oldest first, at most :data:`REMEMBERED_ENDINGS` of each: a late copy
    # of a change made before, or of the deletion, is dropped. A finished
    # task never changes again (only its deletion is announced after), so
    # it needs no version and no re-read.
    _finished: OrderedDict[str, None] = attrs.field(factory=OrderedDict)
    _deleted: OrderedDict[str, None] = attrs.field(factory=OrderedDict)

    # --- announcements -----------------------------------------------------------

    def _offer(self, event: StoreEvent) -> None:
        """Deliver ``event`` unless it is not newer than what was delivered for its task.

        A change at the revision delivered last moved only the lease (a
        claim, heard from another process or re-read after a lost
        connection): it is delivered with ``moved`` false (rule 6). One of a
        task never delivered here is moved: no watcher here had it.
        """
        if isinstance(event, Changed):
            task_id, version = event.stored.task_id, version_of(event.stored)
            if self._delivered_already(task_id, version):
                return
            if version[0] <= self._delivered.get(task_id, NEVER)[0]:
                event = attrs.evolve(event, moved=False)
            if event.stored.task.terminal:
                self._delivered.pop(task_id, None)
                remember(self._finished, task_id)
            else:
                self._delivered[task_id] = version
        elif isinstance(event, Deleted):
            if event.task_id in self._deleted:
                return
            self._delivered.pop(event.task_id, None)
            remember(self._deleted, event.task_id)
        self.announcer.announce(event)

    async def watch(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """This process's writes as they commit, and every process's through LISTEN.

        Failure policy: neither child fails by itself (the announcer only
        waits; :func:`listen` connects again, backing off, until it listens,
        the first time too), so the nursery ends only when cancelled.
        """
        async with trio.open_nursery() as nursery:
            await nursery.start(self.announcer.watch, deliver)
            changes = TaskChanges(self._offer, self._delivered_already, self.read, self._resync)
            await listen(
                self.database.conninfo,
                CHANNEL,
                changes.hear,
                changes.resync,
                task_status=task_status,
            )

    def remembered(self) -> int:
        """How many tasks this process keeps a version of, and re-reads after a lost connection."""
        return len(self._delivered)

    def _delivered_already(self, task_id: str, version: tuple[int, int]) -> bool:
        """Whether :meth:`_offer` would drop this change (the listener asks before decoding)."""
        if task_id in self._finished or task_id in self._deleted:
            return True
        return self._delivered.get(task_id, NEVER) >= version

    async def _resync(self) -> None:
        """After a lost LISTEN connection: deliver whatever changed in what this process holds.

        Every unfinished task this process announced or read is read again
        in one query; a newer version is delivered as :class:`Changed`, a task
        no longer stored as :class:`Deleted` (its scope unknown, so empty).
        Then :data:`RESYNC`, for watchers that keep views of their own.
        """
        held = list(self._delivered)

        def work(connection: Connection) -> dict[str, StoredTask | None]:
            rows = connection.execute(
                f"SELECT {COLUMNS}, task_id FROM presa_tasks WHERE task_id = ANY(%s)", (held,)
            ).fetchall()
            return {
                task_id: readable(task_id, partial(decode, tuple(row)), UNDELIVERED)
                for *row, task_id in rows
            }

        found = await self.database.run(work)
        for task_id in held:
            if task_id not in found:
                self._offer(Deleted("", task_id))
            elif (stored := found[task_id]) is not None:
                self._offer(Changed(stored))
        self.announcer.announce(RESYNC)

    # --- the protocol ---------------------------------------------------------------

    async def create(self, stored: StoredTask, limits: Limits, now_ms: int) -> None:
        lease = stored.lease

        def work(connection: Connection) -> list[int] | None:
            row = connection.execute(
                "SELECT presa_create_task("
                "ROW(%s, %s, %s, %s, %s, %s, %s, %s, NULL, %s, %s)::presa_tasks,"
                " %s, %s, %s, %s, %s, %s)",
                (
                    stored.task_id,
                    stored.scope,
                    stored.task.revision,
                    stored.task.terminal,
                    stored.task.expires_ms,
                    None if lease is None else lease.owner,
                    None if lease is None else lease.generation,
                    None if lease is None else lease.expires_ms,
                    as_json(task_to_json(stored.task)),
                    as_json(to_json(stored.work)),
                    None if lease is None else lease.expires_ms - now_ms,
                    now_ms,
                    limits.max_active_per_scope,
                    limits.max_stored_per_scope,
                    limits.max_active,
                    limits.max_stored,
                ),
            ).fetchone()
            assert row is not None
            refused: list[int] | None = row[0]
            return refused

        def insert(connection: Connection) -> list[int] | None:
            try:
                return work(connection)
            except psycopg.errors.UniqueViolation as error:
                raise TaskIdCollision(f"task id collision: {stored.task_id}") from error

        refused = await self.database.run(insert)
        if refused is not None:
            in_scope, overall = Counts(refused[0], refused[1]), Counts(refused[2], refused[3])
            raise CapacityExceeded(limits.refusal(in_scope, overall) or "max_active_tasks")
        self._offer(Changed(stored))

    async def get(self, scope: str, task_id: str, now_ms: int) -> StoredTask:
        return check_read(await self.read(task_id), scope, now_ms)

    async def read(self, task_id: str) -> StoredTask | None:
        def work(connection: Connection) -> StoredTask | None:
            row = connection.execute(
                f"SELECT {COLUMNS} FROM presa_tasks WHERE task_id = %s", (task_id,)
            ).fetchone()
            return None if row is None else decode(row)

        stored = await self.database.run(work)
        if stored is not None and not stored.task.terminal and task_id not in self._deleted:
            # Someone here cares about it now: re-read it after a lost connection.
            self._delivered.setdefault(task_id, NEVER)
        return stored

    async def compare_and_set(
        self,
        scope: str,
        task: Task,
        expected_revision: int,
        *,
        fence: int | None = None,
        events: task_events.LogAppend | None = None,
    ) -> None:
        def update(connection: Connection) -> StoredTask:
            row = connection.execute(
                "UPDATE presa_tasks AS t SET task = %(task)s,"
                " revision = %(revision)s, terminal = %(terminal)s"
                " WHERE t.task_id = %(id)s AND t.scope = %(scope)s"
                " AND t.revision = %(expected)s"
                " AND (%(fence)s::bigint IS NULL OR t.lease_generation = %(fence)s) "
                + returning("t"),
                {
                    "task": as_json(task_to_json(task)),
                    "revision": task.revision,
                    "terminal": task.terminal,
                    "id": task.task_id,
                    "scope": scope,
                    "expected": expected_revision,
                    "fence": fence,
                },
            ).fetchone()
            if row is not None:
                return decode(row)
            found = connection.execute(
                "SELECT revision, lease_generation FROM presa_tasks"
                " WHERE task_id = %s AND scope = %s",
                (task.task_id, scope),
            ).fetchone()
            if found is None:
                raise TaskNotFound()
            revision, generation = found
            if fence is not None and generation != fence:
                raise LeaseLost(
                    f"task {task.task_id}: generation {fence} no longer holds the lease"
                )
            raise Conflict(
                f"task {task.task_id} is at revision {revision}, not {expected_revision}"
            )

        def work(connection: Connection) -> tuple[StoredTask, bool]:
            if events is None:
                return update(connection), False
            # The write's own events commit with it, or neither does (rule 7).
            with connection.transaction():
                written = update(connection)
                appended = event_logs.append(
                    connection, task.task_id, events.events, events.retention, events.closing
                )
            return written, bool(appended)

        # A worker's write (it carries its lease) waits in the background lane.
        lane = Lane.REQUEST if fence is None else Lane.BACKGROUND
        written, appended = await self.database.run(work, lane)
        self._offer(Changed(written))
        if appended:
            self.announcer.announce_append(task.task_id)

    async def renew(
        self, owner: str, held: Mapping[str, int], expires_ms: int, now_ms: int
    ) -> set[str]:
        if not held:
            return set()

        def work(connection: Connection) -> set[str]:
            rows = connection.execute(
                "UPDATE presa_tasks AS t SET lease_expires_ms = %s,"
                " lease_deadline_ms = presa_now_ms() + %s"
                " FROM unnest(%s::text[], %s::bigint[]) AS h(task_id, generation)"
                " WHERE t.task_id = h.task_id AND t.lease_owner = %s"
                " AND t.lease_generation = h.generation"
                " RETURNING t.task_id",
                (expires_ms, expires_ms - now_ms, list(held), list(held.values()), owner),
            ).fetchall()
            return set(held) - {task_id for (task_id,) in rows}

        return await self.database.run(work, Lane.BACKGROUND)

    async def claim_expired(
        self, owner: str, now_ms: int, expires_ms: int, limit: int, *, released_only: bool = False
    ) -> list[StoredTask]:
        def work(connection: Connection) -> list[StoredTask]:
            rows = connection.execute(
                "UPDATE presa_tasks AS t SET lease_owner = %(owner)s,"
                " lease_generation = coalesce(t.lease_generation, 0) + 1,"
                " lease_expires_ms = %(expires)s, lease_deadline_ms = presa_now_ms() + %(lease)s"
                " FROM (SELECT task_id FROM presa_tasks"
                f"       WHERE NOT terminal AND {LIVE}"
                "        AND (lease_deadline_ms IS NULL OR lease_deadline_ms"
                "             <= CASE WHEN %(released_only)s THEN 0 ELSE presa_now_ms() END)"
                "       ORDER BY task_id LIMIT %(limit)s FOR UPDATE SKIP LOCKED) AS c"
                " WHERE t.task_id = c.task_id " + returning("t") + ", t.task_id",
                {
                    "owner": owner,
                    "expires": expires_ms,
                    "lease": expires_ms - now_ms,
                    "now": now_ms,
                    "limit": limit,
                    "released_only": released_only,
                },
            ).fetchall()
            # One left out is claimed all the same: the next claims meet it once its lease lapses.
            found = (
                readable(task_id, partial(decode, tuple(row)), UNCLAIMED) for *row, task_id in rows
            )
            return [stored for stored in found if stored is not None]

        claimed = await self.database.run(work, Lane.BACKGROUND)
        for stored in claimed:
            self._offer(Changed(stored, moved=False))
        return claimed

    async def release(self, owner: str) -> None:
        await self.database.run(
            lambda connection: connection.execute(
                "UPDATE presa_tasks SET lease_expires_ms = 0, lease_deadline_ms = 0"
                " WHERE lease_owner = %s",
                (owner,),
            ),
            Lane.BACKGROUND,
        )

    async def expire(self, now_ms: int) -> list[str]:
        """Delete the expired tasks; a scope's counter row goes with its last task.

        The row is deleted in the transaction whose trigger counted the
        deletion, which holds every row it deletes locked already: it waits
        on no other transaction, and a creation in that scope waiting on the
        row inserts it again. So ``presa_counts`` holds the scopes with
        tasks, not every caller that ever made one.
        """

        def work(connection: Connection) -> list[tuple[str, str]]:
            with connection.transaction():
                rows = connection.execute(
                    "DELETE FROM presa_tasks WHERE expires_ms <= %s RETURNING scope, task_id",
                    (now_ms,),
                ).fetchall()
                if rows:
                    connection.execute(
                        "DELETE FROM presa_counts"
                        " WHERE NOT overall AND stored = 0 AND scope = ANY(%s)",
                        (sorted({scope for scope, _ in rows}),),
                    )
            return [(scope, task_id) for scope, task_id in rows]

        deleted = await self.database.run(work, Lane.BACKGROUND)
        for scope, task_id in deleted:
            self._offer(Deleted(scope, task_id))
        return [task_id for _, task_id in deleted]

    async def counts(self, scope: str | None = None) -> Counts:
        def work(connection: Connection) -> Counts:
            row = connection.execute(
                "SELECT count(*) FILTER (WHERE NOT terminal), count(*) FROM presa_tasks"
                " WHERE %(scope)s::text IS NULL OR scope = %(scope)s",
                {"scope": scope},
            ).fetchone()
            assert row is not None
            return Counts(row[0], row[1])

        return await self.database.run(work)

    # --- task events (rule 7; postgres.event_logs) --------------------------------------

    async def append_events(
        self,
        task_id: str,
        events: Sequence[task_events.NewEvent],
        now_ms: int,
        retention: task_events.Retention,
        *,
        closing: bool = False,
        fence: int | None = None,
    ) -> list[task_events.TaskEvent]:
        """Stamped on the database's clock: ``now_ms`` is not read (rule 5)."""
        appended = await self.database.run(
            lambda connection: event_logs.append(
                connection, task_id, events, retention, closing, fence
            ),
            Lane.BACKGROUND,
        )
        if appended:
            self.announcer.announce_append(task_id)
        return appended

    async def read_events(
        self,
        task_id: str,
        after: int,
        limit: int,
        now_ms: int,
        retention: task_events.Retention,
    ) -> task_events.EventWindow:
        """Terminal retention judged on the database's clock: ``now_ms`` is not read."""
        return await self.database.run(
            lambda connection: event_logs.window(connection, task_id, after, limit, retention)
        )

    async def prune_events(self, now_ms: int, retention: task_events.Retention) -> None:
        """Ages judged on the database's clock: ``now_ms`` is not read (rule 5)."""
        await self.database.run(
            lambda connection: event_logs.prune(connection, retention),
            Lane.BACKGROUND,
        )

    async def watch_events(
        self,
        deliver: DeliverAppend,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """This process's appends as they commit, and every process's through LISTEN.

        Failure policy: that of :meth:`watch`, whose nursery this one mirrors.
        """
        async with trio.open_nursery() as nursery:
            await nursery.start(self.announcer.watch_events, deliver)
            appends = Appends(deliver)
            await listen(
                self.database.conninfo,
                event_logs.EVENTS_CHANNEL,
                appends.hear,
                appends.resync,
                task_status=task_status,
            )

    async def relay_changes(
        self,
        bus: ChangeBus,
        origin: str,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """The server's own change notifications, to and from every process
        (:mod:`~presa_trio.tasks.stores.postgres.relay`)."""
        await relay_changes(self.database, bus, origin, task_status=task_status)


@asynccontextmanager
async def open_postgresql_store(
    url: str, store_timeout: float = DEFAULT_STORE_TIMEOUT_S
) -> AsyncIterator[PostgresStore]:
    """Connect to the database ``url`` names, creating the schema on first use."""
    database = Database(url, timeout=store_timeout)
    await database.open()
    try:
        try:
            await database.run(ensure_schema)
            await database.run(event_logs.ensure_events_schema)
        except (SchemaMismatch, event_logs.EventsSchemaMismatch):
            raise
        except StoreError as error:
            # A role that may not create tables, say: the start ends in one line all the same.
            raise StoreUnavailable(f"cannot set up presa's tables: {error}") from error
        await warn_of_clock_skew(database, epoch_ms)
        yield PostgresStore(database=database)
    finally:
        with trio.CancelScope(shield=True):
            await database.close()
