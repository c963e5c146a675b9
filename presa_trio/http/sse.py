"""Writing one response: plain JSON, or a Server-Sent Events stream.

A request is answered by ``application/json`` when its handler sends nothing
before the result, and by ``text/event-stream`` when it sends notifications
first (progress, logs, a listen stream): the notifications, then exactly one
response, then the end. The choice is made at the first message, so a quiet
handler costs no stream. Quiet streams get a ``: ping`` comment now and then,
and so does a long-lived request (a listen, a task stream) that has sent
nothing yet, whose stream opens then.
A plain JSON body is known whole, so it goes out with ``Content-Length``
(never chunked); only an event stream has no length. The events' bytes are
written by :mod:`presa_trio.wire.sse`, the one place of the SSE format.

Spec: 2026-07-28 basic/transports/streamable-http §Receiving Messages;
RFC 9110 §8.6 (Content-Length).
"""

from __future__ import annotations

import enum
import logging

import attrs
import trio
from hypercorn.typing import ASGISendCallable

from presa_trio.wire.sse import encode_comment, encode_event

log = logging.getLogger(__name__)

#: Seconds of silence on a stream before a ``: ping`` comment is sent.
PING_INTERVAL_S = 15.0

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
#: The keep-alive comment.
PING = encode_comment("ping")


async def send_whole(
    send: ASGISendCallable,
    status: int,
    body: bytes,
    content_type: bytes | None,
    extra_headers: list[tuple[bytes, bytes]] | tuple[()] = (),
) -> None:
    """A response whose body is known whole: one body message, with its length.

    ``content_type`` is ``None`` only for a response with no body: there is
    no content to type (RFC 9110 §8.3).
    """
    typed = [] if content_type is None else [(b"content-type", content_type)]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*typed, (b"content-length", b"%d" % len(body)), *extra_headers],
            "trailers": False,
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def send_json(send: ASGISendCallable, status: int, body: bytes) -> None:
    """A plain ``application/json`` response."""
    await send_whole(send, status, body, b"application/json")


async def send_accepted(send: ASGISendCallable) -> None:
    """202 Accepted, with no body and so no content type.

    Spec: streamable-http §Sending Messages item 5 (an accepted notification).
    """
    await send_whole(send, 202, b"", None)


class ResponseState(enum.Enum):
    """Where a :class:`ResponseWriter` is in its one response."""

    #: Nothing sent yet: finishing now answers with plain JSON.
    QUIET = enum.auto()
    #: The event stream is open: notifications, pings, then the response event.
    STREAMING = enum.auto()
    #: The last byte is handed to the server; nothing more is written.
    COMPLETE = enum.auto()


