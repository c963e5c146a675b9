"""Noticing a client that goes away: a watcher for each exchange that lasts.

A client's disconnect is the cancellation of its request (2026-07-28
basic/patterns/cancellation; streamable-http §Cancellation). hypercorn
never cancels an app: it reports ``http.disconnect`` on the exchange's
``receive`` instead, so some task must wait on ``receive`` while the
handler runs, and cancel the exchange's scope when the report comes early.

A task per exchange would do, but spawning, stepping and ending one costs
about 80 k instructions, 3 % of a whole ``tools/call`` served by hypercorn
and a quarter of what presa adds to the least such a server can do; and
most exchanges are over within a millisecond, long before anyone could
tell that a client had left. So :class:`DisconnectWatch` keeps the exchanges in flight, and one
task, every :data:`WATCH_AFTER_S`, starts a watcher for each exchange that
has run at least that long. A disconnect is therefore noticed within
``2 × WATCH_AFTER_S`` of the exchange's start at the latest, and at once
after that; an exchange that ends sooner never pays for a task. The
ticking task parks while nothing is in flight, so an idle server does not
wake.

Watchers live in this module's nursery, inside the server-lifetime
nursery. Each ends by itself: hypercorn reports the end of every stream,
from the app's last ``send`` or when the app returns.
"""

from __future__ import annotations

import attrs
import trio
from hypercorn.typing import ASGIReceiveCallable

from presa_trio.http.sse import ResponseState, ResponseWriter

#: Seconds an exchange runs before a task starts watching for its client to leave.
WATCH_AFTER_S = 0.25


@attrs.define(eq=False)
class Exchange:
    """One request in flight, as a watcher needs it."""

    receive: ASGIReceiveCallable
    writer: ResponseWriter
    # The exchange's cancel scope: cancelled when the client leaves early.
    scope: trio.CancelScope
    started: float


@attrs.define(eq=False)
class DisconnectWatch:
    """The exchanges in flight, and the task that starts watchers for the lasting ones."""

    # Exchanges in the order they started (a dict keeps insertion order), by scope.
    in_flight: dict[trio.CancelScope, Exchange] = attrs.field(factory=dict)
    # Set when an exchange arrives while the ticking task is parked.
    arrived: trio.Event | None = None

    def add(
        self, receive: ASGIReceiveCallable, writer: ResponseWriter, scope: trio.CancelScope
    ) -> None:
        """Start keeping an exchange; :meth:`discard` it when it ends."""
        self.in_flight[scope] = Exchange(receive, writer, scope, trio.current_time())
        if self.arrived is not None:
            self.arrived.set()

    def discard(self, scope: trio.CancelScope) -> None:
        """The exchange has ended; if no watcher was started for it, none will be."""
        self.in_flight.pop(scope, None)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Every :data:`WATCH_AFTER_S`, start a watcher for each exchange at least that old."""
        async with trio.open_nursery() as watchers:
            task_status.started()
            while True:
                if not self.in_flight:
                    self.arrived = trio.Event()
                    await self.arrived.wait()
                    self.arrived = None
                await trio.sleep(WATCH_AFTER_S)
                due = trio.current_time() - WATCH_AFTER_S
                for exchange in list(self.in_flight.values()):
                    if exchange.started > due:
                        break
                    del self.in_flight[exchange.scope]
                    watchers.start_soon(watch_disconnect, exchange)


async def watch_disconnect(exchange: Exchange) -> None:
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
    if exchange.writer.state is not ResponseState.COMPLETE:
        exchange.scope.cancel(reason="client closed the stream")
