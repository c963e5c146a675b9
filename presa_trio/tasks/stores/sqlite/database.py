"""The SQLite store's two connections, each used by one thread at a time through trio.

The standard library's :mod:`sqlite3` blocks, so every statement runs off
the Trio thread through :func:`trio.to_thread.run_sync`. The store has two
connections, each behind a :class:`trio.CapacityLimiter` of one (used by one
thread at a time, in call order): **the writer**, for every write, and
**the reader**, for reads, so that in WAL mode a read never waits behind a
write, this process's or another program's. A call is not abandoned when
its caller is cancelled, so a transaction always finishes (committed or
rolled back); the caller sees the cancellation once it has.

**Writes go in batches** (group commit). A write joins the pending ones
and waits for the writer's :class:`trio.Lock`; the caller that gets it runs
every write pending then, in its own task, in one thread call and one
``BEGIN IMMEDIATE`` … ``COMMIT``, each write in a savepoint of its own, so
one that fails (a conflict, a full scope) is rolled back alone. The callers
whose writes it took find their outcome when the lock comes to them. With
one caller, a batch is one write; with many, one thread hop and one commit
serve them all, which is what lets the store keep up with the requests: a
write's hop and commit cost the Trio thread and the interpreter lock more
than the write itself. No task runs the batches but the callers'
own, so nothing outlives the store's users.

**The file must keep its name**, and so must its write-ahead log. Before
each call each path is checked to name the file the store opened (its
device and inode): a file moved, deleted or replaced under a running
server would take tasks a restart on that path could never find, and let
a second server start there; a log deleted would take every commit since
the last checkpoint with it at a crash (a creation acknowledged, then
lost), and the reader, which opens the log by name, would meet another
one. Until the file is back, every call is unavailable (retryable) and
nothing is written; a log deleted never comes back, and a graceful stop
writes what the log still open holds into the file (the last
connection's checkpoint), so the next start has it all.

Every call ends within the store timeout of being made (``--store-timeout``),
queueing for its connection included: a call that gets its connection with
time left waits for SQLite's locks (another program holding the file) only
for what is left (``busy_timeout``), so the wait does not grow with the
number of calls queued behind one lock. A call past its deadline fails
with :class:`~presa_trio.tasks.stores.base.StoreUnavailable` (retryable).
"""

from __future__ import annotations

import copy
import sqlite3
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import attrs
import outcome
import trio

