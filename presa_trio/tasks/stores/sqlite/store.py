"""``sqlite:///PATH``: tasks in one SQLite file, so they survive a restart on one host.

Every statement runs off the Trio thread, on one of two connections: the
writer for every write (and ``counts``), the reader for ``get`` and ``read``
(:mod:`presa_trio.tasks.stores.sqlite.database`).

- **One server per file.** The store holds an exclusive lock
  (:func:`fcntl.flock`) on ``PATH.lock`` beside the file, with its pid in
  it, for as long as it is open, and keeps it under that name
  (:mod:`presa_trio.tasks.stores.sqlite.lock`); a second server on the
  same file is refused at start, with one line naming the holder's pid:
  two processes would each run, answer and cancel tasks the other cannot see.
- **The owner's alone.** A file the store creates is mode 0600
  (:func:`presa_trio.private_files.create_private`): it holds every
  caller's tasks, their answers and results. SQLite gives the write-ahead
  log and the shared memory beside it the file's own mode.
- **Nothing is written before the file is known to be presa's.** An empty
  or new file gets the schema; a file with tables but no ``presa_meta``, or
  another schema version, is refused before anything (WAL mode included)
  is written to it.
- **The file keeps its name**, and so does its write-ahead log. A file or
  log moved, deleted or replaced while the store is open makes every call
  unavailable until it is back (:mod:`presa_trio.tasks.stores.sqlite.database`).
- **Deadlines.** Every call ends within the store timeout of being made
  (``--store-timeout``); see :mod:`presa_trio.tasks.stores.sqlite.database`.
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

Only this process writes the file (one server per file, locked):
announcements (:meth:`watch`, :meth:`watch_events`) are in-process calls,
made after each commit.

Task event logs (rule 7) are two tables of their own, with a schema version
of their own, and their methods (:mod:`presa_trio.tasks.stores.sqlite.event_logs`).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import attrs
import trio

from presa_trio.private_files import create_private
from presa_trio.tasks.events import EventWindow, LogAppend, NewEvent, Retention, TaskEvent
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import (
    DEFAULT_STORE_TIMEOUT_S,
    CapacityExceeded,
    Changed,
    Counts,
    Deleted,
    Deliver,
    DeliverAppend,
    Lease,
    Limits,
    StoredTask,
    StoreEvent,
    StoreUnavailable,
    TaskIdCollision,
    TaskNotFound,
    Work,
)
from presa_trio.tasks.stores.local import Announcer, check_read, check_write
from presa_trio.tasks.stores.record import (
    UNCLAIMED,
    from_json,
    lease_columns,
    readable,
    record_text,
    task_from_json,
    to_record,
)
from presa_trio.tasks.stores.sqlite import event_logs
from presa_trio.tasks.stores.sqlite.database import Database, Link
from presa_trio.tasks.stores.sqlite.event_logs import SqliteEventLogs
from presa_trio.tasks.stores.sqlite.identity import FileIdentity
from presa_trio.tasks.stores.sqlite.lock import HeldLock

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


def _record_text(stored: StoredTask) -> str:
    """The record without its lease: the lease lives in columns."""
    record = to_record(stored)
    del record["lease"]
    return record_text(record)


def _row_to_stored(row: tuple[Any, ...]) -> StoredTask:
    scope, record_text, owner, generation, lease_expires = row
    record = json.loads(record_text)
    lease = None
    if owner is not None:
        lease = Lease(owner, generation, lease_expires)
    return StoredTask(scope, task_from_json(record["task"]), from_json(record["work"], Work), lease)


def _task_text(stored: StoredTask, task: Task) -> str:
    return _record_text(attrs.evolve(stored, task=task))


@attrs.define(eq=False, repr=False)
class SqliteStore:
    """The store on one SQLite file; see the module docstring."""

    database: Database
    announcer: Announcer = attrs.field(factory=Announcer)
    event_logs: SqliteEventLogs = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.event_logs = SqliteEventLogs(self.database, self.announcer)

    async def aclose(self) -> None:
        """Close the file; later calls fail (another process may serve it)."""
        await self.database.aclose()

    async def watch(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        await self.announcer.watch(deliver, task_status=task_status)

    async def watch_events(
        self,
        deliver: DeliverAppend,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        await self.announcer.watch_events(deliver, task_status=task_status)

    async def append_events(
        self,
        task_id: str,
        events: Sequence[NewEvent],
        now_ms: int,
        retention: Retention,
        *,
        closing: bool = False,
        fence: int | None = None,
    ) -> list[TaskEvent]:
        return await self.event_logs.append_events(
            task_id, events, now_ms, retention, closing=closing, fence=fence
        )

    async def read_events(
        self, task_id: str, after: int, limit: int, now_ms: int, retention: Retention
    ) -> EventWindow:
        return await self.event_logs.read_events(task_id, after, limit, now_ms, retention)

    async def prune_events(self, now_ms: int, retention: Retention) -> None:
        await self.event_logs.prune_events(now_ms, retention)

    def _announce_all(self, events: list[StoreEvent]) -> None:
        for event in events:
            self.announcer.announce(event)

    # --- creation and reads ------------------------------------------------------

    async def create(self, stored: StoredTask, limits: Limits, now_ms: int) -> None:
        deleted: list[StoreEvent] = []

        def insert(db: sqlite3.Connection) -> str | None:
            """The limit that refused the task, else None once it is inserted.

            A refusal is returned, not raised, so the deletions made to find
            room commit (and are announced) all the same: a write that
            raises is rolled back.
            """
            if limits.refusal(*_scope_and_overall(db, stored.scope)) is not None:
                deleted.extend(_delete_expired(db, now_ms))
                limit = limits.refusal(*_scope_and_overall(db, stored.scope))
                if limit is not None:
                    return limit
            try:
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
            except sqlite3.IntegrityError as error:
                if error.sqlite_errorname != "SQLITE_CONSTRAINT_PRIMARYKEY":
                    raise
                raise TaskIdCollision(f"task id collision: {stored.task_id}") from error
            return None

        refused = await self.database.write(insert)
        self._announce_all(deleted)
        if refused is not None:
            raise CapacityExceeded(refused)
        self.announcer.announce(Changed(stored))

    async def read(self, task_id: str) -> StoredTask | None:
        def select(db: sqlite3.Connection) -> StoredTask | None:
            row = db.execute(
                f"SELECT {COLUMNS} FROM tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
            return None if row is None else _row_to_stored(row)

        return await self.database.read(select)

    async def get(self, scope: str, task_id: str, now_ms: int) -> StoredTask:
        return check_read(await self.read(task_id), scope, now_ms)

    async def counts(self, scope: str | None = None) -> Counts:
        return await self.database.run(lambda db: _counts(db, scope))

    # --- writes ------------------------------------------------------------------

    async def compare_and_set(
        self,
        scope: str,
        task: Task,
        expected_revision: int,
        *,
        fence: int | None = None,
        events: LogAppend | None = None,
    ) -> None:
        def update(db: sqlite3.Connection) -> tuple[StoredTask, bool]:
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
            appended = events is not None and bool(
                event_logs.append(
                    db,
                    task.task_id,
                    events.events,
                    events.now_ms,
                    events.retention,
                    events.closing,
                )
            )
            return attrs.evolve(stored, task=task), appended

        written, appended = await self.database.write(update)
        self.announcer.announce(Changed(written))
        if appended:
            self.announcer.announce_append(task.task_id)

    async def renew(
        self, owner: str, held: Mapping[str, int], expires_ms: int, now_ms: int
    ) -> set[str]:
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

        return await self.database.write(extend)

    async def claim_expired(
        self, owner: str, now_ms: int, expires_ms: int, limit: int, *, released_only: bool = False
    ) -> list[StoredTask]:
        def claim(db: sqlite3.Connection) -> list[StoredTask]:
            rows = db.execute(
                f"SELECT task_id, lease_generation, {COLUMNS} FROM tasks WHERE terminal = 0 "
                "AND (lease_expires_ms IS NULL OR lease_expires_ms <= ?) "
                "AND (expires_ms IS NULL OR expires_ms > ?) LIMIT ?",
                (0 if released_only else now_ms, now_ms, limit),
            ).fetchall()
            claimed = []
            for task_id, held, *row in rows:
                generation = 1 if held is None else held + 1
                db.execute(
                    "UPDATE tasks SET lease_owner = ?, lease_generation = ?, "
                    "lease_expires_ms = ? WHERE task_id = ?",
                    (owner, generation, expires_ms, task_id),
                )
                # Claimed all the same: the next claims meet it once its lease lapses again.
                stored = readable(task_id, partial(_row_to_stored, tuple(row)), UNCLAIMED)
                if stored is not None:
                    lease = Lease(owner, generation, expires_ms)
                    claimed.append(attrs.evolve(stored, lease=lease))
            return claimed

        claimed = await self.database.write(claim)
        self._announce_all([Changed(stored, moved=False) for stored in claimed])
        return claimed

    async def release(self, owner: str) -> None:
        await self.database.write(
            lambda db: db.execute(
                "UPDATE tasks SET lease_expires_ms = 0 WHERE lease_owner = ?", (owner,)
            )
        )

    async def expire(self, now_ms: int) -> list[str]:
        deleted = await self.database.write(lambda db: _delete_expired(db, now_ms))
        self._announce_all(list(deleted))
        return [event.task_id for event in deleted]


#: The writer's counts of stored and active tasks per scope, kept by its own
#: triggers: temporary (this connection's alone, which makes every write),
#: rebuilt from the tasks when the file is opened, so the file's format
#: does not hold them. A scope's row goes with its last task: the rows are
#: the scopes with tasks, which every creation sums, not every caller ever.
COUNTERS = """
CREATE TEMP TABLE task_counts (
    scope TEXT PRIMARY KEY, stored INTEGER NOT NULL, active INTEGER NOT NULL
);
INSERT INTO temp.task_counts
    SELECT scope, COUNT(*), COUNT(*) - TOTAL(terminal) FROM main.tasks GROUP BY scope;
