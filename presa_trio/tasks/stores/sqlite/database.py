"""The SQLite store's two connections, each used by one thread at a time through trio.

The standard library's :mod:`sqlite3` blocks, so every statement runs off
the Trio thread through :func:`trio.to_thread.run_sync`. The store has two
connections, each behind a :class:`trio.CapacityLimiter` of one (used by one
thread at a time, in call order): **the writer**, for every write, and
**the reader**, for reads, so that in WAL mode a read never waits behind a
write, this process's or another program's. A call is not abandoned when
its caller is cancelled, so a transaction always finishes (committed or
rolled back); the caller sees the cancellation once it has.

Every call ends within the store timeout of being made (``--store-timeout``),
queueing for its connection included: a call that gets its connection with
time left waits for SQLite's locks (another program holding the file) only
for what is left (``busy_timeout``), so the wait does not grow with the
number of calls queued behind one lock. A call past its deadline fails
with :class:`~presa_trio.tasks.stores.base.StoreUnavailable` (retryable).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

import attrs
import trio

from presa_trio.tasks.stores.base import (
    DEFAULT_STORE_TIMEOUT_S,
    PROTOCOL_ERRORS,
    StoreUnavailable,
)
from presa_trio.tasks.stores.sqlite.errors import classify

T = TypeVar("T")

#: A unit of work on one connection.
Work = Callable[[sqlite3.Connection], T]


@attrs.define(eq=False)
class Link:
    """One connection and the limiter that lets one thread at a time use it."""

    connection: sqlite3.Connection
    limiter: trio.CapacityLimiter = attrs.field(factory=lambda: trio.CapacityLimiter(1))


@attrs.define(eq=False, repr=False)
class Database:
    """The writer and the reader; see the module docstring."""

    writer: Link = attrs.field(kw_only=True)
    reader: Link = attrs.field(kw_only=True)
    # The longest a call may take, queueing included, in seconds.
    timeout: float = attrs.field(kw_only=True, default=DEFAULT_STORE_TIMEOUT_S)
    # Set by :meth:`aclose`: a call after it is unavailable (another process may serve).
    _closed: bool = False

    async def run(self, work: Work[T], link: Link | None = None) -> T:
        """Run ``work`` on a connection (the writer unless told), off the Trio thread, in turn."""
        link = self.writer if link is None else link
        deadline = time.monotonic() + self.timeout

        def call() -> T:
            if self._closed:
                raise StoreUnavailable("sqlite: cannot use a closed database")
            left_ms = round((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                raise StoreUnavailable("sqlite: no time left to wait for the file")
            try:
                # Waits for another program's lock end at this call's deadline.
                link.connection.execute(f"PRAGMA busy_timeout = {left_ms}")
                return work(link.connection)
            except PROTOCOL_ERRORS:
                raise
            except Exception as error:
                raise classify(error) from error

        with trio.move_on_after(self.timeout):
            return await trio.to_thread.run_sync(call, limiter=link.limiter)
        raise StoreUnavailable(f"sqlite: no answer within the store timeout ({self.timeout:g} s)")

    async def read(self, work: Work[T]) -> T:
        """Run ``work`` on the reader: it never waits for a write."""
        return await self.run(work, self.reader)

    async def write(self, work: Work[T]) -> T:
        """Run ``work`` in one ``BEGIN IMMEDIATE`` transaction: all of it or nothing."""

        def transaction(db: sqlite3.Connection) -> T:
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result

        return await self.run(transaction)

    async def aclose(self) -> None:
        """Close both connections, each after its call in progress; later calls fail."""
        if self._closed:
            return
        with trio.CancelScope(shield=True):
            for link in (self.reader, self.writer):
                await trio.to_thread.run_sync(link.connection.close, limiter=link.limiter)
            self._closed = True
