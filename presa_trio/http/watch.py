"""The exchanges in flight, watched by one task: a body that comes too late, a client that leaves.

Two things can go wrong with an exchange while presa is not looking at
it, and one task looks for both, every :data:`WATCH_PERIOD_S`:

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
So the watch keeps a coarse clock instead: it counts its periods, an
exchange notes the count when it begins, and reading the count costs
nothing. At each tick, an exchange whose body is overdue is cancelled, and
an exchange that has lasted at least a whole period and is answering
gets a watcher (:func:`watch_disconnect`). A disconnect is therefore noticed
within ``2 × WATCH_PERIOD_S`` of the exchange's start at the latest, and
at once after that (spec-notes §48); a stalled body within one period
after ``read_timeout``. A tick costs about 140 k instructions (a Trio
sleep), two a second: a busy server does not notice them, and the ticking
task parks while nothing is in flight, so an idle one does not wake.

Watchers live in this module's nursery, inside the server-lifetime
nursery. Each ends by itself: hypercorn reports the end of every stream,
from the app's last ``send`` or when the app returns.
"""

from __future__ import annotations

import math

import attrs
import trio
from hypercorn.typing import ASGIReceiveCallable

from presa_trio.http.sse import ResponseState, ResponseWriter

#: Seconds between two ticks of the watch: its clock's resolution.
WATCH_PERIOD_S = 0.5


@attrs.define(eq=False)
class Exchange:
    """One request in flight, from the end of its head to the end of its response."""

    receive: ASGIReceiveCallable
    # Cancelled when the body is overdue or the client leaves early.
    scope: trio.CancelScope
    # The watch's tick count when the exchange began.
    began: int
    # Whether the whole body has been read; until then ``receive`` is the reader's.
    body_read: bool = False
    # Set once the handler runs; a disconnect before it is complete cancels.
    writer: ResponseWriter | None = None
    # Whether the watch cancelled the exchange because its body was overdue.
    late: bool = False


@attrs.define(eq=False)
class ExchangeWatch:
    """The exchanges in flight, and the task that looks after them."""

    # Seconds from an exchange's start by which its body must have been read.
    read_timeout: float
    in_flight: set[Exchange] = attrs.field(factory=set)
    # Periods counted since the watch started (it does not count while parked).
    ticks: int = 0
    # Set when an exchange arrives while the ticking task is parked.
    arrived: trio.Event | None = None

    @property
    def late_after(self) -> int:
        """The age in ticks at which an exchange has surely lasted ``read_timeout``."""
        return math.ceil(self.read_timeout / WATCH_PERIOD_S) + 1

    def begin(self, receive: ASGIReceiveCallable) -> Exchange:
        """Keep a new exchange, its body still to be read; :meth:`end` it when it ends."""
        exchange = Exchange(receive, trio.CancelScope(), self.ticks)
        self.in_flight.add(exchange)
        if self.arrived is not None:
            self.arrived.set()
        return exchange

    def end(self, exchange: Exchange) -> None:
        """The exchange is over; if no watcher was started for it, none will be."""
        self.in_flight.discard(exchange)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Every :data:`WATCH_PERIOD_S`, look at each exchange in flight."""
        async with trio.open_nursery() as watchers:
            task_status.started()
            while True:
                if not self.in_flight:
                    self.arrived = trio.Event()
                    await self.arrived.wait()
                    self.arrived = None
                await trio.sleep(WATCH_PERIOD_S)
                self.ticks += 1
                for exchange in list(self.in_flight):
                    self.tick(exchange, watchers)

    def tick(self, exchange: Exchange, watchers: trio.Nursery) -> None:
        """Cancel an exchange whose body is overdue; watch one answering after a whole period.

        An exchange that began during period ``n`` is seen at tick ``n + 1``
        having lasted anything up to one period, and at tick ``n + 2`` at
        least one whole period.
        """
        age = self.ticks - exchange.began
        if not exchange.body_read:
            if age >= self.late_after:
                self.in_flight.discard(exchange)
                exchange.late = True
                exchange.scope.cancel(reason="request body not received in time")
        elif exchange.writer is not None and age >= 2:
            self.in_flight.discard(exchange)
            watchers.start_soon(watch_disconnect, exchange, exchange.writer)


async def watch_disconnect(exchange: Exchange, writer: ResponseWriter) -> None:
    """Cancel the exchange when its client goes away before the response is complete.

    hypercorn also reports a disconnect when *it* ends the stream: from
    inside the app's last ``send``, or when the app returns. So this task
    always ends, a moment after its exchange at the latest. Once the writer
    is complete, the disconnect is the normal end and changes nothing
    (cancelling the exchange from the last ``send`` would interrupt
    hypercorn halfway through closing or recycling the connection).
    """
    while (await exchange.receive())["type"] != "http.disconnect":
        pass
    if writer.state is not ResponseState.COMPLETE:
        exchange.scope.cancel(reason="client closed the stream")
