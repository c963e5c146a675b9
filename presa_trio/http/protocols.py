"""hypercorn's HTTP/1.1 and HTTP/2 protocols, mended where a client's timing or input broke them.

:func:`install` has hypercorn run every connection with these protocols
(HTTP/2 by prior knowledge and by upgrade alike), and every request to open
a WebSocket with :class:`MendedWSStream`.

**HTTP/1.1, bytes after a request answered with ``close``.** A client may
send its next request before the response to the last has come (RFC 9112
§9.3). presa answers some requests from their head alone, before their body
is read (a GET is 405, a body not JSON 415, …), with ``Connection: close``,
after which the server processes no further request and closes the
connection once the response is sent (RFC 9112 §9.6). hypercorn went on
reading while the response was written: bytes after the refused request
were an error to its parser, on which it closed the connection at once,
between the response's head and its body. The client got a head and no
body, and the log a traceback (the app's write ran into the close).
:class:`MendedH11Protocol` parses nothing past such a request until the
response is sent; the connection then closes, the bytes unprocessed.

**HTTP/1.1, a request framed twice.** A request with both
``Transfer-Encoding`` and ``Content-Length`` may be an attempt at request
smuggling: a server MAY reject it or read it by its Transfer-Encoding
alone, and either way MUST close the connection after responding (RFC 9112
§6.1, §6.3, §11.2). h11 read it by its Transfer-Encoding and kept the
connection for the next request; :class:`CloseAwareConnection` now ends it
after the response, which says ``Connection: close``.

**HTTP/1.1, an upgrade to h2c whose settings cannot be applied.** A client may
ask to switch a connection to HTTP/2 with ``Upgrade: h2c`` and its HTTP/2
settings in the one ``HTTP2-Settings`` header (RFC 7540 §3.2, §3.2.1; RFC
9113 §3.1 deprecates the upgrade, and a server may ignore it). hypercorn
switched on any such request without a body: it sent ``101 Switching
Protocols`` and then had h2 apply the settings, and a value h2 could not
read (not base64url, a setting out of range, a length not a multiple of six)
raised from the connection's task, which on hypercorn's Trio worker ends the
server's nursery: one request stopped the whole process.
:class:`MendedH11Protocol` takes the upgrade only when there is exactly one
``HTTP2-Settings`` and h2 applies it (a server MUST NOT upgrade without
exactly one, RFC 7540 §3.2.1); any other such request is answered over
HTTP/1.1, as a request that asked for no upgrade.

**HTTP/2.** hypercorn 0.18 keeps, per stream, the stream itself (until its
response is complete) and a buffer of the response's bytes (until they are
written). These moments of an HTTP/2 connection found it wanting:

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
  stream still open on the client's side is reset with ``NO_ERROR``, once,
  but only after the response has ended (its ``END_STREAM`` sent): the
  app's part in a stream ends when its last bytes are handed over, before
  they are written, and a reset then would cut the response short (the
  client got the head and the body of a 413, and no end).
- **A request whose method or target is no ASCII string.** hypercorn reads
  ``:method`` and ``:path`` as ASCII. A ``:path`` with a byte past ASCII
  (no URI has one, RFC 3986 §2) raised ``UnicodeDecodeError``, and a CONNECT,
  which has no ``:path`` (RFC 9113 §8.5), ``UnboundLocalError``, from the
  connection's task: again the whole server ended. Such a request is now
  answered 400 with no body, as h11 answers a request line it cannot read
  over HTTP/1.1 (and as :mod:`presa_trio.http.target` answers a CONNECT), and
  is never handed to the app (RFC 9113 §8.1.1: a server MAY answer a
  malformed request before it resets the stream).
- **The connection lost mid-response.** The app's last ``send`` waits until
  the response's buffer is written out. When the connection ended first,
  hypercorn stopped writing and left the buffers as they were, so that
  ``send`` never returned: the request, its nursery and its connection's
  tasks stayed until the shutdown grace ran out (the app does not cancel its
  last ``send``: :func:`presa_trio.http.exchange.watch_disconnect`). Every
  buffer is now closed with the connection, which ends those waits.
- **A stream reset while its response waits for flow control.** The app's
  last ``send`` also waits while the client's flow-control window holds the
  response's last bytes back (RFC 9113 §5.2). When the client then reset
  the stream, hypercorn forgot the stream but kept its buffer, which nothing
  would write any more: that ``send`` waited, and the request stayed in
  flight, for as long as the client kept the connection open. A reset
  stream's buffer is now closed, which ends that wait.
- **Priority signals.** RFC 9113 §5.3.2 deprecates the priority signals of
  RFC 7540 (the PRIORITY frame, a HEADERS frame's priority), which were only
  ever input to a server's choices (RFC 7540 §5.3). hypercorn kept a node of
  its priority tree for every stream a signal named, opened or not, and let
  go of none that never opened; the tree holds at most 1000, and the next
  raised from the connection's task: a client's thousand PRIORITY frames
  ended the whole server. The signals are now ignored (h2 still checks each
  frame), and every stream has the same weight.

**An HTTP/2 connection with no request under way is idle.** A connection
idle for ``keep_alive`` seconds is closed (:func:`~presa_trio.http.serving.serve_http`).
hypercorn marks a connection busy as it reads a request, and idle again when
a stream ends. Over HTTP/2 with prior knowledge it read the connection
preface (``PRI * HTTP/2.0``) as a request, so a connection that then sent
none, or only requests answered without a stream (a request it cannot read,
answered 400 above), was never idle again: it stayed open for as long as
the client kept it, however long the keep-alive. Such a connection now
begins idle, and such a refusal leaves it as it was.

**A request to open a WebSocket, with bytes after its head.** presa serves
no WebSocket: the app answers such a request as the plain request it also
is (:mod:`presa_trio.http.websocket`), and accepts none. hypercorn's
WebSocket stream answered 400 itself to any byte that came before a
WebSocket was accepted, whether or not the app had begun its own answer:
over HTTP/1.1 (a handshake with a body, or a request pipelined after it,
sent in one write) the second response raised from the connection's task
and ended the whole server; over HTTP/2 (an extended CONNECT with DATA) it
went out as trailers, after a head that promised a body.
:class:`MendedWSStream` drops those bytes, and the app alone answers.
"""

