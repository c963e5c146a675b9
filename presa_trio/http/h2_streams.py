"""hypercorn's HTTP/2 protocol, mended where a client's timing could break the server.

hypercorn 0.18 keeps, per stream, the stream itself (until its response is
complete) and a buffer of the response's bytes (until they are written).
Two moments of an HTTP/2 connection found it wanting:

- **DATA after the response.** A server may send its complete response
  before the client has sent its whole request, and may then reset the
  stream with ``NO_ERROR`` so the client stops sending (RFC 9113 §8.1).
  presa answers early whenever it can: a body over ``--max-body`` is 413 at
  its ``content-length`` or at the frame that goes past it, a wrong
  ``Content-Type`` or ``Accept`` is answered from the head alone. hypercorn
  looked the finished stream up for the client's next DATA frame and raised
  ``KeyError`` from the connection's task, which on hypercorn's Trio worker
  ends the server's nursery: one client stopped the whole process. (So did
  DATA that came in the same read as a head hypercorn refused while
  shutting down.) Such a frame is now dropped: its bytes are acknowledged,
  so the connection's flow-control window does not shrink for good, and a
  stream still open on the client's side is reset with ``NO_ERROR``, once.
- **The connection lost mid-response.** The app's last ``send`` waits until
  the response's buffer is written out. When the connection ended first,
  hypercorn stopped writing and left the buffers as they were, so that
  ``send`` never returned: the request, its nursery and its connection's
  tasks stayed until the shutdown grace ran out (the app does not cancel its
  last ``send``: :func:`presa_trio.http.exchange.watch_disconnect`). Every
  buffer is now closed with the connection, which ends those waits.

:func:`install` has hypercorn run every HTTP/2 connection (prior knowledge
and upgrade alike) as :class:`MendedH2Protocol`.
"""

from __future__ import annotations

import h2.events
import hypercorn.protocol
from h2.errors import ErrorCodes
from hypercorn.events import Closed, Event
from hypercorn.protocol.h2 import H2Protocol


class MendedH2Protocol(H2Protocol):
    """hypercorn's HTTP/2 protocol; see the module's docstring for what differs."""

    async def handle(self, event: Event) -> None:
        await super().handle(event)
        if isinstance(event, Closed):
            for buffer in list(self.stream_buffers.values()):
                await buffer.close()  # its bytes can no longer be written

    async def _handle_events(self, events: list[h2.events.Event]) -> None:
        # One event at a time: a response completed while an earlier event of
        # the batch was handled lets go of its stream before the next is looked at.
        for event in events:
            if isinstance(event, h2.events.DataReceived) and event.stream_id not in self.streams:
                self.drop(event)
            else:
                await super()._handle_events([event])
        await self._flush()

    def drop(self, event: h2.events.DataReceived) -> None:
        """Acknowledge the frame's bytes; reset its stream if the client may send more."""
        stream_id = event.stream_id
        assert stream_id is not None  # DATA always names its stream
        self.connection.acknowledge_received_data(event.flow_controlled_length, stream_id)
        stream = self.connection.streams.get(stream_id)
        if stream is not None and not stream.closed:
            self.connection.reset_stream(stream_id, ErrorCodes.NO_ERROR)


def install() -> None:
    """Have hypercorn make its HTTP/2 connections as :class:`MendedH2Protocol`."""
    # The name hypercorn's ProtocolWrapper makes every HTTP/2 connection by.
    hypercorn.protocol.H2Protocol = MendedH2Protocol  # type: ignore[attr-defined]
