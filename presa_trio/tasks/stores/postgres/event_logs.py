"""Task event logs in PostgreSQL: two tables, one function that appends, one channel.

The event tables have a schema version of their own (``events_schema_version``
in ``presa_meta``), created on first use beside the task schema, under the
same advisory lock, so the tasks' schema can change without them and the
other way round.

- ``presa_task_event_logs``: one row per task that has a log: the next
  ``seq``, and when the log was closed. Its row lock is the log's lock.
- ``presa_task_events``: the retained events, keyed ``(task_id, seq)``; the
  payload is ``json``, kept as the text
  :func:`~presa_trio.tasks.stores.record.record_text` writes, as a task's
  record is: U+0000 survives (``jsonb`` refuses it), and so does a lone
  surrogate, written as its JSON escape.

**Appending is one statement**, ``SELECT presa_append_events(…)``: the
function reads the task's row (``FOR SHARE``: a compare-and-set of the task
waits for the append, and the append for a compare-and-set in flight),
refuses a worker's events once the task is terminal or leased to another
generation (the fence), makes the log's row if needed, locks it (``FOR
UPDATE``), reads ``next_seq``, inserts the events after it, moves
``next_seq`` on, drops what retention no longer keeps, and announces the
append on the ``presa_task_events`` channel, all in one transaction. Two
appenders of one task in two processes queue on the row lock, and the
second reads the first's ``next_seq``: no duplicate, no hole (rule 7 of
:mod:`presa_trio.tasks.stores.base`). A compare-and-set with events calls
it in the write's own transaction. Every transaction takes the task's row
first and the log's second, so none waits on another in a cycle.

**One clock.** Events are stamped, a log closed, and ages and terminal
retention judged on the database's clock (``presa_now_ms()``, as the
leases are), never on a process's: every process of a deployment drops the
same events at the same time, whatever its own clock says. A log's stamps
never go back (each is the later of the database's now and the previous
event's stamp), so an age cuts a log at one seq.

**Announcements** name the task and its last ``seq``; the store listens
on :data:`EVENTS_CHANNEL` through the same loop as for task changes
(:mod:`presa_trio.tasks.stores.postgres.listen`), and after a reconnection
delivers :data:`~presa_trio.tasks.stores.base.RESYNC`: every stream then
reads its log again from its cursor, so an append announced while nobody
listened is found by that read.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import psycopg

from presa_trio.tasks.events import EventWindow, NewEvent, Retention, TaskEvent
from presa_trio.tasks.stores.base import StoreUnavailable
from presa_trio.tasks.stores.postgres.schema import LOCKS, SCHEMA_LOCK
from presa_trio.tasks.stores.record import record_text

log = logging.getLogger(__name__)

EVENTS_VERSION = 2
#: The channel every append is announced on.
EVENTS_CHANNEL = "presa_task_events"

TABLES = """
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
"""

APPEND = f"""
-- Append events to a task's log, stamped on the database's clock: the first
-- seq given and the stamp, or NULL: no such task, the log is closed, or, for
-- a worker's events (writer: its lease generation), the task is terminal or
-- leased to another generation. The task's row, then the log's, order
-- appenders and writers.
CREATE FUNCTION presa_append_events(
    tid text, types text[], payloads text[], closing boolean,
    max_events bigint, max_age_ms bigint, writer bigint
) RETURNS bigint[] LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    first bigint;
    ended bigint;
    stamp bigint;
    done boolean;
    holder bigint;
    n bigint := coalesce(array_length(types, 1), 0);
BEGIN
    SELECT terminal, lease_generation INTO done, holder
      FROM presa_tasks WHERE task_id = tid FOR SHARE;
    IF NOT FOUND OR (writer IS NOT NULL AND (done OR holder IS DISTINCT FROM writer)) THEN
        RETURN NULL;
    END IF;
    INSERT INTO presa_task_event_logs VALUES (tid, 0, NULL) ON CONFLICT DO NOTHING;
    SELECT next_seq, closed_ms INTO first, ended
      FROM presa_task_event_logs WHERE task_id = tid FOR UPDATE;
    IF ended IS NOT NULL THEN
        RETURN NULL;
    END IF;
    -- Never before the last event's stamp: an age cuts the log at one seq.
    stamp := greatest(presa_now_ms(), (SELECT created_ms FROM presa_task_events
                                        WHERE task_id = tid ORDER BY seq DESC LIMIT 1));
    INSERT INTO presa_task_events
        SELECT tid, first + u.ord - 1, u.t, u.p::json, stamp
          FROM unnest(types, payloads) WITH ORDINALITY AS u(t, p, ord);
    UPDATE presa_task_event_logs
       SET next_seq = first + n, closed_ms = CASE WHEN closing THEN stamp END
     WHERE task_id = tid;
    DELETE FROM presa_task_events
     WHERE task_id = tid
       AND (seq < first + n - max_events OR created_ms <= stamp - max_age_ms);
    PERFORM pg_notify('{EVENTS_CHANNEL}',
                      json_build_object('taskId', tid, 'seq', first + n - 1)::text);
    RETURN ARRAY[first, stamp];
