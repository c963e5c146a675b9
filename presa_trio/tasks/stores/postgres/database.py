"""PostgreSQL from Trio: psycopg's blocking calls, each run whole in a thread.

Trio has no PostgreSQL driver of its own, and psycopg's async mode speaks
asyncio only, so presa uses psycopg's blocking API through
:func:`trio.to_thread.run_sync`: every database call is one function, run
whole, in one transaction, by a worker thread, on a connection it is lent
for that call. Connections are in autocommit mode: a single statement is
its own transaction and costs one round trip, and a function that needs
several statements to be atomic opens ``connection.transaction()`` itself.

Connections and lanes
---------------------
The connections are kept on the Trio side, in two lanes, each a list of
idle connections and a :class:`trio.CapacityLimiter` with one token per
connection: a call takes a token (waiting, in arrival order, if every
connection of its lane is busy), so an idle connection is there for it; it
hands that connection to a thread, and puts it back when the thread is
done. Only the Trio thread touches the lists; a thread sees one connection,
given to it as an argument and handed back with the result, by trio.

- **the request lane** (``request_connections``, default 3): reads,
  creations, and the writes of ``tasks/update`` and ``tasks/cancel``;
- **the background lane** (``background_connections``, default 3): a
  worker's own writes (status messages, its outcome: the writes that carry
  a lease generation) and the housekeeping (lease renewals, claims, expiry).

A burst of tasks leaves hundreds of worker writes waiting; in one queue, a
``tasks/cancel`` arriving then waited behind all of them.

A few connections serve hundreds of calls a second: a call holds its
connection for one transaction, typically one or two round trips on
loopback. **One more connection listens per channel**, read on the Trio
thread itself (:mod:`presa_trio.tasks.stores.postgres.listen`): task
changes, the server's own change notifications
(:mod:`presa_trio.tasks.stores.postgres.relay`), and with ``--task-events``
the event appends. So with the defaults one ``serve`` process costs
PostgreSQL eight connections (nine with ``--task-events``).

Failures
--------
A call that cannot reach the database (the server restarting, the network
gone, no answer within the store timeout) raises
:class:`~presa_trio.tasks.stores.base.StoreUnavailable`, which a request answers
with -32603 and ``data.retryable: true``: sending the same request again
later can succeed. The broken connection is dropped, and a new one made for
the next call that takes its place. One broken connection means its
siblings most likely broke too (a database restart ends them all), so every
other connection is tested (one query) before its next call and replaced if
broken: after a database restart one call fails, not one per connection,
and the process recovers by itself once the database is back.

Cancellation and deadlines
--------------------------
Every call ends within the store timeout (``--store-timeout``), whatever the
database does, bounded on both sides:

- **by the server**: each connection sets ``statement_timeout`` (a query,
  lock waits included, that runs longer is cancelled and its transaction
  rolled back) and ``idle_in_transaction_session_timeout`` (a transaction
  its client stopped driving releases its locks), and turns off the
  database's ``idle_session_timeout``, if it has one (:func:`stay_when_idle`);
- **by the client**: :meth:`Database.run` waits at most the timeout, from
  the moment it is called (a :func:`trio.move_on_after`). Connecting is
  bounded by ``connect_timeout``, and a lost peer by TCP keepalives and
  ``tcp_user_timeout`` (each unless the URL sets its own).

A thread cannot be stopped from outside, and a statement half-sent cannot
be taken back, so a call whose caller is cancelled (the deadline, a
shutdown, a stopped worker) is ended the way PostgreSQL offers: psycopg's
:meth:`~psycopg.Connection.cancel_safe`, sent from the Trio side (in a
thread of its own: it opens a connection), asks the server to cancel the
statement; the transaction is rolled back, the call's thread gets an error
at once, and the caller gets :class:`trio.Cancelled` (or, at the deadline,
:class:`StoreUnavailable`). A server that does not answer even that (frozen,
or the network silent) gets :data:`CANCEL_WAIT_S`; then the call's thread is
abandoned (trio's ``abandon_on_cancel``) with its connection, which is never
lent again, and ends by itself once the socket fails. A connection that was
sent a cancel is dropped too: a cancel that arrives late could otherwise
hit the next call's statement.

A cancelled call is rolled back by the server unless it had committed
already, so a write is never left half-done, but its caller does not learn
which; as after a crash, a task whose creation committed unseen is found by
recovery once its lease expires. A call cancelled while it waits for a
connection never runs.
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import outcome
import psycopg
import trio
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus

from presa_trio.tasks.stores.base import (
    DEFAULT_STORE_TIMEOUT_S,
    PROTOCOL_ERRORS,
    StoreError,
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

#: A process whose clock is further than this from the database's (ms) is
#: warned at start: its tasks' timestamps and TTLs are off by as much.
CLOCK_WARNING_MS = 1000

#: How long a cancelled call waits for the server to end its statement, in
#: seconds, before its thread is abandoned (see the module docstring).
CANCEL_WAIT_S = 1.0


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


#: The first PostgreSQL with ``idle_session_timeout`` (14), as ``server_version`` numbers it.
IDLE_SESSION_TIMEOUT_SINCE = 140000


def stay_when_idle(connection: Connection) -> None:
    """End no session of presa's for being idle: they are idle by design.

    A connection waits idle between calls, and the listening one always: a
    database's ``idle_session_timeout`` (PostgreSQL 14 on) would end each
    pooled connection once idle past it, so the next request on it failed
    (a retryable error, from a healthy database), and end the listening one
    over and over. The session's own setting overrides the database's.
    """
    if connection.info.server_version >= IDLE_SESSION_TIMEOUT_SINCE:
        connection.execute("SET idle_session_timeout = 0")


def transact(connection: Connection, work: Work[T]) -> T:
    """In a thread: run ``work``, leave no transaction open, classify what it raised.

    What ``work`` raised already classified (a schema of another version,
    :class:`~presa_trio.tasks.stores.postgres.schema.SchemaMismatch`) goes as it is.
    """
    try:
        try:
            return work(connection)
        finally:
            if connection.info.transaction_status in UNFINISHED:
                connection.rollback()  # left open by a ``work`` that raised
    except (*PROTOCOL_ERRORS, StoreError):
        raise
    except Exception as error:
        raise classify(error) from error


def writable(connection: Connection) -> bool:
    """In a thread: whether the connection still works, and may write.

    A session that began while the database was read-only stays read-only
    after the database is switched back, so it counts as broken too.
    """
    try:
        return connection.execute("SHOW transaction_read_only").fetchone() == ("off",)
    except psycopg.Error:
        return False


@attrs.define(eq=False)
class Slot:
    """A place for one connection in a lane; only the Trio thread reads or changes it."""

    # None until a connection is made, and after it broke or was cancelled.
    connection: Connection | None = None
    # :attr:`Database._breakages` when the connection was last known good.
    checked: int = 0


@attrs.define(eq=False)
class Pool:
    """One lane: its idle slots, and a limiter with one token per slot."""

    idle: list[Slot]
    limiter: trio.CapacityLimiter

    @classmethod
    def of(cls, slots: list[Slot]) -> Pool:
        return cls(slots, trio.CapacityLimiter(len(slots)))


@attrs.define(eq=False, repr=False)
class Database:
    """Connections in two lanes, each lent to one thread at a time; see the module docstring."""

    conninfo: str
    request_connections: int = 3
    background_connections: int = 3
    # The longest a call may take, waiting for a connection included, in seconds.
    timeout: float = DEFAULT_STORE_TIMEOUT_S
    _pools: dict[Lane, Pool] = attrs.field(init=False, factory=dict)
    # How many connections were found broken so far: a slot checked before
    # the latest breakage tests its connection before its next call.
    _breakages: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        try:
            self.conninfo = bounded_conninfo(self.conninfo, self.timeout)
        except psycopg.ProgrammingError as error:  # a URL libpq cannot parse
            # It may quote the URL, password and all: open_store's refusal hides that.
            raise StoreUnavailable(f"bad PostgreSQL URL: {first_line(error)}") from None

    async def open(self) -> None:
        """Make every connection; :class:`StoreUnavailable` if one cannot be made."""
        slots: list[Slot] = []
        try:
            for _ in range(self.request_connections + self.background_connections):
                slots.append(Slot(await trio.to_thread.run_sync(self._connect)))
        except psycopg.Error as error:
            for slot in slots:
                await self._drop(slot)
            raise StoreUnavailable(f"cannot connect to PostgreSQL: {first_line(error)}") from error
        self._pools = {
            Lane.REQUEST: Pool.of(slots[: self.request_connections]),
            Lane.BACKGROUND: Pool.of(slots[self.request_connections :]),
        }

    async def close(self) -> None:
        """Close the idle connections, all within the timeout: a frozen database cannot hold it."""
        with trio.move_on_after(self.timeout):
            for pool in self._pools.values():
                for slot in pool.idle:
                    await self._drop(slot)

    async def run(self, work: Work[T], lane: Lane = Lane.REQUEST) -> T:
        """Run ``work`` on a connection of ``lane``, in a thread, within the timeout."""
        with trio.move_on_after(self.timeout):
            pool = self._pools[lane]
            async with pool.limiter:  # a token: an idle slot is there
                slot = pool.idle.pop()
                try:
                    try:
                        return await self._call(slot, work)
                    except StoreUnavailable as error:
                        if not isinstance(error.__cause__, psycopg.errors.ReadOnlySqlTransaction):
                            raise
                    # The session began while the database was read-only and stays so
                    # after it is switched back: once more, on a new one (the
                    # transaction was rolled back, so this is safe).
                    return await self._call(slot, work)
                finally:
                    pool.idle.append(slot)
        raise StoreUnavailable(
            f"postgresql: no answer within the store timeout ({self.timeout:g} s)"
        )

    async def _call(self, slot: Slot, work: Work[T]) -> T:
        """Run ``work`` on the slot's connection (made or tested first if need be).

        The connection is lent to the call, and given back to the slot
        unless the call was cancelled (:func:`cancel_when_cancelled` closed
        or abandoned it) or found it broken.
        """
        connection = await self._usable(slot)
        slot.connection = None
        try:
            result = await run_cancellably(connection, work)
        except StoreUnavailable:
            # Broken, or read-only: connect again for the next call, and have
            # the other slots test theirs.
            self._breakages += 1
            await close(connection)
            raise
        except Exception:
            slot.connection = connection  # refused data, or an answer such as a conflict
            raise
        slot.connection = connection
        return result

    async def _usable(self, slot: Slot) -> Connection:
        """The slot's connection, tested first if another broke since; else a new one.

        The test is a call like any other (:func:`run_cancellably`): a database
        that stopped answering holds it no longer than the call's own bound,
        and the connection tested goes back to the slot only if it passed.
        """
        breakages = self._breakages
        if slot.connection is not None and slot.checked < breakages:
            tested, slot.connection = slot.connection, None
            if await run_cancellably(tested, writable):
                slot.connection = tested
            else:
                await close(tested)
        if slot.connection is None:
            try:
                # Abandoned if cancelled: connecting changes nothing; the connection
                # made meanwhile is closed when it is collected.
                slot.connection = await trio.to_thread.run_sync(
                    self._connect, abandon_on_cancel=True
                )
            except psycopg.Error as error:
                raise classify(error) from error
        slot.checked = breakages
        return slot.connection

    async def _drop(self, slot: Slot) -> None:
        """Close the slot's connection, if any; the next call makes a new one."""
        connection, slot.connection = slot.connection, None
        if connection is not None:
            await close(connection)

    def _connect(self) -> Connection:
        """In a thread: a new connection, with the server's bounds set."""
        connection = psycopg.connect(self.conninfo, autocommit=True)
        try:
            set_server_timeouts(connection, self.timeout)
            stay_when_idle(connection)
        except BaseException:
            connection.close()
            raise
        return connection


