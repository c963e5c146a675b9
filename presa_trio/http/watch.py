"""The exchanges in flight, and a watch for a body that comes too late or a client that leaves.

Two things can go wrong with an exchange while presa is not looking at it:

- **The body never ends.** A client that sends a request head and then
  stalls must not hold a connection for ever: an exchange whose body is not
  read :attr:`ExchangeWatch.read_timeout` after it began is cancelled, and
  answered 408 (RFC 9110 §15.5.9; rung 6 of the admission order,
  spec-notes §10).
- **The client leaves.** A client's disconnect is the cancellation of its
  request (2026-07-28 basic/patterns/cancellation; streamable-http
  §Cancellation). hypercorn never cancels an app: it reports
  ``http.disconnect`` on the exchange's ``receive`` instead, so some task
  must wait on ``receive`` while the handler runs, and cancel the
  exchange's scope when the report comes early.

A deadline on each exchange's scope and a watcher task per exchange would
do both, for about 25 k and 80 k instructions: together a third of what
presa adds to the 2.9 M that hypercorn spends on a bare ``tools/call``
(docs/performance.md). And most exchanges are over within a millisecond.
So :class:`ExchangeWatch` *looks* at the exchanges in flight now and then
(:meth:`~ExchangeWatch.look`): it cancels each one whose body is overdue,
and starts a watcher (:func:`watch_disconnect`) for each one that has been
going for :data:`WATCH_PERIOD_S` and is answering. A look is due one
period after the last. While requests keep coming, the first to begin
after that makes it; when they stop, the watch's own timer makes it one
period later still. So looks are at most two periods apart: a disconnect
is noticed within ``2 × WATCH_PERIOD_S`` of the exchange's start at the
latest, and at once after that (spec-notes §48), and a stalled body within
two periods after ``read_timeout``. A busy server never waits on that
timer (each look moves it on), and an idle one parks it.

Watchers, and the keep-alives of event streams
(:meth:`~presa_trio.http.sse.ResponseWriter.keep_alive`), live in the
watch's nursery, :attr:`ExchangeWatch.helpers`: per-request helpers, apart
from the Tasks runtime. Each catches its own failure, which ends only its
request (a watcher that fails cancels its exchange), never the watch, the
server-lifetime nursery or a task. Each ends by itself: hypercorn reports
the end of every stream, from the app's last ``send`` or when the app returns.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Hashable

import attrs
import trio
from hypercorn.typing import ASGIReceiveCallable

from presa_trio.http.sse import ResponseState, ResponseWriter

log = logging.getLogger(__name__)

#: Seconds from one look at the exchanges in flight to the next one due.
WATCH_PERIOD_S = 0.25


@attrs.define(eq=False)
class Exchange:
    """One request in flight, from the end of its head to the end of its response."""

    receive: ASGIReceiveCallable
    # Cancelled when the body is overdue or the client leaves early.
    scope: trio.CancelScope
    # Trio time when the exchange began.
    began: float
    # Whether the whole body has been read; until then ``receive`` is the reader's.
    body_read: bool = False
    # Set once the handler runs; a disconnect before it is complete cancels.
    writer: ResponseWriter | None = None
    # Whether the watch cancelled the exchange because its body was overdue.
    late: bool = False
    # The transport connection it came on (see :func:`presa_trio.http.app.connection_key`).
    connection: Hashable = None


@attrs.define(eq=False)
class ExchangeWatch:
    """The exchanges in flight, looked at every period or so."""

    # Seconds from an exchange's start by which its body must have been read.
    read_timeout: float
    in_flight: set[Exchange] = attrs.field(factory=set)
    # Trio time from which the next look is due.
    next_look: float = -math.inf
    # Where per-request helpers (watchers, keep-alives) run, while :meth:`run` runs.
    helpers: trio.Nursery | None = None
    # The watch's timer while it waits for a look to be overdue; a look moves it on.
    timer: trio.CancelScope | None = None
    # Set when an exchange begins while the watch is parked.
    arrived: trio.Event | None = None

    def begin(self, receive: ASGIReceiveCallable) -> Exchange:
        """Keep a new exchange, its body still to be read, looking first if a look is due.

        :meth:`end` it when it ends.
        """
        now = trio.current_time()
        if now >= self.next_look and self.helpers is not None:
            self.look(now, self.helpers)
        exchange = Exchange(receive, trio.CancelScope(), now)
        self.in_flight.add(exchange)
        if self.arrived is not None:
            self.arrived.set()
        return exchange

    def end(self, exchange: Exchange) -> None:
        """The exchange is over; if no watcher was started for it, none will be."""
        self.in_flight.discard(exchange)

    def look(self, now: float, watchers: trio.Nursery) -> None:
        """Cancel each exchange whose body is overdue; watch each one answering for a period."""
        self.next_look = now + WATCH_PERIOD_S
        if self.timer is not None:
            self.timer.deadline = self.next_look + WATCH_PERIOD_S
        for exchange in list(self.in_flight):
            age = now - exchange.began
            if not exchange.body_read:
                if age >= self.read_timeout:
                    self.in_flight.discard(exchange)
                    exchange.late = True
                    exchange.scope.cancel(reason="request body not received in time")
            elif exchange.writer is not None and age >= WATCH_PERIOD_S:
                self.in_flight.discard(exchange)
                watchers.start_soon(watch_disconnect, exchange, exchange.writer)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Look when no exchange has begun for a period after a look was due; park when idle."""
        async with trio.open_nursery() as watchers:
            self.helpers = watchers
            try:
                task_status.started()
                while True:
                    if not self.in_flight:
                        self.arrived = trio.Event()
                        await self.arrived.wait()
                        self.arrived = None
                    with trio.CancelScope(
                        deadline=max(self.next_look, trio.current_time()) + WATCH_PERIOD_S
                    ) as self.timer:
                        await trio.sleep_forever()
                    self.timer = None
                    self.look(trio.current_time(), watchers)
            finally:  # a watch that is not running starts no watcher
                self.helpers = None
                self.timer = None
                self.arrived = None


async def watch_disconnect(exchange: Exchange, writer: ResponseWriter) -> None:
    """Cancel the exchange when its client goes away before the response is complete.

    hypercorn also reports a disconnect when *it* ends the stream: from
    inside the app's last ``send``, or when the app returns. So this task
    always ends, a moment after its exchange at the latest. Once the writer
    is complete, the disconnect is the normal end and changes nothing
    (cancelling the exchange from the last ``send`` would interrupt
    hypercorn halfway through closing or recycling the connection).
    """
    try:
        while (await exchange.receive())["type"] != "http.disconnect":
            pass
    except Exception:
        log.exception("a disconnect watcher failed; its request ends")
        exchange.scope.cancel(reason="disconnect watcher failed")
        return
    if writer.state is not ResponseState.COMPLETE:
        exchange.scope.cancel(reason="client closed the stream")
