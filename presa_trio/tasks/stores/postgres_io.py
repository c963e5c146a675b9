"""PostgreSQL from Trio: psycopg connections, each owned by one thread of its own.

Trio has no PostgreSQL driver of its own, and psycopg's async mode speaks
asyncio only, so presa uses psycopg's blocking API off the Trio thread:
every database call is one function, run whole, in one transaction, by a
thread that owns one connection. Connections are in autocommit mode: a
single statement is its own transaction and costs one round trip, and a
function that needs several statements to be atomic opens
``connection.transaction()`` itself.

Threads and connections
-----------------------
Each connection has one thread, started with the store and kept until it
closes; the thread takes calls from its lane's queue, one at a time, and
hands each result back to the Trio task that waits for it. That is one
hand-over each way per call, and nothing else: no pool to take the
connection from and give it back to, and no thread to find for each call.
(Through ``trio.to_thread`` and ``psycopg_pool`` the same call cost about
twice the CPU, measured: see docs/performance.md.)

Calls wait in one of two lanes, each with threads of its own, so that what
a client waits for never queues behind what the process does on its own:

- **the request lane** (``request_connections``, default 3): reads,
  creations, and the writes of ``tasks/update`` and ``tasks/cancel``;
- **the background lane** (``background_connections``, default 3): a
  worker's own writes (status messages, its outcome: the writes that carry
  a lease generation) and the housekeeping (lease renewals, claims, expiry).

A burst of tasks leaves hundreds of worker writes waiting; in one queue, a
``tasks/cancel`` arriving then waited behind all of them.

A few connections serve hundreds of calls a second: a call holds its
connection for one transaction, typically one or two round trips on
loopback. More would add server processes to PostgreSQL (each connection
is one) for every presa process, and threads contending for Python's
interpreter lock with the Trio thread, which serves the requests. **One
more connection listens**, read on the Trio thread itself (see
:mod:`presa_trio.tasks.stores.postgres_listen`). So with the defaults one presa
process costs PostgreSQL seven connections and runs six threads for them.

Failures
--------
A call that cannot reach the database (the server restarting, the network
gone, no connection within ``connect_timeout``) raises
:class:`~presa_trio.tasks.stores.base.StoreUnavailable`, which a request answers
with -32603 and ``data.retryable: true``: sending the same request again
later can succeed. The thread drops the broken connection and connects
again for its next call. One broken connection means its siblings most
likely broke too (a database restart ends them all), so every other thread
tests its connection (one empty query) before its next call and replaces
it if broken: after a database restart one call fails, not one per
connection, and the process recovers by itself once the database is back.

A call cancelled while it waits in its lane's queue is withdrawn. A call a
thread has taken cannot be stopped mid-transaction: the Trio task waits
until the thread finishes (commit or rollback), so a write is never left
half-done, and the cancellation is delivered at its next checkpoint.
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import attrs
import outcome
import psycopg
import trio
from psycopg.pq import TransactionStatus

from presa_trio.tasks.stores.base import (
    PROTOCOL_ERRORS,
    StoreDefect,
    StoreError,
    StoreRefused,
    StoreUnavailable,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

Connection = psycopg.Connection[Any]

#: A unit of work on one (autocommit) connection.
Work = Callable[[Connection], T]


class Lane(enum.Enum):
    """Where a call waits for a connection; see the module docstring."""

    REQUEST = "request"
    BACKGROUND = "background"


@attrs.define(eq=False)
class Call(Generic[T]):
    """One call handed to a connection's thread, and its outcome handed back to its Trio task.

    The one place in ``presa_trio/tasks/`` that uses ``trio.lowlevel``
    (docs/tasks.md). The idiomatic primitive, ``trio.to_thread.run_sync``
    (one hop per call, with a ``CapacityLimiter`` per lane), costs the Trio
    thread 175 µs of CPU for a no-op call, measured, against 100 µs for this
    hand-over to a thread that owns its connection and is fed by a queue
    (docs/performance.md, "Where the time went"); a store call is mostly
    that hop, and the Trio thread is the one serving every request. What
    trio's guard rails would have given is kept here, and tested
    (tests/tasks/stores/test_postgres_call.py):

    - a call cancelled while it waits in its lane is withdrawn and never runs;
    - a call a thread has taken cannot be withdrawn: its caller waits for the
      outcome (a transaction is never left half-done), and the cancellation
      is delivered at the caller's next checkpoint;
    - a call is taken once, by whichever comes first of the thread and the
      cancellation (the ``claim`` lock), and its waiter is woken once.
    """

    work: Work[T]
    _waiter: trio.lowlevel.Task = attrs.field(init=False, factory=trio.lowlevel.current_task)
    _token: trio.lowlevel.TrioToken = attrs.field(
        init=False, factory=trio.lowlevel.current_trio_token
    )
    # Acquired once, by whichever comes first: the thread that runs the
    # call, or the cancellation that withdraws it.
    _claim: threading.Lock = attrs.field(init=False, factory=threading.Lock)

    async def wait(self, submit: Callable[[Call[T]], None]) -> T:
        """``submit`` the call (unless already cancelled), then wait for its outcome."""
        await trio.lowlevel.checkpoint_if_cancelled()
        submit(self)

        def withdraw(_: object) -> trio.lowlevel.Abort:
            taken = not self._claim.acquire(blocking=False)
            return trio.lowlevel.Abort.FAILED if taken else trio.lowlevel.Abort.SUCCEEDED

        result: T = await trio.lowlevel.wait_task_rescheduled(withdraw)
        return result

    def take(self) -> bool:
        """In a thread: whether it runs the call (False: withdrawn while it waited)."""
        return self._claim.acquire(blocking=False)

    def hand_back(self, result: outcome.Outcome[T]) -> bool:
        """In a thread: wake the waiter with ``result``; False if the Trio run is over."""
        try:
            self._token.run_sync_soon(trio.lowlevel.reschedule, self._waiter, result)
        except trio.RunFinishedError:
            return False
        return True


@attrs.define(eq=False)
class Session:
    """One thread's connection; None while it has none (not yet, or broken)."""

    connection: Connection | None = None
    # The value of :attr:`Database._breakages` when the connection was last known good.
    checked: int = 0