CREATE TEMP TRIGGER task_counts_insert AFTER INSERT ON main.tasks BEGIN
    INSERT INTO task_counts VALUES (NEW.scope, 1, 1 - NEW.terminal)
    ON CONFLICT (scope) DO UPDATE SET stored = stored + 1, active = active + 1 - NEW.terminal;
END;
CREATE TEMP TRIGGER task_counts_delete AFTER DELETE ON main.tasks BEGIN
    UPDATE task_counts SET stored = stored - 1, active = active - 1 + OLD.terminal
    WHERE scope = OLD.scope;
    DELETE FROM task_counts WHERE scope = OLD.scope AND stored = 0;
END;
CREATE TEMP TRIGGER task_counts_update AFTER UPDATE OF terminal ON main.tasks
WHEN NEW.terminal != OLD.terminal BEGIN
    UPDATE task_counts SET active = active + OLD.terminal - NEW.terminal
    WHERE scope = NEW.scope;
END
"""


def _counts(db: sqlite3.Connection, scope: str | None) -> Counts:
    """The counts of :data:`COUNTERS` (on the writer): no scan of the tasks."""
    in_scope, overall = _scope_and_overall(db, scope)
    return overall if scope is None else in_scope


def _scope_and_overall(db: sqlite3.Connection, scope: str | None) -> tuple[Counts, Counts]:
    """The counts of ``scope`` and of every scope, in one statement."""
    row = db.execute(
        "SELECT TOTAL(active) FILTER (WHERE scope = ?1), TOTAL(stored) FILTER (WHERE scope = ?1),"
        " TOTAL(active), TOTAL(stored) FROM task_counts",
        (scope,),
    ).fetchone()
    return Counts(int(row[0]), int(row[1])), Counts(int(row[2]), int(row[3]))


def _delete_expired(db: sqlite3.Connection, now_ms: int) -> list[Deleted]:
    rows = db.execute(
        "DELETE FROM tasks WHERE expires_ms IS NOT NULL AND expires_ms <= ? "
        "RETURNING scope, task_id",
        (now_ms,),
    ).fetchall()
    return [Deleted(scope, task_id) for scope, task_id in rows]


def _connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


def check_writable(path: Path) -> None:
    """In a thread: :class:`StoreUnavailable`, naming it, unless this process may write
    the file and whichever of its log and shared memory exist.

    Checked before SQLite opens the file: in WAL mode its first read makes
    the log and the shared memory beside a file it cannot write, in the
    file's mode, and a shared memory file left read-only refuses every later
    start, though the file be made writable again.
    """
    real = path.resolve()
    for name in (path, real.with_name(f"{real.name}-wal"), real.with_name(f"{real.name}-shm")):
        try:
            os.close(os.open(name, os.O_RDWR))
        except FileNotFoundError:
            continue
        except OSError as error:
            raise StoreUnavailable(f"cannot open {name}: {error.strerror}") from None


def _open(
    path: Path,
) -> tuple[sqlite3.Connection, sqlite3.Connection, tuple[FileIdentity, FileIdentity]]:
    """The writer, the reader and the files they opened (the database, its log), once
    the file is known to be presa's (in a thread).

    Reading what tables the file holds writes nothing; only a file with
    none (new, or empty) gets the schema, and only a presa file of this
    schema version is switched to WAL. A file with another name (a hard
    link) is refused: the lock beside it cannot see that name, and SQLite
    names its write-ahead log after the name opened, so two servers would
    write one file through two logs.
    """
    if path.is_dir():
        raise StoreUnavailable(f"{path} is a directory: name a file")
    links = path.stat().st_nlink if path.exists() else 1
    if links > 1:
        raise StoreUnavailable(
            f"{path} has {links} hard links: SQLite keeps its log by name, so serve it by one name"
        )
    create_private(path)
    check_writable(path)
    db = _connect(path)
    try:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        if tables and "presa_meta" not in tables:
            raise StoreUnavailable(f"{path} is not a presa task store: it holds other tables")
        if "presa_meta" in tables:
            row = db.execute("SELECT value FROM presa_meta WHERE key = 'schema_version'")
            (version,) = row.fetchone() or ("none",)
            if version != str(SCHEMA_VERSION):
                raise StoreUnavailable(
                    f"{path} holds presa task schema version {version}; "
                    f"this server reads {SCHEMA_VERSION}"
                )
            refused = event_logs.check_version(db)
            if refused is not None:
                raise StoreUnavailable(f"{path} {refused}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        # A file this process may not write (read-only, say) is refused now, not at
        # its first task: the write lock is taken even when nothing is missing.
        db.execute("BEGIN IMMEDIATE")
        if not tables:
            for statement in filter(str.strip, SCHEMA.split(";")):
                db.execute(statement)
            db.execute(
                "INSERT OR IGNORE INTO presa_meta VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        # The event tables, if the file has none yet (their version was checked above).
        event_logs.ensure_tables(db)
        db.execute("COMMIT")
        db.executescript(COUNTERS)
        # The log is named after the file as SQLite opened it, its links followed.
        (name,) = [
            name for _, schema, name in db.execute("PRAGMA database_list") if schema == "main"
        ]
        opened = (FileIdentity.of(path), FileIdentity.of(Path(f"{name}-wal")))
        reader = _connect(path)
    except BaseException:
        db.close()
        raise
    reader.execute("PRAGMA query_only = ON")
    return db, reader, opened


def sqlite_path(url: str) -> Path:
    """``sqlite:///relative.db`` or ``sqlite:////absolute.db`` (SQLAlchemy's spelling).

    ``:memory:`` is refused: SQLite would give the writer and the reader a
    database each, and a task written could never be read.
    """
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise StoreUnavailable(f"bad store URL {url!r}: use sqlite:///PATH")
    if url[len(prefix) :] == ":memory:":
        raise StoreUnavailable(
            f"bad store URL {url!r}: SQLite's in-memory database is not a file; use memory:"
        )
    return Path(url[len(prefix) :])


@attrs.frozen
class Opened:
    """What :func:`open_locked` opened: the lock, the connections, the files they opened."""

    lock: HeldLock
    writer: sqlite3.Connection
    reader: sqlite3.Connection
    files: tuple[FileIdentity, FileIdentity]


def open_locked(url: str) -> Opened:
    """In a thread: lock the file ``url`` names (:class:`HeldLock`), then open it (:func:`_open`).

    A file refused is let go of whole: its lock is released, and a lock file
    made just now removed, so it keeps nothing of presa's beside it.
    """
    path = sqlite_path(url)
    if not path.parent.is_dir():
        raise StoreUnavailable(f"cannot open {url}: no directory {path.parent}")
    lock = HeldLock.take(path)
    try:
        writer, reader, files = _open(path)
    except BaseException as error:
        if lock.made:
            lock.lock_file.unlink()
        lock.release()
        if isinstance(error, sqlite3.Error):
            raise StoreUnavailable(f"cannot open {url}: {error}") from error
        raise
    return Opened(lock, writer, reader, files)


@asynccontextmanager
async def open_sqlite_store(
    url: str, store_timeout: float = DEFAULT_STORE_TIMEOUT_S
) -> AsyncIterator[SqliteStore]:
    """Lock and open (creating if needed) the file ``url`` names; close and unlock on exit.

    The lock file and the database are opened in a thread, as every file
    I/O of the store is; not abandoned if cancelled, so what it opened is
    always closed here.
    """
    opened = await trio.to_thread.run_sync(open_locked, url)
    try:
        database = Database(
            writer=Link(opened.writer),
            reader=Link(opened.reader),
            timeout=store_timeout,
            files=opened.files,
            lock=opened.lock,
        )
        store = SqliteStore(database)
        try:
            yield store
        finally:
            await store.aclose()
    finally:
        opened.lock.release()
