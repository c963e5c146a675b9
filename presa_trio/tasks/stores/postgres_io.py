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

from presa_trio.tasks.stores.base import StoreUnavailable

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
    """One call waiting in a lane: taken by a thread, or withdrawn by its cancellation."""

    work: Work[T]
    waiter: trio.lowlevel.Task
    # Acquired once, by whichever comes first: the thread that runs the
    # call, or the cancellation that withdraws it.
    claim: threading.Lock = attrs.field(factory=threading.Lock)


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
    _token: trio.lowlevel.TrioToken | None = attrs.field(init=False, default=None)
    # How many connections were found broken so far: a thread whose session
    # was checked before the latest breakage tests its connection first.
    _breakages: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        self._lanes = {lane: queue.SimpleQueue() for lane in Lane}
        self._threads = {lane: [] for lane in Lane}

    async def open(self) -> None:
        """Connect every thread's connection; :class:`StoreUnavailable` if one cannot be made."""
        self._token = trio.lowlevel.current_trio_token()
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
        call = Call(work, trio.lowlevel.current_task())
        await trio.lowlevel.checkpoint_if_cancelled()
        self._lanes[lane].put(call)

        def withdraw(_: object) -> trio.lowlevel.Abort:
            taken = not call.claim.acquire(blocking=False)
            return trio.lowlevel.Abort.FAILED if taken else trio.lowlevel.Abort.SUCCEEDED

        try:
            result: T = await trio.lowlevel.wait_task_rescheduled(withdraw)
        except psycopg.OperationalError as error:
            raise StoreUnavailable(f"postgresql: {first_line(error)}") from error
        return result

    # --- in the threads ----------------------------------------------------------------

    def _connect(self) -> Connection:
        return psycopg.connect(
            self.conninfo, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
        )

    def _serve(self, calls: queue.SimpleQueue[Call[Any] | None], session: Session) -> None:
        """A thread's life: run the calls of its lane until told to stop."""
        assert self._token is not None
        try:
            while (call := calls.get()) is not None:
                if not call.claim.acquire(blocking=False):
                    continue  # withdrawn while it waited
                result = outcome.capture(self._transact, session, call.work)
                try:
                    self._token.run_sync_soon(trio.lowlevel.reschedule, call.waiter, result)
                except trio.RunFinishedError:
                    return
        finally:
            if session.connection is not None:
                session.connection.close()

    def _transact(self, session: Session, work: Work[T]) -> T:
        connection = self._usable(session)
        try:
            return work(connection)
        except psycopg.OperationalError:
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
        """The session's connection, tested first if a sibling broke since; else a new one."""
        breakages = self._breakages
        connection = session.connection
        if connection is not None and session.checked < breakages:
            try:
                connection.execute("")
            except psycopg.OperationalError:
                connection.close()
                connection = session.connection = None
        if connection is None:
            connection = session.connection = self._connect()
        session.checked = breakages
        return connection


def first_line(error: BaseException) -> str:
    """libpq's messages run over several lines; an operator's log wants one."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
