"""The PostgreSQL store's one place that classifies what psycopg raises.

Every failure of a call becomes one of the store's three classes
(:class:`~presa_trio.tasks.stores.base.StoreError`): unavailable, refused
data, or a defect; the runner's failure policy is written against those
(docs/tasks.md). :mod:`presa_trio.tasks.stores.postgres.database` calls it for
every call, and to tell a connection that must be made again.
"""

from __future__ import annotations

import psycopg

from presa_trio.tasks.stores.base import StoreDefect, StoreError, StoreRefused, StoreUnavailable
from presa_trio.tasks.stores.record import TooDeepToStore

#: SQLSTATE classes of a database that cannot serve for now: connection
#: exceptions, insufficient resources, operator intervention (shutdown,
#: a cancelled statement), a rolled-back transaction (serialization, deadlock).
UNAVAILABLE_CLASSES = ("08", "40", "53", "57")
#: SQLSTATEs of the same kind outside those classes: a read-only transaction
#: (a standby, or ``default_transaction_read_only``), a lock not available, a
#: privilege the server's role lacks (taken away while it serves, until granted
#: again; at start, :func:`~presa_trio.tasks.stores.postgres.store.open_postgresql_store`
#: refuses it in one line).
UNAVAILABLE_STATES = ("25006", "55P03", "42501")
#: SQLSTATE classes of data the database will not hold: data exceptions
#: (U+0000 in jsonb, an untranslatable character, a number out of range)
#: and program limits (a value too large).
REFUSED_CLASSES = ("22", "54")


def classify(error: Exception) -> StoreError:
    """What a failed call means, as one of the store's three classes: the one place.

    By SQLSTATE first (the server's own word), then by psycopg's class for
    errors that never reached the server (a broken connection is an
    ``OperationalError`` without one; a value psycopg cannot encode, a
    ``UnicodeError``; a value too deep for the record's encoder,
    :class:`~presa_trio.tasks.stores.record.TooDeepToStore`). Anything else is
    a defect.
    """
    detail = f"postgresql: {first_line(error)}"
    state = getattr(error, "sqlstate", None) or ""
    if state[:2] in REFUSED_CLASSES or isinstance(
        error, psycopg.DataError | UnicodeError | TooDeepToStore
    ):
        return StoreRefused(detail)
    if (
        state[:2] in UNAVAILABLE_CLASSES
        or state in UNAVAILABLE_STATES
        or (not state and isinstance(error, psycopg.OperationalError))
    ):
        return StoreUnavailable(detail)
    return StoreDefect(f"postgresql: {type(error).__name__}: {first_line(error)}")


def first_line(error: BaseException) -> str:
    """libpq's messages run over several lines; an operator's log wants one."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
