"""The PostgreSQL schema of the task store: tables, the change trigger, versions.

One row per task. The row keeps the storage record (:mod:`presa_trio.tasks.stores.record`)
in two ``json`` columns, ``task`` and ``work`` (``json``, not ``jsonb``: PostgreSQL
keeps ``json`` as the text it was given, so every string a tool may take or
return is held, U+0000 included, which ``jsonb`` refuses), and beside them the
columns the store must query or compare: scope, revision, whether the task is
terminal, its TTL deadline, and the lease in columns of its own, because
renewing a lease must not rewrite the record.

A trigger announces every change of a row on the ``presa_tasks`` channel
(LISTEN/NOTIFY), in the writing transaction, so no code path can change a
task without telling the other processes, and the announcement is sent if
and only if the change commits. A change announces the whole record with
its lease; a record too large for a notification (PostgreSQL's limit is
8000 bytes) announces only its id, and listeners read the row. Lease
renewals and releases touch neither ``revision`` nor ``lease_generation``
and are not announced: nothing a listener reacts to has changed.

**Leases run on the database's clock** (``presa_now_ms()``, read inside
each statement): beside the expiry its holder gave (``lease_expires_ms``, on
the holder's clock, read back as given), each lease has a deadline on the
database's clock (``lease_deadline_ms``: the database's time plus the
lease's length), and a claim compares that with the database's time, so a
process whose own clock is wrong can neither take live tasks nor keep dead
ones. Task timestamps and TTLs stay on the writing process's clock.

Capacity (spec-notes §31, §45: the SEP has none; presa refuses, never evicts) is
checked in the creating transaction, and what it counts must not grow with
the table, or every creation would pay for every task still kept for its
TTL. So each count is read where it is small:

- **stored** tasks are counted by triggers into ``presa_counts``, on every
  insert and delete: one row per scope that holds tasks (the expiry that
  deletes a scope's last task deletes its row), and the overall count spread over
  :data:`STRIPES` rows (a task counts in the stripe its id hashes to), so no
  single row is written by every creation; the creation subtracts the rows
  already past their TTL that the reaper has not yet deleted (found through
  the expiry index: few, as the reaper runs every few seconds);
- **active** (non-terminal) tasks are counted through a partial index over
  them alone (``WHERE NOT terminal``), which also serves the claims of
  expired leases.

**No lock is shared by every creation.** A creation locks its own scope
(``pg_advisory_xact_lock`` on the scope's hash), so the limits of a scope
are exact: no two creations in one scope count the same free slot. The
overall limits are read without a lock and are approximate: creations in
different scopes running at the same moment each see the others' tasks only
once committed, so together they may pass an overall limit by at most the
number of creations in flight (a few per process: its request connections).
The counter rows are changed only by inserts and deletes, never by a
status change, each transaction in one order (the scope's rows, then the
stripes, sorted), so two expiries and a creation cannot deadlock on them.

The schema is created on first use, under an advisory lock so processes
starting together create it once, and its version is kept in
``presa_meta`` (key ``schema_version``), as in the SQLite store. A
database holding another schema version is refused at start rather than
misread, except version 2, which is upgraded in place (:data:`UPGRADE_FROM_2`).
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from presa_trio.tasks.stores.base import Lease, StoredTask, StoreUnavailable, Work
from presa_trio.tasks.stores.record import from_json, task_from_json

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3

#: The LISTEN/NOTIFY channel every task change is announced on.
CHANNEL = "presa_tasks"

#: Advisory lock keys, ``pg_advisory_xact_lock(LOCKS, key)``: the first
#: number keeps presa's locks apart from any other application's; a scope's
#: creations lock ``(SCOPE_LOCKS, hashtext(scope))``.
LOCKS = 0x70726573  # "pres"
SCHEMA_LOCK = 1
SCOPE_LOCKS = 0x70726574  # "pret"

#: Rows the overall stored count is spread over.
STRIPES = 16

#: Notification payloads stay below this many bytes (PostgreSQL refuses 8000).
NOTIFY_LIMIT = 7900

TABLES = """
CREATE TABLE presa_tasks (
    task_id          text PRIMARY KEY,
    scope            text NOT NULL,
    revision         bigint NOT NULL,
    terminal         boolean NOT NULL,
    expires_ms       bigint,
    lease_owner      text,
    lease_generation bigint,
    lease_expires_ms bigint,
    lease_deadline_ms bigint,
    task             json NOT NULL,
    work             json
);
CREATE INDEX presa_tasks_scope ON presa_tasks (scope);
CREATE INDEX presa_tasks_expiry ON presa_tasks (expires_ms) WHERE expires_ms IS NOT NULL;
CREATE INDEX presa_tasks_active ON presa_tasks (scope) WHERE NOT terminal;

