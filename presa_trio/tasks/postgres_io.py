"""PostgreSQL from Trio: a psycopg connection pool driven from worker threads.

Trio has no PostgreSQL driver of its own, and psycopg's async mode speaks
asyncio only, so presa uses psycopg's blocking API off the Trio thread:
every database call is one function, run whole by ``trio.to_thread.run_sync``
with one connection taken from a ``psycopg_pool.ConnectionPool``.
Connections are in autocommit mode: a single statement is its own
transaction and costs one round trip, and a function that needs several
statements to be atomic opens ``connection.transaction()`` itself.

Threads and connections
-----------------------
- **Pool: ``pool_size`` connections (default 8)**, opened at start and kept.
  A store call holds one connection for exactly one transaction, typically
  one or two round trips on loopback, so a few connections serve hundreds
  of calls a second; more would only add server processes to PostgreSQL
  (each connection is one) for every presa process.
- **Threads: a ``trio.CapacityLimiter`` of the same size.** At most as many
  threads run store calls as there are connections, so a thread never sits
  blocked waiting for the pool while holding a thread slot, and the limiter
  queues the excess in Trio, where it stays cancellable. Trio's own default
  limiter (40 threads, shared by every ``to_thread`` call) is left alone.
- **One more connection and thread for LISTEN** (see
  :mod:`presa_trio.tasks.postgres_listen`): notifications arrive on a
  connection that is never used for anything else.

So one presa process costs PostgreSQL ``pool_size + 1`` connections, and
runs at most ``pool_size + 1`` threads for them, plus the pool's own three
maintenance threads (psycopg_pool opens and replaces connections in the
background, never in a caller's thread).

Failures
--------
A call that cannot reach the database (the server restarting, the network
gone, the pool unable to hand out a connection within ``connect_timeout``)
raises :class:`~presa_trio.tasks.store.StoreUnavailable`, which a request
answers with -32603 and ``data.retryable: true``: sending the same request
again later can succeed. A
failed call has the pool test its idle connections, broken ones are
replaced in the background, and the process recovers by itself once the
database is back: after a database restart, the first call on each
process fails, the next ones succeed. A cancelled call
cannot stop its thread mid-transaction: the thread finishes (commit or
rollback) and Trio drops the result, so a write is never left half-done.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import psycopg
import psycopg_pool
import trio

from presa_trio.tasks.store import StoreUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")

#: A unit of work on one (autocommit) connection.
Work = Callable[[psycopg.Connection[Any]], T]


@attrs.define(eq=False, repr=False)
class Database:
    """A pool of connections and the threads that use them; see the module docstring."""

    conninfo: str
    pool_size: int = 8
    # Longest wait for a connection (new or from the pool), in seconds.
    connect_timeout: float = 3.0
    _pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]] = attrs.field(init=False)
    _limiter: trio.CapacityLimiter = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._pool = psycopg_pool.ConnectionPool(
            self.conninfo,
            min_size=self.pool_size,
            max_size=self.pool_size,
            timeout=self.connect_timeout,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(self.connect_timeout))},
            open=False,
            name="presa-tasks",
        )
        self._limiter = trio.CapacityLimiter(self.pool_size)

    async def open(self) -> None:
        """Open the pool; :class:`StoreUnavailable` if no connection can be made."""
        try:
            await trio.to_thread.run_sync(self._open_pool)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as error:
            await self.close()
            raise StoreUnavailable(f"cannot connect to PostgreSQL: {first_line(error)}") from error

    def _open_pool(self) -> None:
        # One connection first: its failure says why (the pool's only says "timed out").
        psycopg.connect(self.conninfo, connect_timeout=max(1, round(self.connect_timeout))).close()
        self._pool.open(wait=True, timeout=self.connect_timeout)

    async def close(self) -> None:
        await trio.to_thread.run_sync(self._pool.close)

    async def run(self, work: Work[T]) -> T:
        """Run ``work`` on a pooled connection, off the Trio thread."""
        try:
            return await trio.to_thread.run_sync(self._transact, work, limiter=self._limiter)
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as error:
            raise StoreUnavailable(f"postgresql: {first_line(error)}") from error

    def _transact(self, work: Work[T]) -> T:
        try:
            with self._pool.connection() as connection:
                return work(connection)
        except psycopg.OperationalError:
            # One connection broke, so its siblings most likely did too (a
            # database restart ends them all): test every idle one now, so
            # one request fails instead of one per pooled connection.
            self._pool.check()
            raise


def first_line(error: BaseException) -> str:
    """libpq's messages run over several lines; an operator's log wants one."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
