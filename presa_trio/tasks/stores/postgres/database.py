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
:mod:`presa_trio.tasks.stores.postgres.listen`). So with the defaults one presa
process costs PostgreSQL seven connections and runs six threads for them.

Failures
--------
A call that cannot reach the database (the server restarting, the network
gone, no connection within the store timeout) raises
:class:`~presa_trio.tasks.stores.base.StoreUnavailable`, which a request answers
with -32603 and ``data.retryable: true``: sending the same request again
later can succeed. The thread drops the broken connection and connects
again for its next call. One broken connection means its siblings most
likely broke too (a database restart ends them all), so every other thread
tests its connection (one empty query) before its next call and replaces
it if broken: after a database restart one call fails, not one per
connection, and the process recovers by itself once the database is back.

Deadlines
---------
Every call ends within the store timeout (``--store-timeout``), whatever the
database does, bounded on both sides:

- **by the server**: each connection sets ``statement_timeout`` (a query,
  lock waits included, that runs longer is cancelled and its transaction
  rolled back) and ``idle_in_transaction_session_timeout`` (a transaction
  its client stopped driving releases its locks);
- **by the client**: :meth:`Database.run` waits at most the timeout, from
  the moment the call is queued. A database that stopped answering (frozen,
  or a network that drops packets) cancels nothing on its side, so when the
  bound passes the call is *abandoned*: the caller gets
  :class:`StoreUnavailable` at once, and the call's connection is
  *interrupted*: its socket is shut down under the thread, which gets an
  error at once and drops the connection. Connecting is
  bounded by ``connect_timeout`` and a lost peer by TCP keepalives and
  ``tcp_user_timeout`` (each unless the URL sets its own).

An abandoned call is rolled back by the server unless it had committed
already, so a write is never left half-done, but its caller does not learn
which; as after a crash, a task whose creation committed unseen is found by
recovery once its lease expires.

A call cancelled while it waits in its lane's queue is withdrawn. A call a
thread has taken cannot be stopped mid-transaction without that doubt, so
when its caller is cancelled (a shutdown, a stopped worker) the caller
waits for the outcome, and the cancellation is delivered at its next
checkpoint; but only until the call's deadline, when its connection is
interrupted as above. Closing the store interrupts what is still running
and waits for each thread at most the timeout, so a frozen database cannot
hold a shutdown past it.
"""

from __future__ import annotations

import enum
import logging
import math
import os
import queue
import socket
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any, Generic, TypeVar

import attrs
import outcome
import psycopg
import trio
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus

from presa_trio.tasks.stores.base import (
    DEFAULT_STORE_TIMEOUT_S,
    PROTOCOL_ERRORS,
    StoreUnavailable,
)
from presa_trio.tasks.stores.postgres.errors import classify, first_line

log = logging.getLogger(__name__)

T = TypeVar("T")

Connection = psycopg.Connection[Any]

#: What a connection is in after a ``work`` that raised inside a transaction.
UNFINISHED = {TransactionStatus.INTRANS, TransactionStatus.INERROR}

#: A unit of work on one (autocommit) connection.
Work = Callable[[Connection], T]


class Lane(enum.Enum):
    """Where a call waits for a connection; see the module docstring."""

    REQUEST = "request"
    BACKGROUND = "background"


def bounded_conninfo(conninfo: str, timeout: float) -> str:
    """``conninfo`` with presa's bounds on connecting and on a silent peer, unless it sets them.

    ``connect_timeout`` (libpq counts whole seconds, at least 2), TCP
    keepalives probing an idle connection after the timeout, and
    ``tcp_user_timeout``: data the peer does not acknowledge within the
    timeout ends the connection.
    """
    given = conninfo_to_dict(conninfo)
    seconds = max(2, math.ceil(timeout))
    defaults: dict[str, Any] = {
        "connect_timeout": seconds,
        "keepalives": 1,
        "keepalives_idle": seconds,
        "keepalives_interval": max(1, seconds // 3),
        "keepalives_count": 3,
        "tcp_user_timeout": round(timeout * 1000),
    }
    return make_conninfo(conninfo, **{k: v for k, v in defaults.items() if k not in given})


def set_server_timeouts(connection: Connection, timeout: float) -> None:
    """The server's own bounds on this session's statements and open transactions."""
    milliseconds = str(round(timeout * 1000))
    connection.execute(
        "SELECT set_config('statement_timeout', %s, false),"
        " set_config('idle_in_transaction_session_timeout', %s, false)",
        (milliseconds, milliseconds),
    )


class Abandoned(Exception):
    """The call's caller stopped waiting: the thread ends it without running it."""


