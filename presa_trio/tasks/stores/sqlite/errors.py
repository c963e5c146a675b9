"""The SQLite store's one place that classifies what its engine raises.

Every failure of a statement becomes one of the store's three classes
(:class:`~presa_trio.tasks.stores.base.StoreError`): unavailable, refused
data, or a defect; the runner's failure policy is written against those
(docs/tasks.md). Kept beside :mod:`presa_trio.tasks.stores.sqlite`, which
calls it for every statement.
"""

from __future__ import annotations

import sqlite3

from presa_trio.tasks.stores.base import StoreDefect, StoreError, StoreRefused, StoreUnavailable
from presa_trio.tasks.stores.record import TooDeepToStore

#: SQLite's primary result codes of a file that cannot serve for now (busy or
#: locked past the timeout, out of memory, read-only, interrupted, an I/O error,
#: a full disk, a file that cannot be opened), and of a value it will not hold.
UNAVAILABLE_CODES = frozenset(
    getattr(sqlite3, f"SQLITE_{name}")
    for name in ("BUSY", "LOCKED", "NOMEM", "READONLY", "INTERRUPT", "IOERR", "FULL", "CANTOPEN")
)
REFUSED_CODES = frozenset({sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_MISMATCH})


def classify(error: Exception) -> StoreError:
    """What a failed statement means, as one of the store's three classes (the one place).

    By SQLite's result code (``OperationalError`` covers both a locked file
    and a syntax error): unavailable (later the same may succeed), refused
    data (also a value the binding cannot pass: a lone surrogate, an integer
    beyond 64 bits; or one too deep for the record's encoder,
    :class:`~presa_trio.tasks.stores.record.TooDeepToStore`), else a defect (a
    malformed file, a wrong statement).
    """
    detail = f"sqlite: {error}"
    code = getattr(error, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF
    if primary in REFUSED_CODES or isinstance(
        error, sqlite3.DataError | UnicodeError | OverflowError | TooDeepToStore
    ):
        return StoreRefused(detail)
    if primary in UNAVAILABLE_CODES:
        return StoreUnavailable(detail)
    return StoreDefect(f"sqlite: {type(error).__name__}: {error}")
