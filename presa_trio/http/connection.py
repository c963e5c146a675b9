"""hypercorn's Trio connection, mended where two of its tasks closing and writing met,
and where a client that reads nothing held the shutdown.

:func:`install` has hypercorn's Trio worker serve every connection with
:class:`MendedTCPServer`.

**A write that meets the connection's close.** presa answers some requests
from their head alone, before their body is read (a body not JSON is 415),
with ``Connection: close``. A client that leaves before its body is whole
ends the body early: hypercorn's parser finds it cut short, and the task
reading the connection closes it (``TCPServer._close``: ``send_eof``, then
``aclose``) without the lock its writes take, while the app's task may be
writing the response. Trio's ``send_eof`` holds the stream's sending side
across a checkpoint, so a write in that moment is
:class:`trio.BusyResourceError` (:class:`trio.abc.HalfCloseableStream`).
hypercorn took a write's ``BrokenResourceError`` and ``ClosedResourceError``
for the connection's end, not this one: it came out of the app's ``send``,
and the log had a traceback ("Error in ASGI Framework") for a client that
had gone. Writes are serialised by that lock, so the only sending a write
can meet is the close: it is now the connection's end like the others, and
the response's bytes, which could no longer reach the client, are dropped.

**A failure in one connection.** hypercorn's Trio worker serves each
connection as a handler of :func:`trio.serve_listeners`, whose nursery holds
every connection; trio lets a handler's exception propagate from there,
and hypercorn lets it end the server. So a defect reached by one client's
bytes (in hypercorn, h11 or h2: :mod:`presa_trio.http.protocols` mends those
found so far) stopped every connection and the whole process. Failure
policy of a connection, as trio's documentation of ``serve_listeners``
advises: an ``Exception`` that escapes it is logged as an incident, with
its traceback, and ends that connection alone (closed, as at its normal
end); it never ends the server. Cancellation and Ctrl-C, which are no
``Exception``, go on as before.

**A client that reads nothing, at the shutdown.** hypercorn writes a
response's bytes shielded from cancellation, so that no write is left half
done. A client that stops reading its response (a large one, or a stream)
fills the socket's buffers, and that write waits until it reads again. Once
the shutdown's grace ran out, hypercorn cancelled the connection, but the
connection closes its socket only after its requests have ended, and the
shielded write waited for ever: the process never exited, whatever
``--shutdown-grace`` said. A connection cancelled now closes its socket at
once, which ends the write (the client gets a response cut short, as any
request still running at the end of the grace does), so the shutdown ends
within its grace.
"""

from __future__ import annotations

import logging

import hypercorn.trio.run
import trio
from hypercorn.events import Closed, Event
from hypercorn.trio.tcp_server import TCPServer

from presa_trio.server.faults import report_fault

log = logging.getLogger(__name__)


class MendedTCPServer(TCPServer):
    """hypercorn's Trio connection, whose write that meets its close ends it quietly,
    and whose failure ends it alone."""

    async def run(self) -> None:
        """Serve the connection; what fails in it ends it alone, and its cancellation
        closes its socket at once (see the module).

        Failure policy of the nursery: it holds the connection and its closer;
        the connection's end cancels the closer, and the closer raises nothing
        but the cancellation.
        """
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.close_when_cancelled)
                await super().run()
                nursery.cancel_scope.cancel(reason="connection over")
        except Exception:
            report_fault(log, "a connection failed; it is closed, and the server serves on")

    async def close_when_cancelled(self) -> None:
        """Close the socket once cancelled: a write waiting on a client that reads
        nothing ends then (by the connection's own end, the socket is closed already)."""
        try:
            await trio.sleep_forever()
        finally:
            await trio.aclose_forcefully(self.stream)

    async def protocol_send(self, event: Event) -> None:
        try:
            await super().protocol_send(event)
        except trio.BusyResourceError:  # the connection is being closed: see the module
            await self.protocol.handle(Closed())


def install() -> None:
    """Have hypercorn's Trio worker serve its connections as :class:`MendedTCPServer`."""
    # The name hypercorn's worker_serve makes every connection by.
    hypercorn.trio.run.TCPServer = MendedTCPServer  # type: ignore[attr-defined]