END
$$;
"""

EVENTS_SCHEMA = TABLES + APPEND

#: From version 1 (events stamped on each writer's clock, no fence) to this
#: one, in place: the append function is replaced, and each log's stamps
#: are made never to go back, so the ages cut every log at one seq.
UPGRADE_FROM_1 = (
    """
DROP FUNCTION presa_append_events(text, text[], text[], bigint, boolean, bigint, bigint);
UPDATE presa_task_events AS e SET created_ms = m.stamp
  FROM (SELECT task_id, seq, max(created_ms) OVER (PARTITION BY task_id ORDER BY seq) AS stamp
          FROM presa_task_events) AS m
 WHERE e.task_id = m.task_id AND e.seq = m.seq AND e.created_ms < m.stamp;
"""
    + APPEND
)

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
        elif row[0] == "1":  # text: another server's version need not be a number
            connection.execute(UPGRADE_FROM_1)
            connection.execute(
                "UPDATE presa_meta SET value = %s WHERE key = 'events_schema_version'",
                (str(EVENTS_VERSION),),
            )
            log.info(
                "the presa task event schema was upgraded from version 1 to %s", EVENTS_VERSION
            )
        elif row[0] != str(EVENTS_VERSION):
            raise EventsSchemaMismatch(
                f"the database holds presa task event schema version {row[0]}; "
                f"this server reads {EVENTS_VERSION}"
            )


class EventsSchemaMismatch(StoreUnavailable):
    """The database's event tables are of another version: they are not read (the
    store cannot be opened)."""


def append(
    connection: Connection,
    task_id: str,
    events: Sequence[NewEvent],
    retention: Retention,
    closing: bool,
    fence: int | None = None,
) -> list[TaskEvent]:
    """``presa_append_events``: the events as stored, or ``[]`` if refused."""
    row = connection.execute(
        "SELECT presa_append_events(%s, %s, %s, %s, %s, %s, %s)",
        (
            task_id,
            [e.type for e in events],
            [record_text(e.payload) for e in events],
            closing,
            retention.max_events,
            retention.max_age_ms,
            fence,
        ),
    ).fetchone()
    if row is None or row[0] is None:
        return []
    first, stamp = row[0]
    return [TaskEvent(first + n, task_id, e.type, e.payload, stamp) for n, e in enumerate(events)]


def window(
    connection: Connection, task_id: str, after: int, limit: int, retention: Retention
) -> EventWindow:
    """The events after ``after`` and the log's bounds, in one statement (one snapshot),
    without the events past the maximum age, pruned or not, with the database's now,
    which ages and terminal retention are judged by."""
    kept = "(c.cutoff IS NULL OR created_ms > c.cutoff)"
    rows = connection.execute(
        "WITH c AS MATERIALIZED (SELECT now_ms, now_ms - %(age)s::bigint AS cutoff"
        "   FROM (SELECT presa_now_ms() AS now_ms) AS n),"
        " b AS MATERIALIZED (SELECT l.next_seq, l.closed_ms, c.now_ms,"
        f"  (SELECT seq FROM presa_task_events WHERE task_id = %(id)s AND {kept}"
        "    ORDER BY seq LIMIT 1) AS earliest"
        "  FROM presa_task_event_logs AS l, c WHERE l.task_id = %(id)s)"
        " SELECT b.next_seq, b.closed_ms, b.earliest, b.now_ms, e.seq, e.type, e.payload,"
        "  e.created_ms"
        " FROM b CROSS JOIN c LEFT JOIN LATERAL (SELECT seq, type, payload, created_ms"
        f"   FROM presa_task_events WHERE task_id = %(id)s AND seq > %(after)s AND {kept}"
        "   ORDER BY seq LIMIT %(limit)s) AS e ON true"
        " ORDER BY e.seq",
        {"id": task_id, "after": after, "limit": limit, "age": retention.max_age_ms},
    ).fetchall()
    now_ms = rows[0][3] if rows else 0
    return EventWindow.from_rows(task_id, [row[:3] + row[4:] for row in rows], now_ms, retention)


def prune(connection: Connection, retention: Retention) -> None:
    """Drop events past their age or terminal retention, on the database's clock (a
    prefix of each log, as a log's stamps never go back), and the logs of deleted tasks."""
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
                "DELETE FROM presa_task_events WHERE created_ms <= (SELECT presa_now_ms()) - %s",
                (retention.max_age_ms,),
            )
        if retention.terminal_ms is not None:
            connection.execute(
                "DELETE FROM presa_task_events WHERE task_id IN (SELECT task_id"
                " FROM presa_task_event_logs WHERE closed_ms <= (SELECT presa_now_ms()) - %s)",
                (retention.terminal_ms,),
            )