@attrs.define(eq=False)
class Session:
    """One thread's connection; None while it has none (not yet, or broken)."""

    connection: Connection | None = None
    # The value of :attr:`Database._breakages` when the connection was last known good.
    checked: int = 0
    # The call the thread is running on the connection, if any.
    running: Call[Any] | None = None
    # Held while the connection or the running call changes, and while one is interrupted.
    guard: threading.Lock = attrs.field(factory=threading.Lock)

    def begin(self, call: Call[Any]) -> None:
        """In the thread: ``call`` runs from now on, unless it was abandoned already."""
        with self.guard:
            if call.abandoned:
                raise Abandoned()
            self.running = call

    def end(self) -> None:
        with self.guard:
            self.running = None

    def replace(self, connection: Connection | None) -> None:
        """In the thread: close the connection held, if any, and hold ``connection``."""
        with self.guard:
            old, self.connection = self.connection, connection
            if old is not None:
                old.close()

    def report(self, call: Call[Any]) -> bool:
        """In the thread: whether ``call``'s outcome is to be handed back (not abandoned)."""
        with self.guard:
            call.reported = not call.abandoned
            return call.reported

    def abandon(self, call: Call[Any]) -> bool:
        """From the Trio thread: stop waiting for ``call``; False if its outcome is on its way.

        A call still running is interrupted (:meth:`interrupt`), so the thread is free at once.
        """
        with self.guard:
            if call.reported:
                return False
            call.abandoned = True
            self._shut_down(call)
            return True

    def interrupt(self, call: Call[Any]) -> None:
        """From any thread: if ``call`` still runs, its wait for the server fails at once."""
        with self.guard:
            self._shut_down(call)

    def _shut_down(self, call: Call[Any]) -> None:
        """Shut the connection's socket down under ``call``, if it runs on it (guard held)."""
        if self.running is not call or self.connection is None:
            return
        try:
            descriptor = self.connection.pgconn.socket
        except psycopg.OperationalError:
            return  # no socket any more: the call is failing already
        # Shut down through a copy of the descriptor: the connection's own stays open
        # (and so is never reused for another socket) until the thread closes it.
        with socket.socket(fileno=os.dup(descriptor)) as copy, suppress(OSError):
            copy.shutdown(socket.SHUT_RDWR)  # OSError: not connected, failing already


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
    - a call a thread has taken is still awaited when its caller is
      cancelled (the caller learns whether its write was made), and the
      cancellation is delivered at the caller's next checkpoint; but only
      until the call's deadline, when it is abandoned and its connection
      interrupted (:meth:`Session.abandon`, :meth:`Session.interrupt`);
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
    # The session of the thread that took the call (set before the claim).
    session: Session | None = None
    # Set once the caller stopped waiting (the call ends at once, unreported),
    # or once its outcome is handed back; never both.
    abandoned: bool = False
    reported: bool = False

    async def wait(
        self, submit: Callable[[Call[T]], None], bound: trio.CancelScope, deadline: float
    ) -> T:
        """``submit`` the call (unless already cancelled), then wait for its outcome.

        ``bound`` is the call's deadline scope and ``deadline`` the same
        moment on :func:`time.monotonic` (for the thread that interrupts).
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        submit(self)

        def stop_waiting(_: object) -> trio.lowlevel.Abort:
            if self._claim.acquire(blocking=False):
                return trio.lowlevel.Abort.SUCCEEDED  # withdrawn before a thread took it
            session = self.session
            assert session is not None
            if bound.cancel_called:  # the deadline: stop waiting now
                if session.abandon(self):
                    return trio.lowlevel.Abort.SUCCEEDED
                return trio.lowlevel.Abort.FAILED  # its outcome was handed back already
            # Cancelled from outside: the outcome is still awaited (the caller
            # learns whether the write was made), but only until the deadline.
            timer = threading.Timer(deadline - time.monotonic(), session.interrupt, (self,))
            timer.daemon = True
            timer.start()
            return trio.lowlevel.Abort.FAILED

        result: T = await trio.lowlevel.wait_task_rescheduled(stop_waiting)
        return result

    def take(self, session: Session) -> bool:
        """In a thread: whether it runs the call (False: withdrawn while it waited)."""
        self.session = session
        return self._claim.acquire(blocking=False)

    def hand_back(self, result: outcome.Outcome[T]) -> bool:
        """In a thread: wake the waiter with ``result``; False if the Trio run is over."""
        try:
            self._token.run_sync_soon(trio.lowlevel.reschedule, self._waiter, result)
        except trio.RunFinishedError:
            return False
        return True


@attrs.define(eq=False, repr=False)
class Database:
    """Connections, each with its thread, in two lanes; see the module docstring."""

    conninfo: str
    request_connections: int = 3
    background_connections: int = 3
    # The longest a call may take, queued and run, in seconds (``--store-timeout``).
    timeout: float = DEFAULT_STORE_TIMEOUT_S
    _lanes: dict[Lane, queue.SimpleQueue[Call[Any] | None]] = attrs.field(init=False)
    _threads: dict[Lane, list[threading.Thread]] = attrs.field(init=False)
    _sessions: list[Session] = attrs.field(init=False, factory=list)
    # How many connections were found broken so far: a thread whose session
    # was checked before the latest breakage tests its connection first.
    _breakages: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        self._lanes = {lane: queue.SimpleQueue() for lane in Lane}
        self._threads = {lane: [] for lane in Lane}
        self.conninfo = bounded_conninfo(self.conninfo, self.timeout)

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
                session.replace(None)
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
            self._sessions.append(session)

    async def close(self) -> None:
        """Let every thread finish the calls queued before, close its connection, and end.

        What still runs after the timeout is interrupted, and a thread that
        has not ended even then is left to end with the process (its
        threads are daemons): a database that stopped answering cannot hold
        the close for longer.
        """
        for lane, threads in self._threads.items():
            for _ in threads:
                self._lanes[lane].put(None)
        threads = [thread for lane in self._threads.values() for thread in lane]
        with trio.move_on_after(self.timeout):
            for thread in threads:
                await trio.to_thread.run_sync(thread.join, abandon_on_cancel=True)
        for session in self._sessions:
            if (running := session.running) is not None:
                session.abandon(running)
        for thread in threads:
            await trio.to_thread.run_sync(thread.join, self.timeout)
            if thread.is_alive():
                log.warning("%s did not end; it is left to the process's exit", thread.name)
        for threads in self._threads.values():
            threads.clear()

    async def run(self, work: Work[T], lane: Lane = Lane.REQUEST) -> T:
        """Run ``work`` in one of ``lane``'s threads, on its connection, within the timeout."""
        bound = trio.move_on_after(self.timeout)
        deadline = time.monotonic() + self.timeout
        with bound:
            try:
                return await Call(work).wait(self._lanes[lane].put, bound, deadline)
            except PROTOCOL_ERRORS:
                raise
            except Exception as error:
                raise classify(error) from error
        raise StoreUnavailable(
            f"postgresql: no answer within the store timeout ({self.timeout:g} s)"
        )

    # --- in the threads ----------------------------------------------------------------

    def _connect(self) -> Connection:
        connection = psycopg.connect(self.conninfo, autocommit=True)
        try:
            set_server_timeouts(connection, self.timeout)
        except BaseException:
            connection.close()
            raise
        return connection

    def _serve(self, calls: queue.SimpleQueue[Call[Any] | None], session: Session) -> None:
        """A thread's life: run the calls of its lane until told to stop."""
        try:
            while (call := calls.get()) is not None:
                if not call.take(session):
                    continue  # withdrawn while it waited
                result = outcome.capture(self._transact, session, call)
                if not session.report(call):
                    continue  # its caller stopped waiting
                if not call.hand_back(result):
                    return
        finally:
            session.replace(None)

    def _transact(self, session: Session, call: Call[T]) -> T:
        try:
            return self._attempt(session, call)
        except psycopg.errors.ReadOnlySqlTransaction:
            # A session that began while the database was read-only stays so
            # after it is switched back; the attempt dropped it: once more, on
            # a new one (the transaction was rolled back, so this is safe).
            return self._attempt(session, call)

    def _attempt(self, session: Session, call: Call[T]) -> T:
        session.begin(call)
        try:
            connection = self._usable(session, call)
            try:
                return call.work(connection)
            finally:
                if connection.info.transaction_status in UNFINISHED:
                    connection.rollback()  # left open by a ``work`` that raised
        except psycopg.Error as error:
            if isinstance(classify(error), StoreUnavailable):
                # Broken, or read-only: connect again for the next call.
                if not call.abandoned:
                    # Counted without a lock: a lost count only spares a sibling its test.
                    self._breakages += 1
                session.replace(None)
            raise
        finally:
            session.end()

    def _usable(self, session: Session, call: Call[Any]) -> Connection:
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
                session.replace(None)
                connection = None
        if connection is None:
            connection = self._connect()
            session.replace(connection)
            if call.abandoned:
                raise Abandoned()
        session.checked = breakages
        return connection