async def close(connection: Connection) -> None:
    """Close ``connection`` in a thread, even in a cancelled scope; at most :data:`CANCEL_WAIT_S`.

    Closing sends one message and never waits for an answer; the bound
    only keeps a socket the kernel cannot write to from holding the caller.
    """
    with trio.CancelScope(shield=True), trio.move_on_after(CANCEL_WAIT_S):
        await trio.to_thread.run_sync(connection.close, abandon_on_cancel=True)


async def run_cancellably(connection: Connection, work: Work[T]) -> T:
    """Run ``work`` on ``connection`` in a thread; if cancelled, cancel it on the server.

    The thread runs shielded from the caller's cancellation, while
    :func:`cancel_when_cancelled` watches for it beside: on a cancel, it asks
    the server to end the statement (psycopg's ``cancel_safe``), waits
    :data:`CANCEL_WAIT_S` for the thread, and only then stops waiting for it
    (the thread is abandoned, and the caller never lends this connection
    again). The nursery's failure policy: nothing ends it early; the call's
    own outcome never reaches it (captured, returned after), and the watcher
    returns, not raises, once the cancel is handled. The caller's scope is
    still cancelled then, so the checkpoint after the nursery raises
    ``trio.Cancelled`` bare, as every other store does: raised in the
    nursery, it would come out in an exception group, which a caller's
    ``except trio.Cancelled`` does not catch.
    """
    finished = trio.Event()
    watched = Watch()
    async with trio.open_nursery() as nursery:
        with trio.CancelScope(shield=True) as call:
            nursery.start_soon(cancel_when_cancelled, connection, finished, call, watched)
            try:
                result = await trio.to_thread.run_sync(
                    outcome.capture, transact, connection, work, abandon_on_cancel=True
                )
            finally:
                finished.set()
    if watched.cancelled:
        await trio.sleep(0)  # a checkpoint: raises the caller's Cancelled, bare
    return result.unwrap()


