"""Task event logs in the SQLite file: two tables, and the statements over them.

The event tables have a schema version of their own, ``events_schema_version``
in ``presa_meta``, beside the tasks' ``schema_version``: a file without them
gets them when it is opened (:func:`ensure_tables`), whatever its task schema,
and a file whose event tables are of another version is refused.

- ``task_event_logs``: one row per task that has a log: the next ``seq``,
  and when the log was closed;
- ``task_events``: the retained events, keyed ``(task_id, seq)``.

:class:`SqliteEventLogs` is the store's part that serves them. Every
function here runs on the store's connection, inside the caller's
transaction (the store's ``BEGIN IMMEDIATE`` for a write), so an append
checks its writer's fence, reads ``next_seq``, inserts and trims in one
atomic step, and a write's own events go in the write's transaction
(rule 7 of :mod:`presa_trio.tasks.stores.base`). One server holds a file,
so the stamps and the ages are on its one clock.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

import attrs

from presa_trio.tasks.events import EventWindow, NewEvent, Retention, TaskEvent
from presa_trio.tasks.stores.local import Announcer
from presa_trio.tasks.stores.record import record_text
from presa_trio.tasks.stores.sqlite.database import Database

#: The event tables, version :data:`EVENTS_VERSION`.
EVENTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS task_event_logs (
    task_id TEXT PRIMARY KEY,
    next_seq INTEGER NOT NULL,
    closed_ms INTEGER
);
CREATE TABLE IF NOT EXISTS task_events (
    task_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS task_events_by_age ON task_events (created_ms);
"""

#: The version of the event tables, kept as ``events_schema_version``.
EVENTS_VERSION = 1


def check_version(db: sqlite3.Connection) -> str | None:
    """Why a presa file's event tables cannot be read (another version), or None; reads only."""
    row = db.execute("SELECT value FROM presa_meta WHERE key = 'events_schema_version'")
    (version,) = row.fetchone() or (str(EVENTS_VERSION),)
    if version != str(EVENTS_VERSION):
        return f"holds presa task event schema version {version}; this server reads 1"
    return None


def ensure_tables(db: sqlite3.Connection) -> None:
    """Create the event tables if the file has none, in the opening transaction.

    Runs once the file is known to be presa's and :func:`check_version` passed.
    """
    for statement in filter(str.strip, EVENTS_SCHEMA.split(";")):
        db.execute(statement)
    db.execute(
        "INSERT OR IGNORE INTO presa_meta VALUES ('events_schema_version', ?)",
        (str(EVENTS_VERSION),),
    )


def append(
    db: sqlite3.Connection,
    task_id: str,
    events: Sequence[NewEvent],
    now_ms: int,
    retention: Retention,
    closing: bool,
    fence: int | None = None,
) -> list[TaskEvent]:
    """Append after the log's ``next_seq``; nothing if the task is gone, the log closed,
    or (with ``fence``) the task is terminal or no longer that generation's."""
    task = db.execute(
        "SELECT terminal, lease_generation FROM tasks WHERE task_id = ?", (task_id,)
    ).fetchone()
    if task is None or (fence is not None and (task[0] or task[1] != fence)):
        return []
    db.execute(
        "INSERT OR IGNORE INTO task_event_logs VALUES (?, 0, NULL)",
        (task_id,),
    )
    next_seq, closed_ms, last_ms = db.execute(
        "SELECT next_seq, closed_ms, (SELECT created_ms FROM task_events"
        " WHERE task_id = ? ORDER BY seq DESC LIMIT 1)"
        " FROM task_event_logs WHERE task_id = ?",
        (task_id, task_id),
    ).fetchone()
    if closed_ms is not None:
        return []
    # A log's stamps never go back, so an age cuts it at one seq (Retention).
    stamp = now_ms if last_ms is None else max(now_ms, last_ms)
    appended = [
        TaskEvent(next_seq + n, task_id, new.type, new.payload, stamp)
        for n, new in enumerate(events)
    ]
    db.executemany(
        "INSERT INTO task_events VALUES (?, ?, ?, ?, ?)",
        [(task_id, e.seq, e.type, record_text(e.payload), stamp) for e in appended],
    )
    db.execute(
        "UPDATE task_event_logs SET next_seq = ?, closed_ms = ? WHERE task_id = ?",
        (next_seq + len(appended), stamp if closing else None, task_id),
    )
    db.execute(
        "DELETE FROM task_events WHERE task_id = ? AND (seq < ? OR created_ms <= ?)",
        (task_id, next_seq + len(appended) - retention.max_events, retention.age_cutoff(stamp)),
    )
    return appended