from __future__ import annotations

import base64
from typing import Any

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h11
import hypercorn.protocol
from h2.errors import ErrorCodes
from h2.stream import StreamState
from hypercorn.events import Closed, Event, Updated
from hypercorn.protocol.events import Body, Data
from hypercorn.protocol.events import Event as StreamEvent
from hypercorn.protocol.h2 import H2Protocol
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.protocol.ws_stream import WSStream

#: The server's states while it writes a response.
WRITING = (h11.SEND_RESPONSE, h11.SEND_BODY)


class CloseAwareConnection(h11.Connection):
    """h11's server side, which parses nothing past a request the response closes on,
    and closes on a request framed twice."""

    def next_event(self) -> Any:
        """``PAUSED`` while a response that ends the connection is being sent, if the
        client has sent more: what it sent will not be processed (RFC 9112 §9.6).

        With nothing more sent, the parser goes on as before: the end of the
        client's stream is read, and is the request's cancellation.
        """
        if (
            self.their_state is h11.MUST_CLOSE
            and self.our_state in WRITING
            and self.trailing_data[0]
        ):
            return h11.PAUSED
        event = super().next_event()
        if isinstance(event, h11.Request) and framed_twice(event):
            self._cstate.process_keep_alive_disabled()  # h11's own way to close after it
        return event


def framed_twice(request: h11.Request) -> bool:
    """Whether ``request`` has both ``Transfer-Encoding`` and ``Content-Length``."""
    names = {name for name, _ in request.headers}
    return b"transfer-encoding" in names and b"content-length" in names


def h2c_settings_usable(request: h11.Request) -> bool:
    """Whether ``request`` carries exactly one ``HTTP2-Settings``, one h2 can apply: the
    base64url of a SETTINGS payload (six bytes a setting), each value in range
    (RFC 7540 §3.2.1, §6.5.1, §6.5.2)."""
    values = [value for name, value in request.headers if name == b"http2-settings"]
    if len(values) != 1:
        return False
    try:
        if len(base64.urlsafe_b64decode(values[0])) % 6:
            return False
        trial = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
        trial.initiate_upgrade_connection(values[0])
    except (ValueError, h2.exceptions.H2Error):  # binascii.Error is a ValueError
        return False
    return True


def asks_for_h2c(request: h11.Request) -> bool:
    """Whether ``request`` asks to upgrade to h2c, read as hypercorn reads it: as Latin-1
    text, stripped of what Python counts as whitespace (NO-BREAK SPACE too)."""
    return any(
        name == b"upgrade" and value.decode("latin-1").strip().lower() == "h2c"
        for name, value in request.headers
    )


