"""The PostgreSQL schema of the task store: tables, the change trigger, versions.

One row per task. The row keeps the storage record (:mod:`presa_trio.tasks.stores.record`)
as ``jsonb``, minus the lease, and beside it the columns the store must
query or compare: scope, revision, whether the task is terminal, its TTL
deadline, and the lease in three columns of its own,
because renewing a lease must not rewrite the record.

A trigger announces every change of a row on the ``presa_tasks`` channel
(LISTEN/NOTIFY), in the writing transaction, so no code path can change a
task without telling the other processes, and the announcement is sent if
and only if the change commits. A change announces the whole record with
its lease; a record too large for a notification (PostgreSQL's limit is
8000 bytes) announces only its id, and listeners read the row. Lease
renewals and releases touch neither ``revision`` nor ``lease_generation``
and are not announced: nothing a listener reacts to has changed.

Capacity (SEP-2663 §Resource Management; presa refuses, never evicts) is
checked in the creating transaction, and what it counts must not grow with
the table, or every creation would pay for every task still kept for its
TTL. So each count is read where it is small:

- **stored** tasks are counted by triggers into ``presa_counts`` (one row
  per scope and one overall), on every insert and delete, and the creation
  subtracts the rows already past their TTL that the reaper has not yet
  deleted (found through the expiry index: few, as the reaper runs every
  few seconds);
- **active** (non-terminal) tasks are counted through a partial index over
  them alone (``WHERE NOT terminal``), which also serves the claims of
  expired leases.

The counters change only with inserts and deletes, never with a status
change, so completions never queue behind creations on a counter row; and
every change of a counter, like every creation, holds the creation lock
first, so two expiries and a creation cannot deadlock on the rows.

The schema is created on first use, under an advisory lock so processes
starting together create it once, and its version is kept in
``presa_meta`` (key ``schema_version``), as in the SQLite store. A
database holding another schema version is refused at start rather than
misread.
"""

from __future__ import annotations

from typing import Any

import attrs
import psycopg

from presa_trio.tasks.stores.base import Lease, StoredTask
from presa_trio.tasks.stores.record import from_record

SCHEMA_VERSION = 2

#: The LISTEN/NOTIFY channel every task change is announced on.
CHANNEL = "presa_tasks"

#: Advisory lock keys, ``pg_advisory_xact_lock(LOCKS, key)``: the first
#: number keeps presa's locks apart from any other application's.
LOCKS = 0x70726573  # "pres"
SCHEMA_LOCK = 1
CREATE_LOCK = 2

#: Notification payloads stay below this many bytes (PostgreSQL refuses 8000).
NOTIFY_LIMIT = 7900