from presa_trio.tasks.stores.base import (
    DEFAULT_STORE_TIMEOUT_S,
    PROTOCOL_ERRORS,
    StoreError,
    StoreUnavailable,
)
from presa_trio.tasks.stores.sqlite.errors import classify
from presa_trio.tasks.stores.sqlite.identity import FileIdentity
from presa_trio.tasks.stores.sqlite.lock import HeldLock

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
    # The files opened (the database, its log), checked before each call.
    files: tuple[FileIdentity, ...] = attrs.field(kw_only=True, default=())
    # The lock that says this process serves the file, kept before each call; None: none.
    lock: HeldLock | None = attrs.field(kw_only=True, default=None)
    # Set by :meth:`aclose`: a call after it is unavailable (another process may serve).
    _closed: bool = False
    # Writes not yet in a batch, oldest first.
    _pending: list[Write[Any]] = attrs.field(init=False, factory=list)
    # Held by the caller whose task runs the current batch; fair, so batches go in turn.
    _batching: trio.Lock = attrs.field(init=False, factory=trio.Lock)

    async def run(self, work: Work[T], link: Link | None = None) -> T:
        """Run ``work`` on a connection (the writer unless told), off the Trio thread, in turn."""
        link = self.writer if link is None else link
        deadline = time.monotonic() + self.timeout

        def call() -> T:
            self._check_open()
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
        """Run ``work`` in the writer's next batch: committed with it, or rolled back alone.

        The write joins the pending ones; whoever holds the writer's lock
        runs every write pending then as one batch, in its own task, and
        the others find their outcome when the lock comes to them. A write
        not yet in a batch is withdrawn if its caller is cancelled; one in
        a batch runs whoever waits, so its caller waits for its outcome and
        sees the cancellation at its next checkpoint. The batch itself is
        shielded: the caller running it may be cancelled, the others' writes
        still run.
        """
        # Cancelled already: raised before joining (trio's public checkpoint would
        # also yield to the scheduler, on every write).
        await trio.lowlevel.checkpoint_if_cancelled()
        request = Write(work, time.monotonic() + self.timeout)
        self._pending.append(request)
        with trio.move_on_after(self.timeout):
            try:
                async with self._batching:
                    if not request.taken:
                        # The batch carries other callers' writes too: it runs to
                        # its end though this caller be cancelled meanwhile (the
                        # writes' own deadlines bound it, through busy_timeout).
                        with trio.CancelScope(shield=True):
                            await self._run_batch()
            except trio.Cancelled:
                if not request.taken:
                    self._pending.remove(request)
                    raise
                # Taken: it runs whoever waits, so its outcome is returned; the cancel
                # is not lost (trio's stays on its scope) and comes at the caller's next
                # checkpoint. The wait is bounded by the batch's deadlines.
                with trio.CancelScope(shield=True):
                    await request.done.wait()
            assert request.result is not None
            return request.result.unwrap()
        raise StoreUnavailable(f"sqlite: no answer within the store timeout ({self.timeout:g} s)")

    async def _run_batch(self) -> None:
        """Take every pending write and run them on the writer, in one transaction."""
        batch, self._pending = self._pending, []
        for request in batch:
            request.taken = True
        try:
            outcomes = await trio.to_thread.run_sync(
                self._commit,
                [(request.work, request.deadline) for request in batch],
                limiter=self.writer.limiter,
            )
            for request, result in zip(batch, outcomes, strict=True):
                request.result = result
        finally:
            for request in batch:
                if request.result is None:
                    # An outcome of its own: an outcome is unwrapped once.
                    request.result = outcome.Error(
                        StoreUnavailable("sqlite: the write did not finish")
                    )
                request.done.set()

    def _commit(self, writes: list[tuple[Work[Any], float]]) -> list[outcome.Outcome[Any]]:
        """In the writer's thread: one ``BEGIN IMMEDIATE`` … ``COMMIT`` around every write.

        Each write runs in a savepoint of its own: one that raises is rolled
        back alone, and the others commit. Another program's lock is waited
        for until the most urgent write's deadline (``busy_timeout``).
        """
        db = self.writer.connection
        try:
            self._check_open()
            left_ms = round((min(deadline for _, deadline in writes) - time.monotonic()) * 1000)
            db.execute(f"PRAGMA busy_timeout = {max(0, left_ms)}")
            db.execute("BEGIN IMMEDIATE")
            try:
                outcomes = [in_savepoint(db, work) for work, _ in writes]
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except Exception as error:
            # Every write of the batch fails, each with an exception of its own:
            # one exception (and one outcome) must not be raised by several tasks.
            return [outcome.Error(as_store_error(copy.copy(error))) for _ in writes]
        return outcomes

    def _check_open(self) -> None:
        """In a thread: :class:`StoreUnavailable` if closed, a file left its name, or
        another process holds the lock (:meth:`HeldLock.keep`)."""
        if self._closed:
            raise StoreUnavailable("sqlite: cannot use a closed database")
        for file in self.files:
            file.check()
        if self.lock is not None:
            self.lock.keep()

    async def aclose(self) -> None:
        """Close both connections, each after its call in progress; later calls fail."""
        if self._closed:
            return
        with trio.CancelScope(shield=True):
            for link in (self.reader, self.writer):
                await trio.to_thread.run_sync(link.connection.close, limiter=link.limiter)
            self._closed = True


@attrs.define(eq=False)
class Write(Generic[T]):
    """One write waiting for a batch, and its outcome once the batch ran."""

    work: Work[T]
    # When it must have run, on :func:`time.monotonic` (the writer's thread reads it).
    deadline: float
    # Set when a batch takes it: from then on it runs, whoever waits.
    taken: bool = False
    result: outcome.Outcome[T] | None = None
    done: trio.Event = attrs.field(factory=trio.Event)


def in_savepoint(db: sqlite3.Connection, work: Work[T]) -> outcome.Outcome[T]:
    """In the writer's thread: run ``work``; roll back what it did if it raises.

    A full disk, an I/O error or a lack of memory met by a statement without
    a statement journal makes SQLite roll back the whole transaction, the
    savepoint with it: then the batch fails as what the write met.
    """
    db.execute("SAVEPOINT write")
    try:
        value = work(db)
    except Exception as error:
        if not db.in_transaction:
            raise
        db.execute("ROLLBACK TO write")
        db.execute("RELEASE write")
        return outcome.Error(as_store_error(error))
    db.execute("RELEASE write")
    return outcome.Value(value)


def as_store_error(error: Exception) -> Exception:
    """A protocol or store error as it is; anything else as one of the store's three classes."""
    if isinstance(error, (*PROTOCOL_ERRORS, StoreError)):
        return error
    classified = classify(error)
    classified.__cause__ = error
    return classified