class MendedH11Protocol(H11Protocol):
    """hypercorn's HTTP/1.1 protocol, on a :class:`CloseAwareConnection`, which upgrades
    to h2c only with settings it can apply."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.connection = CloseAwareConnection(
            h11.SERVER, max_incomplete_event_size=self.config.h11_max_incomplete_size
        )

    async def _check_protocol(self, event: h11.Request) -> None:
        if asks_for_h2c(event) and not h2c_settings_usable(event):
            return  # served over HTTP/1.1: see the module's docstring
        await super()._check_protocol(event)


def readable_request_line(headers: list[Any]) -> bool:
    """Whether an HTTP/2 request has a ``:method`` and a ``:path`` hypercorn can read:
    both present, and ASCII (the headers' names and values are bytes: hypercorn
    has h2 decode none)."""
    method = path = None
    for name, value in headers:
        if name == b":method":
            method = value
        elif name == b":path":
            path = value
    return method is not None and path is not None and method.isascii() and path.isascii()


class MendedH2Protocol(H2Protocol):
    """hypercorn's HTTP/2 protocol; see the module's docstring for what differs."""

    async def initiate(
        self, headers: list[tuple[bytes, bytes]] | None = None, settings: bytes | None = None
    ) -> None:
        """Begin the connection; one begun with no request yet is idle (see the module)."""
        await super().initiate(headers, settings)
        if headers is None:
            await self.send(Updated(idle=True))

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
            elif isinstance(event, h2.events.RequestReceived) and not readable_request_line(
                event.headers or []
            ):
                self.refuse(event)  # no stream, so the connection stays idle
            else:
                if isinstance(event, h2.events.StreamReset):
                    await self.let_go(event.stream_id)
                await super()._handle_events([event])
        await self._flush()

    async def let_go(self, stream_id: int | None) -> None:
        """Drop the unwritten bytes of a stream the client reset: it takes no more of
        them, and the response's last send, waiting for them to be written, returns."""
        buffer = self.stream_buffers.get(stream_id) if stream_id is not None else None
        if buffer is not None:
            await buffer.close()

    def refuse(self, request: h2.events.RequestReceived) -> None:
        """Answer 400, with no body, a request hypercorn cannot read; it makes no stream.

        hypercorn would mark the connection busy on it, and only a stream's end
        marks it idle again: a request that makes no stream leaves the connection
        as it was, so its keep-alive still closes it once idle.
        """
        stream_id = request.stream_id
        assert stream_id is not None  # a request always names its stream
        refusal = [(b":status", b"400"), (b"content-length", b"0")]
        self.connection.send_headers(
            stream_id, [*refusal, *self.config.response_headers("h2")], end_stream=True
        )

    async def _priority_updated(self, event: h2.events.PriorityUpdated) -> None:
        """Ignore the signal: see the module's docstring."""

    def drop(self, event: h2.events.DataReceived) -> None:
        """Acknowledge the frame's bytes; reset its stream if its response has ended and
        the client may send more."""
        stream_id = event.stream_id
        assert stream_id is not None  # DATA always names its stream
        self.connection.acknowledge_received_data(event.flow_controlled_length, stream_id)
        stream = self.connection.streams.get(stream_id)
        if stream is not None and stream.state_machine.state is StreamState.HALF_CLOSED_LOCAL:
            self.connection.reset_stream(stream_id, ErrorCodes.NO_ERROR)


class MendedWSStream(WSStream):
    """hypercorn's WebSocket stream, which drops the bytes that come before a WebSocket
    is accepted, and leaves the answer to the app (see the module's docstring)."""

    async def handle(self, event: StreamEvent) -> None:
        if isinstance(event, (Body, Data)) and not self.handshake.accepted:
            return
        await super().handle(event)


def install() -> None:
    """Have hypercorn make its connections as :class:`MendedH11Protocol` and
    :class:`MendedH2Protocol`, and its WebSocket streams as :class:`MendedWSStream`."""
    # The names hypercorn's ProtocolWrapper makes every connection by.
    hypercorn.protocol.H11Protocol = MendedH11Protocol  # type: ignore[attr-defined]
    hypercorn.protocol.H2Protocol = MendedH2Protocol  # type: ignore[attr-defined]
    # The names hypercorn's protocols make every WebSocket stream by.
    hypercorn.protocol.h11.WSStream = MendedWSStream  # type: ignore[attr-defined]
    hypercorn.protocol.h2.WSStream = MendedWSStream  # type: ignore[attr-defined]
