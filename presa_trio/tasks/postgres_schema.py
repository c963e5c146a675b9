"""The PostgreSQL schema of the task store: tables, the change trigger, versions.

One row per task. The row keeps the storage record (:mod:`presa_trio.tasks.record`)
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

from presa_trio.tasks.record import from_record
from presa_trio.tasks.store import Lease, StoredTask

SCHEMA_VERSION = 1

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
CREATE INDEX presa_tasks_leases ON presa_tasks (lease_expires_ms) WHERE NOT terminal;

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
CREATE FUNCTION presa_create_task(
    task presa_tasks, now_ms bigint,
    max_active_per_scope bigint, max_stored_per_scope bigint,
    max_active bigint, max_stored bigint
) RETURNS bigint[] LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    counts bigint[];
BEGIN
    PERFORM pg_advisory_xact_lock({LOCKS}, {CREATE_LOCK});
    SELECT ARRAY[count(*) FILTER (WHERE NOT t.terminal AND t.scope = task.scope),
                 count(*) FILTER (WHERE t.scope = task.scope),
                 count(*) FILTER (WHERE NOT t.terminal), count(*)]
      INTO counts
      FROM presa_tasks AS t WHERE t.expires_ms IS NULL OR t.expires_ms > now_ms;
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