@attrs.define
class Watch:
    """What :func:`cancel_when_cancelled` saw: whether the caller was cancelled."""

    cancelled: bool = False


async def cancel_when_cancelled(
    connection: Connection, finished: trio.Event, call: trio.CancelScope, watched: Watch
) -> None:
    """Return once the call ``finished``; if cancelled first, end the call on the server.

    The connection is closed once the thread ended: a cancel that reaches
    the server late must not meet another call's statement. A thread still
    running after :data:`CANCEL_WAIT_S` is abandoned with its connection.
    The cancel is noted in ``watched``, not raised (see :func:`run_cancellably`).
    """
    try:
        await finished.wait()
    except trio.Cancelled:
        watched.cancelled = True
    else:
        return
    with trio.CancelScope(shield=True), trio.move_on_after(CANCEL_WAIT_S):
        try:
            await trio.to_thread.run_sync(
                lambda: connection.cancel_safe(timeout=CANCEL_WAIT_S),
                abandon_on_cancel=True,
            )
        except psycopg.Error as error:
            log.debug("could not cancel a statement: %s", first_line(error))
        await finished.wait()
    if finished.is_set():
        await close(connection)
    else:
        call.cancel()  # still running: stop waiting for its thread


async def warn_of_clock_skew(database: Database, wall_ms: Callable[[], int]) -> None:
    """Log a warning if this process's clock is far from the database's."""
    before = wall_ms()
    row = await database.run(lambda c: c.execute("SELECT presa_now_ms()").fetchone())
    after = wall_ms()
    assert row is not None
    # The database read its clock somewhere between ``before`` and ``after``.
    skew = row[0] - (before + after) // 2
    if abs(skew) > CLOCK_WARNING_MS + (after - before) // 2:
        log.warning(
            "this process's clock is %+.1f s from the database's: leases are judged on "
            "the database's clock, but task timestamps and TTLs are off by as much",
            -skew / 1000,
        )
