"""``sqlite:///PATH``: tasks in one SQLite file, so they survive a restart on one host.

The standard library's :mod:`sqlite3` blocks, so every statement runs off
the Trio thread through :func:`trio.to_thread.run_sync`, behind a
:class:`trio.CapacityLimiter` of one: the single connection is used by one
thread at a time, in call order. A call is not abandoned when its caller is
cancelled, so a transaction always finishes (committed or rolled back); the
caller sees the cancellation once it has.

- **WAL**, so readers never wait for the writer, with ``synchronous=NORMAL``:
  a commit survives the process being killed (SIGKILL included), though
  not a power cut (a checkpoint, not every commit, is fsynced).
- **BEGIN IMMEDIATE** for every write: the write lock is taken before the
  reads that decide it (the capacity count, the revision), so the check and
  the write are one atomic step.
- **Schema version** in ``presa_meta``; a file of another version is refused
  at open, with a one-line error.
- The task is the JSON record of :mod:`presa_trio.tasks.stores.record`; scope,
  status, expiry, revision and the lease are also columns, for the queries
  (capacity counts, expiry, claims) and because a lease changes without the
  task changing.

Only this process writes the file (one server per file): announcements
(:meth:`watch`) are in-process calls, made after each commit.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import attrs
import trio

from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import (
    Capacity,
    CapacityExceeded,
    Changed,
    Counts,
    Deleted,
    Lease,
    StoredTask,
    StoreEvent,
    StoreUnavailable,
    TaskNotFound,
)
from presa_trio.tasks.stores.local import LocalAnnouncer, check_read, check_write
from presa_trio.tasks.stores.record import (
    lease_columns,
    lease_from_json,
    task_from_json,
    to_record,
    work_from_json,
)

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS presa_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    terminal INTEGER NOT NULL,
    expires_ms INTEGER,
    revision INTEGER NOT NULL,
    lease_owner TEXT,
    lease_generation INTEGER,
    lease_expires_ms INTEGER,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_scope ON tasks (scope, terminal);
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks (expires_ms) WHERE expires_ms IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_to_claim ON tasks (lease_expires_ms) WHERE terminal = 0;
"""

COLUMNS = "scope, record, lease_owner, lease_generation, lease_expires_ms"

T = TypeVar("T")


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _record_text(stored: StoredTask) -> str:
    """The record without its lease: the lease lives in columns."""
    record = to_record(stored)
    del record["lease"]
    return _dumps(record)


def _row_to_stored(row: tuple[Any, ...]) -> StoredTask:
    scope, record_text, owner, generation, lease_expires = row
    record = json.loads(record_text)
    lease = None
    if owner is not None:
        lease = lease_from_json(
            {"owner": owner, "generation": generation, "expiresMs": lease_expires}
        )
    return StoredTask(scope, task_from_json(record["task"]), work_from_json(record["work"]), lease)


def _task_text(stored: StoredTask, task: Task) -> str:
    return _record_text(attrs.evolve(stored, task=task))