-- How many tasks are stored, per scope (overall false) and in all (overall
-- true, one row per stripe), expired ones not yet deleted included.
CREATE TABLE presa_counts (
    overall boolean NOT NULL,
    scope   text NOT NULL,
    stored  bigint NOT NULL,
    PRIMARY KEY (overall, scope)
);
"""

#: What the triggers and creations run; replaced whole on an upgrade.
FUNCTIONS = f"""
-- The database's clock, epoch milliseconds, as it is at the moment of the call.
CREATE OR REPLACE FUNCTION presa_now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS $$
    SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint
$$;

CREATE OR REPLACE FUNCTION presa_count_stored() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign bigint := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO presa_counts AS c
        SELECT overall, scope, sign * n FROM (
            SELECT false AS overall, scope, count(*) AS n FROM changed GROUP BY scope
            UNION ALL
            SELECT true, (hashtext(task_id) & {STRIPES - 1})::text, count(*)
              FROM changed GROUP BY 2
        ) AS delta ORDER BY overall, scope
    ON CONFLICT (overall, scope) DO UPDATE SET stored = c.stored + excluded.stored;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION presa_announce() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    message text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        message := json_build_object('deleted', OLD.task_id, 'scope', OLD.scope)::text;
    ELSE
        -- json, not jsonb: the record's text goes out as it was written.
        message := json_build_object('stored', json_build_object(
            'version', 1, 'scope', NEW.scope, 'task', NEW.task, 'work', NEW.work,
            'lease', CASE WHEN NEW.lease_owner IS NULL THEN NULL
                          ELSE json_build_object('owner', NEW.lease_owner,
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

-- Insert a task if its scope and the store are under every limit; NULL if
-- inserted, else the counts (scope active, scope stored, all active, all
-- stored) that refused it, for the caller to name the limit. The scope's
-- lock is taken first, and each later statement of a VOLATILE function
-- reads a new snapshot, so the scope's counts include every creation in it
-- committed before the lock; the overall counts are as committed (see the
-- module docstring). The lease's deadline is its length (lease_ms) from now
-- on the database's clock.
-- Stored: the counters, less the expired rows; active: the partial index,
-- read by a plain index scan, whatever the planner's statistics say (a
-- table not analysed yet looks full of active rows). A task that finished
-- leaves a dead entry in that index until a vacuum; a plain index scan marks
-- the entries it finds dead, so the next creation skips them, where a
-- bitmap or sequential scan would read every finished task again.
CREATE OR REPLACE FUNCTION presa_create_task(
    task presa_tasks, lease_ms bigint, now_ms bigint,
    max_active_per_scope bigint, max_stored_per_scope bigint,
    max_active bigint, max_stored bigint
) RETURNS bigint[] LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off SET enable_bitmapscan = off AS $$
DECLARE
    counts bigint[];
BEGIN
    PERFORM pg_advisory_xact_lock({SCOPE_LOCKS}, hashtext(task.scope));
    SELECT ARRAY[active.in_scope,
                 coalesce(stored.in_scope, 0) - expired.in_scope,
                 active.overall,
                 coalesce(stored.overall, 0) - expired.overall]
      INTO counts
      FROM (SELECT sum(c.stored) FILTER (WHERE NOT c.overall) AS in_scope,
                   sum(c.stored) FILTER (WHERE c.overall) AS overall
              FROM presa_counts AS c
             WHERE c.overall OR c.scope = task.scope) AS stored,
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
    IF lease_ms IS NOT NULL THEN
        task.lease_deadline_ms := presa_now_ms() + lease_ms;
    END IF;
    INSERT INTO presa_tasks SELECT (task).*;
    RETURN NULL;
END
$$;
"""

TRIGGERS = """
CREATE TRIGGER presa_tasks_count_inserted AFTER INSERT ON presa_tasks
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION presa_count_stored();
CREATE TRIGGER presa_tasks_count_deleted AFTER DELETE ON presa_tasks
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION presa_count_stored();
CREATE TRIGGER presa_tasks_announce
    AFTER INSERT OR DELETE OR UPDATE OF revision, lease_generation ON presa_tasks
    FOR EACH ROW EXECUTE FUNCTION presa_announce();
"""

SCHEMA = TABLES + FUNCTIONS + TRIGGERS

#: From version 2 (the record one jsonb column, one overall counter row, one
#: lock for every creation) to this one, in place, tasks and leases kept: a
#: lease's deadline starts as its holder's expiry. Every presa process of
#: version 2 must have stopped first: it reads the record column.
UPGRADE_FROM_2 = f"""
DROP FUNCTION presa_create_task(presa_tasks, bigint, bigint, bigint, bigint, bigint);
ALTER TABLE presa_tasks
    ADD COLUMN lease_deadline_ms bigint, ADD COLUMN task json, ADD COLUMN work json;
UPDATE presa_tasks SET task = (record -> 'task')::json, work = (record -> 'work')::json,
    lease_deadline_ms = lease_expires_ms;
ALTER TABLE presa_tasks DROP COLUMN record, ALTER COLUMN task SET NOT NULL;
DELETE FROM presa_counts WHERE overall;
INSERT INTO presa_counts
    SELECT true, (hashtext(task_id) & {STRIPES - 1})::text, count(*) FROM presa_tasks GROUP BY 2;
"""

#: The columns :func:`decode` reads, in its order.
COLUMNS = "scope, task, work, lease_owner, lease_generation, lease_expires_ms"


class SchemaMismatch(StoreUnavailable):
    """The database holds another version of the schema: it is not read (the store
    cannot be opened)."""


def ensure_schema(connection: psycopg.Connection[Any]) -> None:
    """Create the schema if the database has none; refuse another version of it.

    Nothing is created when nothing is missing, so a role that may use the
    tables but create none serves a database another role set up.
    """
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCKS, SCHEMA_LOCK))
        (meta,) = connection.execute("SELECT to_regclass('presa_meta')").fetchone() or (None,)
        if meta is None:
            connection.execute(
                "CREATE TABLE presa_meta (key text PRIMARY KEY, value text NOT NULL)"
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
        # Compared as text: a version written by another server need not be a number.
        version = row[0]
        if version == "2":
            connection.execute(UPGRADE_FROM_2)
            connection.execute(FUNCTIONS)
            connection.execute(
                "UPDATE presa_meta SET value = %s WHERE key = 'schema_version'",
                (str(SCHEMA_VERSION),),
            )
            log.info("the presa task schema was upgraded from version 2 to %s", SCHEMA_VERSION)
            return
        if version != str(SCHEMA_VERSION):
            raise SchemaMismatch(
                f"the database holds presa task schema version {version}; "
                f"this server reads {SCHEMA_VERSION}"
            )


def decode(row: tuple[Any, ...]) -> StoredTask:
    """A row of :data:`COLUMNS` as the stored task it holds."""
    scope, task, work, owner, generation, expires_ms = row
    lease = None if owner is None else Lease(owner, generation, expires_ms)
    return StoredTask(scope, task_from_json(task), from_json(work, Work), lease)
