"""What runs beside an exchange's handler: the exchange, and its disconnect watcher.

An exchange is one request in flight, from the end of its head to the end of
its response. Two things can go wrong with it while its handler is busy:

- **The body never ends.** A client that sends a request head and then
  stalls must not hold a connection for ever: a body not read
  ``read_timeout`` after the exchange began is given up on and answered 408
  (RFC 9110 §15.5.9; rung 6 of the admission order, spec-notes §10). That is
  a ``trio.move_on_after`` around the read, in the exchange's own task
  (:meth:`presa_trio.http.app.McpApp.exchange`).
- **The client leaves.** A client's disconnect is the cancellation of its
  request (2026-07-28 basic/patterns/cancellation; streamable-http
  §Cancellation). hypercorn never cancels an app: it reports
  ``http.disconnect`` on the exchange's ``receive`` instead, so a task must
  wait on ``receive`` while the handler runs (:func:`watch_disconnect`), and
  cancel the exchange when the report comes early (spec-notes §48).

That watcher, and the keep-alive of an event stream
(:meth:`~presa_trio.http.sse.ResponseWriter.keep_alive`), run in the
exchange's own nursery, opened by :meth:`presa_trio.http.app.McpApp.http`
(whose docstring states its failure policy). Its cancel scope is the
exchange's: cancelling it stops the handler and its helpers together, and
leaving it ends them. Nothing started for a request outlives it.
"""

from __future__ import annotations

import logging

import attrs
import trio
from hypercorn.typing import ASGIReceiveCallable

from presa_trio.http.sse import ResponseState, ResponseWriter
from presa_trio.server.context import Connection

log = logging.getLogger(__name__)


@attrs.frozen(eq=False)
class Exchange:
    """One request in flight: where its helpers run, and what it came on."""

    # hypercorn's ``receive`` for this request: the body reader's, then the watcher's.
    receive: ASGIReceiveCallable
    # The exchange's nursery, where its helpers run; its cancel scope is the exchange's.
    nursery: trio.Nursery
    # The transport connection it came on (see :func:`presa_trio.http.app.connection_of`).
    connection: Connection

    def watch_disconnect(self, writer: ResponseWriter) -> None:
        """From now on, the client leaving before ``writer`` is complete cancels the exchange."""
        self.nursery.start_soon(watch_disconnect, self.receive, writer, self.nursery.cancel_scope)


async def watch_disconnect(
    receive: ASGIReceiveCallable, writer: ResponseWriter, exchange: trio.CancelScope
) -> None:
    """Cancel the exchange when its client goes away before the response is complete.

    hypercorn also reports a disconnect when *it* ends the stream, from
    inside the app's last ``send``. Once the writer is complete, the
    disconnect is the normal end and changes nothing (cancelling the exchange
    from the last ``send`` would interrupt hypercorn halfway through closing
    or recycling the connection).
    """
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
    except Exception:
        log.exception("a disconnect watcher failed; its request ends")
        exchange.cancel(reason="disconnect watcher failed")
        return
    if writer.state is not ResponseState.COMPLETE:
        exchange.cancel(reason="client closed the stream")