@attrs.define(eq=False, repr=False)
class Database:
    """Connections, each with its thread, in two lanes; see the module docstring."""

    conninfo: str
    request_connections: int = 3
    background_connections: int = 3
    # Longest wait for a new connection, in seconds.
    connect_timeout: float = 3.0
    _lanes: dict[Lane, queue.SimpleQueue[Call[Any] | None]] = attrs.field(init=False)
    _threads: dict[Lane, list[threading.Thread]] = attrs.field(init=False)
    # How many connections were found broken so far: a thread whose session
    # was checked before the latest breakage tests its connection first.
    _breakages: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        self._lanes = {lane: queue.SimpleQueue() for lane in Lane}
        self._threads = {lane: [] for lane in Lane}

    async def open(self) -> None:
        """Connect every thread's connection; :class:`StoreUnavailable` if one cannot be made."""
        sizes = {
            Lane.REQUEST: self.request_connections,
            Lane.BACKGROUND: self.background_connections,
        }
        sessions: list[tuple[Lane, Session]] = []
        try:
            for lane, size in sizes.items():
                for _ in range(size):
                    connection = await trio.to_thread.run_sync(self._connect)
                    sessions.append((lane, Session(connection)))
        except psycopg.Error as error:
            for _, session in sessions:
                assert session.connection is not None
                session.connection.close()
            raise StoreUnavailable(f"cannot connect to PostgreSQL: {first_line(error)}") from error
        for number, (lane, session) in enumerate(sessions):
            thread = threading.Thread(
                target=self._serve,
                args=(self._lanes[lane], session),
                name=f"presa-postgresql-{lane.value}-{number}",
                daemon=True,
            )
            thread.start()
            self._threads[lane].append(thread)

    async def close(self) -> None:
        """Let every thread finish the calls queued before, close its connection, and end."""
        for lane, threads in self._threads.items():
            for _ in threads:
                self._lanes[lane].put(None)
        for threads in self._threads.values():
            while threads:
                await trio.to_thread.run_sync(threads.pop().join)

    async def run(self, work: Work[T], lane: Lane = Lane.REQUEST) -> T:
        """Run ``work`` in one of ``lane``'s threads, on its connection."""
        try:
            return await Call(work).wait(self._lanes[lane].put)
        except PROTOCOL_ERRORS:
            raise
        except Exception as error:
            raise classify(error) from error

    # --- in the threads ----------------------------------------------------------------

    def _connect(self) -> Connection:
        return psycopg.connect(
            self.conninfo, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
        )

    def _serve(self, calls: queue.SimpleQueue[Call[Any] | None], session: Session) -> None:
        """A thread's life: run the calls of its lane until told to stop."""
        try:
            while (call := calls.get()) is not None:
                if not call.take():
                    continue  # withdrawn while it waited
                if not call.hand_back(outcome.capture(self._transact, session, call.work)):
                    return
        finally:
            if session.connection is not None:
                session.connection.close()

    def _transact(self, session: Session, work: Work[T]) -> T:
        try:
            return self._attempt(session, work)
        except psycopg.errors.ReadOnlySqlTransaction:
            # A session that began while the database was read-only stays so
            # after it is switched back; the attempt dropped it: once more, on
            # a new one (the transaction was rolled back, so this is safe).
            return self._attempt(session, work)

    def _attempt(self, session: Session, work: Work[T]) -> T:
        connection = self._usable(session)
        try:
            return work(connection)
        except psycopg.Error as error:
            if isinstance(classify(error), StoreUnavailable):
                # Broken, or read-only: connect again for the next call.
                # Counted without a lock: a lost count only spares a sibling its test.
                self._breakages += 1
                session.connection = None
                connection.close()
            raise
        finally:
            if (
                session.connection is not None
                and connection.info.transaction_status is not TransactionStatus.IDLE
            ):
                connection.rollback()  # left open by a ``work`` that raised

    def _usable(self, session: Session) -> Connection:
        """The session's connection, tested first if a sibling broke since; else a new one.

        The test is one query, which also tells a session that began while
        the database was read-only: such a session stays read-only after the
        database is switched back, so it is replaced too.
        """
        breakages = self._breakages
        connection = session.connection
        if connection is not None and session.checked < breakages:
            try:
                writable = connection.execute("SHOW transaction_read_only").fetchone() == ("off",)
            except psycopg.Error:
                writable = False
            if not writable:
                connection.close()
                connection = session.connection = None
        if connection is None:
            connection = session.connection = self._connect()
        session.checked = breakages
        return connection


#: SQLSTATE classes of a database that cannot serve for now: connection
#: exceptions, insufficient resources, operator intervention (shutdown,
#: a cancelled statement), a rolled-back transaction (serialization, deadlock).
UNAVAILABLE_CLASSES = ("08", "40", "53", "57")
#: SQLSTATEs of the same kind outside those classes: a read-only transaction
#: (a standby, or ``default_transaction_read_only``), a lock not available.
UNAVAILABLE_STATES = ("25006", "55P03")
#: SQLSTATE classes of data the database will not hold: data exceptions
#: (U+0000 in jsonb, an untranslatable character, a number out of range)
#: and program limits (a value too large).
REFUSED_CLASSES = ("22", "54")


def classify(error: Exception) -> StoreError:
    """What a failed call means, as one of the store's three classes: the one place.

    By SQLSTATE first (the server's own word), then by psycopg's class for
    errors that never reached the server (a broken connection is an
    ``OperationalError`` without one; a value psycopg cannot encode, a
    ``UnicodeError``). Anything else is a defect.
    """
    detail = f"postgresql: {first_line(error)}"
    state = getattr(error, "sqlstate", None) or ""
    if state[:2] in REFUSED_CLASSES or isinstance(error, psycopg.DataError | UnicodeError):
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