def window(
    db: sqlite3.Connection,
    task_id: str,
    after: int,
    limit: int,
    now_ms: int,
    retention: Retention,
) -> EventWindow:
    """The events after ``after`` and the log's bounds, in one statement (one snapshot),
    without the events past the maximum age, pruned or not."""
    kept = "(:cutoff IS NULL OR created_ms > :cutoff)"
    rows = db.execute(
        "WITH b AS MATERIALIZED (SELECT next_seq, closed_ms,"
        f"  (SELECT seq FROM task_events WHERE task_id = :id AND {kept} ORDER BY seq LIMIT 1)"
        "   AS earliest FROM task_event_logs WHERE task_id = :id)"
        " SELECT b.next_seq, b.closed_ms, b.earliest, e.seq, e.type, e.payload, e.created_ms"
        " FROM b LEFT JOIN (SELECT * FROM task_events"
        f"   WHERE task_id = :id AND seq > :after AND {kept} ORDER BY seq LIMIT :limit) AS e ON 1"
        " ORDER BY e.seq",
        {"id": task_id, "after": after, "limit": limit, "cutoff": retention.age_cutoff(now_ms)},
    ).fetchall()
    decoded = [(*row[:5], None if row[5] is None else json.loads(row[5]), row[6]) for row in rows]
    return EventWindow.from_rows(task_id, decoded, now_ms, retention)


def prune(db: sqlite3.Connection, now_ms: int, retention: Retention) -> None:
    """Drop events past their age or terminal retention (a prefix of each log, as a
    log's stamps never go back); drop the logs of deleted tasks."""
    db.execute("DELETE FROM task_events WHERE task_id NOT IN (SELECT task_id FROM tasks)")
    db.execute("DELETE FROM task_event_logs WHERE task_id NOT IN (SELECT task_id FROM tasks)")
    if retention.max_age_ms is not None:
        db.execute("DELETE FROM task_events WHERE created_ms <= ?", (retention.age_cutoff(now_ms),))
    if retention.terminal_ms is not None:
        db.execute(
            "DELETE FROM task_events WHERE task_id IN (SELECT task_id FROM task_event_logs"
            " WHERE closed_ms IS NOT NULL AND closed_ms <= ?)",
            (now_ms - retention.terminal_ms,),
        )


@attrs.define(eq=False, repr=False)
class SqliteEventLogs:
    """The SQLite store's task event methods, on the store's own connections.

    Appends and pruning are writes (``BEGIN IMMEDIATE``, on the writer);
    reads go to the reader connection, so a stream never waits for a write.
    """

    database: Database
    announcer: Announcer

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
        appended = await self.database.write(
            lambda db: append(db, task_id, events, now_ms, retention, closing, fence)
        )
        if appended:
            self.announcer.announce_append(task_id)
        return appended

    async def read_events(
        self, task_id: str, after: int, limit: int, now_ms: int, retention: Retention
    ) -> EventWindow:
        return await self.database.read(
            lambda db: window(db, task_id, after, limit, now_ms, retention)
        )

    async def prune_events(self, now_ms: int, retention: Retention) -> None:
        await self.database.write(lambda db: prune(db, now_ms, retention))
