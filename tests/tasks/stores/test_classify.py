"""Each store's one place that classifies its engine's errors (unavailable, refused, defect).

The errors are the engines' own: a real SQLite file (read-only, malformed
values), and psycopg's exception classes as PostgreSQL's SQLSTATEs name them.
The end-to-end behaviour of each class is in tests/e2e/test_failure_boundaries.py
and tests/e2e/test_postgresql_failures.py.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest
from psycopg import errors

from presa_trio.tasks.stores.base import StoreDefect, StoreRefused, StoreUnavailable
from presa_trio.tasks.stores.postgres import errors as postgres_errors
from presa_trio.tasks.stores.sqlite import errors as sqlite_errors


def sqlite_error(path: Path, statement: str, *args: object) -> Exception:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE IF NOT EXISTS t (v)")
    db.commit()
    db.close()
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        db.execute(statement, args)
    except Exception as error:
        return error
    finally:
        db.close()
    raise AssertionError("the statement succeeded")


def test_sqlite_errors_fall_into_the_three_classes(tmp_path: Path) -> None:
    """presa-defined (docs/tasks.md, the failure policy): a read-only file is
    unavailable; a lone surrogate or a 65-bit integer is refused data; a wrong
    statement is a defect."""
    path = tmp_path / "t.db"
    read_only = sqlite_error(path, "INSERT INTO t VALUES (1)")
    surrogate = sqlite_error(path, "SELECT ?", "\udc00")
    too_big = sqlite_error(path, "SELECT ?", 2**64)
    wrong = sqlite_error(path, "SELEKT 1")
    assert isinstance(sqlite_errors.classify(read_only), StoreUnavailable)
    assert isinstance(sqlite_errors.classify(surrogate), StoreRefused)
    assert isinstance(sqlite_errors.classify(too_big), StoreRefused)
    assert isinstance(sqlite_errors.classify(wrong), StoreDefect)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            errors.ReadOnlySqlTransaction("cannot execute UPDATE in a read-only transaction"),
            StoreUnavailable,
        ),
        (
            errors.AdminShutdown("terminating connection due to administrator command"),
            StoreUnavailable,
        ),
        (errors.SerializationFailure("could not serialize access"), StoreUnavailable),
        (errors.TooManyConnections("sorry, too many clients already"), StoreUnavailable),
        (errors.QueryCanceled("canceling statement due to statement timeout"), StoreUnavailable),
        (psycopg.OperationalError("connection failed: Connection refused"), StoreUnavailable),
        (errors.InsufficientPrivilege("permission denied for table presa_tasks"), StoreUnavailable),
        (errors.UntranslatableCharacter("unsupported Unicode escape sequence"), StoreRefused),
        (errors.InvalidTextRepresentation("invalid input syntax for type json"), StoreRefused),
        (
            errors.ProgramLimitExceeded("total size of jsonb array elements exceeds the maximum"),
            StoreRefused,
        ),
        (UnicodeEncodeError("utf-8", "\udc00", 0, 1, "surrogates not allowed"), StoreRefused),
        (errors.UndefinedTable('relation "presa_tasks" does not exist'), StoreDefect),
        (errors.UniqueViolation("duplicate key value"), StoreDefect),
        (RuntimeError("a bug"), StoreDefect),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else value.__name__,
)
def test_postgresql_errors_fall_into_the_three_classes(
    error: Exception, expected: type[Exception]
) -> None:
    """presa-defined (docs/tasks.md, the failure policy): by SQLSTATE class first (a
    read-only transaction, an ended session, a rolled-back transaction: unavailable;
    data exceptions and program limits: refused), else by psycopg's class; anything
    else is a defect, and every class keeps a one-line message."""
    classified = postgres_errors.classify(error)
    assert type(classified) is expected
    assert "\n" not in str(classified)
    assert str(classified).startswith("postgresql: ")
