"""Task event logs in PostgreSQL: two tables, one function that appends, one channel.

The event tables have a schema version of their own (``events_schema_version``
in ``presa_meta``), created on first use beside the task schema, under the
same advisory lock, so the tasks' schema can change without them and the
other way round.

- ``presa_task_event_logs``: one row per task that has a log: the next
  ``seq``, and when the log was closed. Its row lock is the log's lock.
- ``presa_task_events``: the retained events, keyed ``(task_id, seq)``; the
  payload is ``json`` (kept as the text given, so U+0000 survives, which
  ``jsonb`` refuses).

**Appending is one statement**, ``SELECT presa_append_events(…)``: the
function makes the log's row if needed, locks it (``FOR UPDATE``), reads
``next_seq``, inserts the events after it, moves ``next_seq`` on, drops what
retention no longer keeps, and announces the append on the
``presa_task_events`` channel, all in one transaction. Two appenders of one
task in two processes queue on the row lock, and the second reads the
first's ``next_seq``: no duplicate, no hole (rule 7 of
:mod:`presa_trio.tasks.stores.base`). Nothing is appended to a task that is
not stored, or to a closed log.

**Announcements** name the task and its last ``seq``; the store listens
on :data:`EVENTS_CHANNEL` through the same loop as for task changes
(:mod:`presa_trio.tasks.stores.postgres.listen`), and after a reconnection
delivers :data:`~presa_trio.tasks.stores.base.RESYNC`: every stream then
reads its log again from its cursor, so an append announced while nobody
listened is found by that read.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import psycopg

from presa_trio.tasks.events import EventWindow, NewEvent, Retention, TaskEvent
from presa_trio.tasks.stores.postgres.schema import LOCKS, SCHEMA_LOCK

log = logging.getLogger(__name__)

EVENTS_VERSION = 1
#: The channel every append is announced on.
EVENTS_CHANNEL = "presa_task_events"

EVENTS_SCHEMA = f"""
CREATE TABLE presa_task_event_logs (
    task_id   text PRIMARY KEY,
    next_seq  bigint NOT NULL,
    closed_ms bigint
);
CREATE TABLE presa_task_events (
    task_id    text NOT NULL,
    seq        bigint NOT NULL,
    type       text NOT NULL,
    payload    json NOT NULL,
    created_ms bigint NOT NULL,
    PRIMARY KEY (task_id, seq)
);
CREATE INDEX presa_task_events_by_age ON presa_task_events (created_ms);

-- Append events to a task's log; the first seq given, or NULL (no such task,
-- or the log is closed). The log row's lock orders appenders.
CREATE FUNCTION presa_append_events(
    tid text, types text[], payloads text[], now_ms bigint, closing boolean,
    max_events bigint, max_age_ms bigint
) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    first bigint;
    ended bigint;
    n bigint := coalesce(array_length(types, 1), 0);
BEGIN
    IF NOT EXISTS (SELECT FROM presa_tasks WHERE task_id = tid) THEN
        RETURN NULL;
    END IF;
    INSERT INTO presa_task_event_logs VALUES (tid, 0, NULL) ON CONFLICT DO NOTHING;
    SELECT next_seq, closed_ms INTO first, ended
      FROM presa_task_event_logs WHERE task_id = tid FOR UPDATE;
    IF ended IS NOT NULL THEN
        RETURN NULL;
    END IF;
    INSERT INTO presa_task_events
        SELECT tid, first + u.ord - 1, u.t, u.p::json, now_ms
          FROM unnest(types, payloads) WITH ORDINALITY AS u(t, p, ord);
    UPDATE presa_task_event_logs
       SET next_seq = first + n, closed_ms = CASE WHEN closing THEN now_ms END
     WHERE task_id = tid;
    DELETE FROM presa_task_events
     WHERE task_id = tid
       AND (seq < first + n - max_events OR created_ms <= now_ms - max_age_ms);
    PERFORM pg_notify('{EVENTS_CHANNEL}',
                      json_build_object('taskId', tid, 'seq', first + n - 1)::text);
    RETURN first;