@attrs.define(eq=False, repr=False)
class SqliteStore(LocalAnnouncer):
    """The store on one SQLite connection; see the module docstring."""

    connection: sqlite3.Connection = attrs.field(kw_only=True)
    _limiter: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(1))

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` on the connection, off the Trio thread, one call at a time."""

        def call() -> T:
            try:
                return work(self.connection)
            except sqlite3.Error as error:
                raise StoreUnavailable(f"sqlite: {error}") from error

        return await trio.to_thread.run_sync(call, limiter=self._limiter)

    async def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``work`` in one ``BEGIN IMMEDIATE`` transaction: all of it or nothing."""

        def transaction(db: sqlite3.Connection) -> T:
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result

        return await self._run(transaction)

    async def aclose(self) -> None:
        """Close the connection, after the call in progress; later calls fail."""
        with trio.CancelScope(shield=True):
            await self._run(lambda db: db.close())

    def _announce_all(self, events: list[StoreEvent]) -> None:
        for event in events:
            self.announce(event)

    # --- creation and reads ------------------------------------------------------

    async def create(self, stored: StoredTask, capacity: Capacity, now_ms: int) -> None:
        deleted: list[StoreEvent] = []

        def insert(db: sqlite3.Connection) -> None:
            if db.execute("SELECT 1 FROM tasks WHERE task_id = ?", (stored.task_id,)).fetchone():
                raise ValueError(f"task id collision: {stored.task_id}")
            if capacity.refusal(_counts(db, stored.scope), _counts(db, None)) is not None:
                deleted.extend(_delete_expired(db, now_ms))
                limit = capacity.refusal(_counts(db, stored.scope), _counts(db, None))
                if limit is not None:
                    raise CapacityExceeded(limit)
            db.execute(
                "INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    stored.task_id,
                    stored.scope,
                    stored.task.terminal,
                    stored.task.expires_ms,
                    stored.task.revision,
                    *lease_columns(stored.lease),
                    _record_text(stored),
                ),
            )

        try:
            await self._write(insert)
        finally:
            self._announce_all(deleted)
        self.announce(Changed(stored))

    async def read(self, task_id: str) -> StoredTask | None:
        def select(db: sqlite3.Connection) -> StoredTask | None:
            row = db.execute(
                f"SELECT {COLUMNS} FROM tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
            return None if row is None else _row_to_stored(row)

        return await self._run(select)

    async def get(self, scope: str, task_id: str, now_ms: int) -> StoredTask:
        return check_read(await self.read(task_id), scope, now_ms)

    async def counts(self, scope: str | None = None) -> Counts:
        return await self._run(lambda db: _counts(db, scope))

    # --- writes ------------------------------------------------------------------

    async def compare_and_set(
        self, scope: str, task: Task, expected_revision: int, *, fence: int | None = None
    ) -> None:
        def update(db: sqlite3.Connection) -> StoredTask:
            row = db.execute(
                f"SELECT {COLUMNS} FROM tasks WHERE task_id = ?", (task.task_id,)
            ).fetchone()
            if row is None or row[0] != scope:
                raise TaskNotFound()
            stored = _row_to_stored(row)
            check_write(stored, expected_revision, fence)
            db.execute(
                "UPDATE tasks SET terminal = ?, revision = ?, record = ? WHERE task_id = ?",
                (task.terminal, task.revision, _task_text(stored, task), task.task_id),
            )
            return attrs.evolve(stored, task=task)

        self.announce(Changed(await self._write(update)))

    async def renew(self, owner: str, held: Mapping[str, int], expires_ms: int) -> set[str]:
        def extend(db: sqlite3.Connection) -> set[str]:
            lost = set()
            for task_id, generation in held.items():
                cursor = db.execute(
                    "UPDATE tasks SET lease_expires_ms = ? "
                    "WHERE task_id = ? AND lease_owner = ? AND lease_generation = ?",
                    (expires_ms, task_id, owner, generation),
                )
                if cursor.rowcount == 0:
                    lost.add(task_id)
            return lost

        return await self._write(extend)

    async def claim_expired(
        self, owner: str, now_ms: int, expires_ms: int, limit: int
    ) -> list[StoredTask]:
        def claim(db: sqlite3.Connection) -> list[StoredTask]:
            rows = db.execute(
                f"SELECT {COLUMNS} FROM tasks WHERE terminal = 0 "
                "AND (lease_expires_ms IS NULL OR lease_expires_ms <= ?) "
                "AND (expires_ms IS NULL OR expires_ms > ?) LIMIT ?",
                (now_ms, now_ms, limit),
            ).fetchall()
            claimed = []
            for row in rows:
                stored = _row_to_stored(row)
                generation = 1 if stored.lease is None else stored.lease.generation + 1
                stored = attrs.evolve(stored, lease=Lease(owner, generation, expires_ms))
                db.execute(
                    "UPDATE tasks SET lease_owner = ?, lease_generation = ?, "
                    "lease_expires_ms = ? WHERE task_id = ?",
                    (owner, generation, expires_ms, stored.task_id),
                )
                claimed.append(stored)
            return claimed

        claimed = await self._write(claim)
        self._announce_all([Changed(stored) for stored in claimed])
        return claimed

    async def release(self, owner: str) -> None:
        await self._write(
            lambda db: db.execute(
                "UPDATE tasks SET lease_expires_ms = 0 WHERE lease_owner = ?", (owner,)
            )
        )

    async def expire(self, now_ms: int) -> list[str]:
        deleted = await self._write(lambda db: _delete_expired(db, now_ms))
        self._announce_all(list(deleted))
        return [event.task_id for event in deleted]


def _counts(db: sqlite3.Connection, scope: str | None) -> Counts:
    if scope is None:
        row = db.execute("SELECT COUNT(*), COUNT(*) - TOTAL(terminal) FROM tasks").fetchone()
    else:
        row = db.execute(
            "SELECT COUNT(*), COUNT(*) - TOTAL(terminal) FROM tasks WHERE scope = ?", (scope,)
        ).fetchone()
    return Counts(active=int(row[1]), stored=int(row[0]))


def _delete_expired(db: sqlite3.Connection, now_ms: int) -> list[Deleted]:
    rows = db.execute(
        "DELETE FROM tasks WHERE expires_ms IS NOT NULL AND expires_ms <= ? "
        "RETURNING scope, task_id",
        (now_ms,),
    ).fetchall()
    return [Deleted(scope, task_id) for scope, task_id in rows]


def _open(path: Path) -> sqlite3.Connection:
    """Connect, switch to WAL, create the schema or check its version (in a thread)."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA busy_timeout = 5000")
        db.execute("BEGIN IMMEDIATE")
        for statement in filter(str.strip, SCHEMA.split(";")):
            db.execute(statement)
        db.execute(
            "INSERT OR IGNORE INTO presa_meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )
        (version,) = db.execute(
            "SELECT value FROM presa_meta WHERE key = 'schema_version'"
        ).fetchone()
        db.execute("COMMIT")
    except BaseException:
        db.close()
        raise
    if version != str(SCHEMA_VERSION):
        db.close()
        raise StoreUnavailable(
            f"{path} holds presa task schema version {version}; this server reads {SCHEMA_VERSION}"
        )
    return db


def sqlite_path(url: str) -> Path:
    """``sqlite:///relative.db`` or ``sqlite:////absolute.db`` (SQLAlchemy's spelling)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise StoreUnavailable(f"bad store URL {url!r}: use sqlite:///PATH")
    return Path(url[len(prefix) :])


@asynccontextmanager
async def open_sqlite_store(url: str) -> AsyncIterator[SqliteStore]:
    """Open (creating if needed) the file ``url`` names; close it on exit."""
    path = sqlite_path(url)
    try:
        connection = await trio.to_thread.run_sync(_open, path)
    except sqlite3.Error as error:
        raise StoreUnavailable(f"cannot open {url}: {error}") from error
    store = SqliteStore(connection=connection)
    try:
        yield store
    finally:
        await store.aclose()