SCHEMA = f"""
CREATE TABLE presa_tasks (
    task_id          text PRIMARY KEY,
    scope            text NOT NULL,
    revision         bigint NOT NULL,
    terminal         boolean NOT NULL,
    expires_ms       bigint,
    lease_owner      text,
    lease_generation bigint,
    lease_expires_ms bigint,
    record           jsonb NOT NULL
);
CREATE INDEX presa_tasks_scope ON presa_tasks (scope);
CREATE INDEX presa_tasks_expiry ON presa_tasks (expires_ms) WHERE expires_ms IS NOT NULL;
CREATE INDEX presa_tasks_active ON presa_tasks (scope) WHERE NOT terminal;

-- How many tasks are stored, per scope (overall false) and in all (overall
-- true, scope ''), expired ones not yet deleted included.
CREATE TABLE presa_counts (
    overall boolean NOT NULL,
    scope   text NOT NULL,
    stored  bigint NOT NULL,
    PRIMARY KEY (overall, scope)
);

CREATE FUNCTION presa_count_stored() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM changed) THEN
        RETURN NULL;  -- the reaper found nothing: no lock, no write
    END IF;
    PERFORM pg_advisory_xact_lock({LOCKS}, {CREATE_LOCK});
    IF TG_OP = 'INSERT' THEN
        INSERT INTO presa_counts AS c
            SELECT false, scope, count(*) FROM changed GROUP BY scope
            UNION ALL SELECT true, '', count(*) FROM changed
        ON CONFLICT (overall, scope) DO UPDATE SET stored = c.stored + excluded.stored;
    ELSE
        UPDATE presa_counts AS c SET stored = c.stored - gone.n
          FROM (SELECT false AS overall, scope, count(*) AS n FROM changed GROUP BY scope
                UNION ALL SELECT true, '', count(*) FROM changed) AS gone
         WHERE c.overall = gone.overall AND c.scope = gone.scope;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER presa_tasks_count_inserted AFTER INSERT ON presa_tasks
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION presa_count_stored();
CREATE TRIGGER presa_tasks_count_deleted AFTER DELETE ON presa_tasks
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION presa_count_stored();

CREATE FUNCTION presa_announce() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    message text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        message := json_build_object('deleted', OLD.task_id, 'scope', OLD.scope)::text;
    ELSE
        message := jsonb_build_object('stored', NEW.record || jsonb_build_object(
            'lease', CASE WHEN NEW.lease_owner IS NULL THEN 'null'::jsonb
                          ELSE jsonb_build_object('owner', NEW.lease_owner,
                                                  'generation', NEW.lease_generation,
                                                  'expiresMs', NEW.lease_expires_ms) END))::text;
        IF octet_length(message) > {NOTIFY_LIMIT} THEN
            message := json_build_object('changed', NEW.task_id)::text;
        END IF;
    END IF;
    PERFORM pg_notify('{CHANNEL}', message);
    RETURN NULL;
END
$$;

CREATE TRIGGER presa_tasks_announce
    AFTER INSERT OR DELETE OR UPDATE OF revision, lease_generation ON presa_tasks
    FOR EACH ROW EXECUTE FUNCTION presa_announce();

-- Insert a task if its scope and the store are under every limit; NULL if
-- inserted, else the counts (scope active, scope stored, all active, all
-- stored) that refused it, for the caller to name the limit. The lock is
-- taken first, and each later statement of a VOLATILE function reads a new
-- snapshot, so the counts include every creation committed before the lock.
-- Stored: the counters, less the expired rows; active: the partial index,
-- read by a plain index scan, whatever the planner's statistics say (a
-- table not analysed yet looks full of active rows). A task that finished
-- leaves a dead entry in that index until a vacuum; a plain index scan marks
-- the entries it finds dead, so the next creation skips them, where a
-- bitmap or sequential scan would read every finished task again.
CREATE FUNCTION presa_create_task(
    task presa_tasks, now_ms bigint,
    max_active_per_scope bigint, max_stored_per_scope bigint,
    max_active bigint, max_stored bigint
) RETURNS bigint[] LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off SET enable_bitmapscan = off AS $$
DECLARE
    counts bigint[];
BEGIN
    PERFORM pg_advisory_xact_lock({LOCKS}, {CREATE_LOCK});
    SELECT ARRAY[active.in_scope,
                 coalesce(stored.in_scope, 0) - expired.in_scope,
                 active.overall,
                 coalesce(stored.overall, 0) - expired.overall]
      INTO counts
      FROM (SELECT max(c.stored) FILTER (WHERE NOT c.overall) AS in_scope,
                   max(c.stored) FILTER (WHERE c.overall) AS overall
              FROM presa_counts AS c
             WHERE (c.overall, c.scope) IN ((false, task.scope), (true, ''))) AS stored,
           (SELECT count(*) FILTER (WHERE t.scope = task.scope) AS in_scope,
                   count(*) AS overall
              FROM presa_tasks AS t WHERE t.expires_ms <= now_ms) AS expired,
           (SELECT count(*) FILTER (WHERE t.scope = task.scope) AS in_scope,
                   count(*) AS overall
              FROM presa_tasks AS t
             WHERE NOT t.terminal AND (t.expires_ms IS NULL OR t.expires_ms > now_ms)) AS active;
    IF counts[1] >= max_active_per_scope OR counts[2] >= max_stored_per_scope
       OR counts[3] >= max_active OR counts[4] >= max_stored THEN
        RETURN counts;
    END IF;
    INSERT INTO presa_tasks SELECT (task).*;
    RETURN NULL;
END
$$;
"""

#: The columns :func:`decode` reads, in its order.
COLUMNS = "record, lease_owner, lease_generation, lease_expires_ms"


class SchemaMismatch(Exception):
    """The database holds another version of the schema: it is not read."""


def ensure_schema(connection: psycopg.Connection[Any]) -> None:
    """Create the schema if the database has none; refuse another version of it."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCKS, SCHEMA_LOCK))
        connection.execute(
            "CREATE TABLE IF NOT EXISTS presa_meta (key text PRIMARY KEY, value text NOT NULL)"
        )
        row = connection.execute(
            "SELECT value FROM presa_meta WHERE key = 'schema_version'"
        ).fetchone()
        if row is None:
            connection.execute(SCHEMA)
            connection.execute(
                "INSERT INTO presa_meta VALUES ('schema_version', %s)", (str(SCHEMA_VERSION),)
            )
            return
        version = int(row[0])
        if version != SCHEMA_VERSION:
            raise SchemaMismatch(
                f"the database holds presa task schema version {version}; "
                f"this server reads {SCHEMA_VERSION}"
            )


def decode(row: tuple[Any, ...]) -> StoredTask:
    """A row of :data:`COLUMNS` as the stored task it holds."""
    record, owner, generation, expires_ms = row
    lease = None if owner is None else Lease(owner, generation, expires_ms)
    return attrs.evolve(from_record({**record, "lease": None}), lease=lease)