@attrs.define(eq=False)
class ResponseWriter:
    """Writes one response as the handler produces it, from the handler's own task.

    The first notification opens the event stream and starts the keep-alive
    in ``nursery``, the exchange's own (:mod:`presa_trio.http.exchange`),
    which stops it when the exchange ends; :meth:`finish` writes the
    response, as the JSON body when nothing came before it, else as the
    stream's last event. A quiet handler therefore costs no stream and no
    keep-alive, except a long-lived request's (a listen, a task stream): its
    keep-alive runs from :meth:`start`, and opens the stream once it has been
    quiet for an interval, since its result may be hours away. :meth:`close`
    ends the writer's part in the exchange, however it ended: nothing more is
    written.

    The state turns :attr:`~ResponseState.COMPLETE` *before* the last write
    is handed to the server: from then on the exchange is over for the app,
    and a disconnect the server reports while it closes the stream is not a
    reason to cancel anything (see :func:`presa_trio.http.exchange.watch_disconnect`).
    """

    send: ASGISendCallable
    # The exchange's nursery, where the keep-alive runs until the exchange ends.
    nursery: trio.Nursery
    # A request that answers only when its stream ends (a listen, a task stream):
    # kept alive from the start, so one with nothing to send yet opens its stream
    # with a ping once the interval has passed (see :meth:`keep_alive`).
    long_lived: bool = False
    state: ResponseState = ResponseState.QUIET
    # Serializes stream writes, the handler's and the keep-alive's; made
    # when the stream opens, since a quiet handler has nothing to serialize.
    lock: trio.Lock | None = None
    # Trio time of the last write on the stream: the keep-alive measures silence from it.
    last_write: float = 0.0

    def start(self) -> None:
        """Begin the response: a long-lived request's keep-alive runs from now on."""
        self.last_write = trio.current_time()
        if self.long_lived:
            self.nursery.start_soon(self.keep_alive)

    async def open(self) -> None:
        """Open the event stream, unless it is open or the response is complete.

        The head is written under the lock, so no event overtakes it. A
        caller already cancelled (a handler whose own timeout passed before
        its first notification) gets its cancel before anything changes: the
        response stays quiet, and its result goes out as plain JSON. From
        there the head is handed to the server with no schedule point in
        between (the new lock is taken at once), so no cancel can leave a
        stream marked open whose head was never written.
        """
        if self.state is not ResponseState.QUIET:
            return
        # A cancel raised here, with no schedule point (trio has no public spelling of it).
        await trio.lowlevel.checkpoint_if_cancelled()
        self.state = ResponseState.STREAMING
        self.lock = lock = trio.Lock()
        lock.acquire_nowait()  # new, so free: taken without a schedule point
        try:
            await self.send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": SSE_HEADERS,
                    "trailers": False,
                }
            )
            self.last_write = trio.current_time()
        finally:
            lock.release()
        if not self.long_lived:
            self.nursery.start_soon(self.keep_alive)

    async def notify(self, data: bytes) -> None:
        """Send one message (compact JSON) as an event, opening the stream first if needed."""
        await self.open()
        await self.write(encode_event(data, event="message"), more_body=True)

    async def finish(
        self, data: bytes, status: int = 200, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        """Send the response; ``status`` and ``headers`` apply only to plain JSON."""
        if self.state is ResponseState.QUIET:
            self.state = ResponseState.COMPLETE
            await send_whole(self.send, status, data, b"application/json", headers or ())
        else:
            await self.write(encode_event(data, event="message"), more_body=False)

    async def write(self, body: bytes, *, more_body: bool) -> None:
        """One write on the open stream; the last one (``more_body=False``) completes it."""
        if self.lock is None:  # the stream never opened
            return
        async with self.lock:
            if self.state is not ResponseState.STREAMING:
                return
            if not more_body:
                self.state = ResponseState.COMPLETE
            self.last_write = trio.current_time()
            await self.send({"type": "http.response.body", "body": body, "more_body": more_body})

    def close(self) -> None:
        """The exchange is over: nothing more is written."""
        self.state = ResponseState.COMPLETE

    async def keep_alive(self) -> None:
        """A ``: ping`` comment after each ``PING_INTERVAL_S`` of silence, until the response
        is complete.

        Started when the stream opens, or, for a long-lived request, when the
        response begins: one that has sent nothing for an interval opens its
        stream then, so a client and the proxies between see its headers and
        pings, not a request that hangs (streamable-http §Receiving Messages:
        long-lived streams are kept alive with comments in quiet periods).
        A per-request helper, in the exchange's nursery, which ends it with
        the exchange. If a ping cannot be written, it is logged and the
        keep-alive stops, and nothing else: the stream's own next write ends
        its request, and no other request or task is touched.
        """
        try:
            while self.state is not ResponseState.COMPLETE:
                await trio.sleep_until(self.last_write + PING_INTERVAL_S)
                if trio.current_time() >= self.last_write + PING_INTERVAL_S:
                    await self.open()
                    await self.write(PING, more_body=True)
        except Exception:
            log.exception("an event stream's keep-alive failed; it stops")