END
$$;
"""

Connection = psycopg.Connection[Any]


def ensure_events_schema(connection: Connection) -> None:
    """Create the event tables if the database has none; refuse another version of them."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCKS, SCHEMA_LOCK))
        row = connection.execute(
            "SELECT value FROM presa_meta WHERE key = 'events_schema_version'"
        ).fetchone()
        if row is None:
            connection.execute(EVENTS_SCHEMA)
            connection.execute(
                "INSERT INTO presa_meta VALUES ('events_schema_version', %s)",
                (str(EVENTS_VERSION),),
            )
        elif int(row[0]) != EVENTS_VERSION:
            raise EventsSchemaMismatch(
                f"the database holds presa task event schema version {row[0]}; "
                f"this server reads {EVENTS_VERSION}"
            )


class EventsSchemaMismatch(Exception):
    """The database's event tables are of another version: they are not read."""


def append(
    connection: Connection,
    task_id: str,
    events: Sequence[NewEvent],
    now_ms: int,
    retention: Retention,
    closing: bool,
) -> list[TaskEvent]:
    row = connection.execute(
        "SELECT presa_append_events(%s, %s, %s, %s, %s, %s, %s)",
        (
            task_id,
            [e.type for e in events],
            [json.dumps(e.payload, ensure_ascii=False) for e in events],
            now_ms,
            closing,
            retention.max_events,
            retention.max_age_ms,
        ),
    ).fetchone()
    first = None if row is None else row[0]
    if first is None:
        return []
    return [TaskEvent(first + n, task_id, e.type, e.payload, now_ms) for n, e in enumerate(events)]


def window(connection: Connection, task_id: str, after: int, limit: int) -> EventWindow:
    """The events after ``after``, then the log's bounds (read after them: see next_step)."""
    rows = connection.execute(
        "SELECT seq, type, payload, created_ms FROM presa_task_events"
        " WHERE task_id = %s AND seq > %s ORDER BY seq LIMIT %s",
        (task_id, after, limit),
    ).fetchall()
    bounds = connection.execute(
        "SELECT l.next_seq, l.closed_ms,"
        " (SELECT min(seq) FROM presa_task_events AS e WHERE e.task_id = l.task_id)"
        " FROM presa_task_event_logs AS l WHERE l.task_id = %s",
        (task_id,),
    ).fetchone()
    if bounds is None:
        return EventWindow.empty()
    next_seq, closed_ms, earliest = bounds
    events = [
        TaskEvent(seq, task_id, kind, payload, created) for seq, kind, payload, created in rows
    ]
    return EventWindow(
        events, next_seq if earliest is None else earliest, next_seq, closed_ms is not None
    )


def prune(connection: Connection, now_ms: int, retention: Retention) -> None:
    """Drop events past their age or terminal retention, and the logs of deleted tasks."""
    with connection.transaction():
        connection.execute(
            "DELETE FROM presa_task_event_logs AS l"
            " WHERE NOT EXISTS (SELECT FROM presa_tasks AS t WHERE t.task_id = l.task_id)"
        )
        connection.execute(
            "DELETE FROM presa_task_events AS e WHERE NOT EXISTS"
            " (SELECT FROM presa_task_event_logs AS l WHERE l.task_id = e.task_id)"
        )
        if retention.max_age_ms is not None:
            connection.execute(
                "DELETE FROM presa_task_events WHERE created_ms <= %s",
                (now_ms - retention.max_age_ms,),
            )
        if retention.terminal_ms is not None:
            connection.execute(
                "DELETE FROM presa_task_events WHERE task_id IN (SELECT task_id"
                " FROM presa_task_event_logs WHERE closed_ms <= %s)",
                (now_ms - retention.terminal_ms,),
            )
