"""HTTP/2 DATA for a stream whose response is complete: dropped, never a crash.

A server may send its complete response before the client has sent its
whole request, and may then reset the stream with ``NO_ERROR`` so the
client stops sending (RFC 9113 §8.1). presa answers early whenever it can:
a body over ``--max-body`` is 413 at its ``content-length`` or at the frame
that goes past it, a wrong ``Content-Type`` or ``Accept`` is answered from
the head alone. The client's DATA frames already on their way still come.

hypercorn 0.18 forgets a stream as soon as its response is complete, and
looks the stream up for every DATA frame it receives: a frame that comes
later raised ``KeyError`` from the connection's task, and on hypercorn's
Trio worker that ends the server's nursery, so one client stopped the
whole process. The same lookup failed for a stream hypercorn itself reset
during a shutdown, when its DATA came in the same read as its head.

:func:`install` has hypercorn run every HTTP/2 connection (prior
knowledge and upgrade alike) as :class:`FinishedStreamsProtocol`, which
drops such a frame: its bytes are acknowledged, so the connection's flow
control window does not shrink for good, and a stream still open on the
client's side is reset with ``NO_ERROR``, once.
"""

from __future__ import annotations

import h2.events
import hypercorn.protocol
from h2.errors import ErrorCodes
from hypercorn.protocol.h2 import H2Protocol


class FinishedStreamsProtocol(H2Protocol):
    """hypercorn's HTTP/2 protocol, but DATA for a stream it has let go of is dropped."""

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
    """Have hypercorn make its HTTP/2 connections as :class:`FinishedStreamsProtocol`."""
    # The name hypercorn's ProtocolWrapper makes every HTTP/2 connection by.
    hypercorn.protocol.H2Protocol = FinishedStreamsProtocol  # type: ignore[attr-defined]
