"""The HTTP/2 load client: one h2c connection (prior knowledge), many streams at once.

hypercorn serves HTTP/2 in clear text to a client that opens with the
HTTP/2 preface (RFC 9113 §3.3, "prior knowledge"), so no TLS and no upgrade
is needed. This client speaks it with the ``h2`` package (the state machine
hypercorn itself uses) on an asyncio ``Protocol``, like the HTTP/1.1 client
in :mod:`bench.load`, and is closed-loop the same way: concurrency is the
number of streams kept open on the one connection, each sending its next
request when its response has ended.

Request bodies are tiny; response bodies (5 KB for ``tools/list``) are
acknowledged as they arrive, so flow control never stalls a stream.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import h2.config
import h2.connection
import h2.events

from bench.load import ClientProtocol, Clients, Response


class H2Connection(ClientProtocol):
    """One h2c connection; any number of requests in flight, one per stream."""

    def __init__(self) -> None:
        super().__init__()
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding=None)
        )
        # Per open stream: its response status, body so far, and who waits for it.
        self.status: dict[int, int] = {}
        self.bodies: dict[int, bytearray] = {}
        self.waiters: dict[int, asyncio.Future[Response]] = {}
        # Set by the server's GOAWAY: no new stream may start here.
        self.going_away = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.h2.initiate_connection()
        self.flush()

    def flush(self) -> None:
        assert self.transport is not None
        data = self.h2.data_to_send()
        if data:
            self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        for event in self.h2.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                for name, value in event.headers:
                    if name == b":status":
                        self.status[event.stream_id] = int(value)
            elif isinstance(event, h2.events.DataReceived):
                self.bodies.setdefault(event.stream_id, bytearray()).extend(event.data)
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self.complete(event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                self.fail(event.stream_id, ConnectionError(f"stream reset: {event.error_code}"))
            elif isinstance(event, h2.events.ConnectionTerminated):
                # hypercorn ends a connection after keep_alive_max_requests
                # with GOAWAY, and drops the streams still in flight without
                # an answer (even those its GOAWAY says it will process): they
                # fail now, to be sent again on a new connection, rather than
                # wait for the connection's idle timeout to close it.
                self.going_away = True
                for stream_id in list(self.waiters):
                    self.fail(stream_id, ConnectionError("stream dropped by GOAWAY"))
                if self.transport is not None:
                    self.transport.close()
        self.flush()

    def complete(self, stream_id: int) -> None:
        waiter = self.waiters.pop(stream_id, None)
        body = bytes(self.bodies.pop(stream_id, b""))
        status = self.status.pop(stream_id, 0)
        if waiter is not None and not waiter.done():
            waiter.set_result(Response(status, {}, body))

    def fail(self, stream_id: int, error: Exception) -> None:
        waiter = self.waiters.pop(stream_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def connection_lost(self, exc: Exception | None) -> None:
        for stream_id in list(self.waiters):
            self.fail(stream_id, ConnectionError("server closed the connection"))
        super().connection_lost(exc)

    async def roundtrip(self, headers: Sequence[tuple[bytes, bytes]], body: bytes) -> Response:
        """Send one request on a new stream and wait for its whole response."""
        stream_id = self.h2.get_next_available_stream_id()
        waiter: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self.waiters[stream_id] = waiter
        self.h2.send_headers(stream_id, list(headers))
        self.h2.send_data(stream_id, body, end_stream=True)
        self.flush()
        return await waiter

    async def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.h2.close_connection()
            self.flush()
            self.transport.close()
        await self.closed


#: How many times a request dropped with its connection is sent again. Once
#: was not always enough: at 32 streams, a resent request has been dropped
#: again, and one failure ends the whole run.
RESENDS = 3


async def streams(
    host: str, port: int, request: tuple[Sequence[tuple[bytes, bytes]], bytes], concurrency: int
) -> Clients:
    """One connection and ``concurrency`` senders on it, each one stream at a time.

    Driven by :func:`bench.load.closed_loop`, the same loop as HTTP/1.1. When
    the server ends the connection (hypercorn sends GOAWAY after
    ``keep_alive_max_requests``, as it closes an HTTP/1.1 connection), the
    next request opens a new one, and a request the old one dropped is sent
    again there, as an HTTP/2 client does.
    """
    opened = [await H2Connection.open(host, port)]
    headers, body = request
    reopening = asyncio.Lock()

    async def current() -> H2Connection:
        async with reopening:
            if opened[-1].going_away or opened[-1].closed.done():
                opened.append(await H2Connection.open(host, port))
            return opened[-1]

    async def roundtrip() -> Response:
        for _ in range(RESENDS):
            try:
                return await (await current()).roundtrip(headers, body)
            except ConnectionError:
                pass  # dropped unanswered: never processed, so safe to send again
        return await (await current()).roundtrip(headers, body)

    async def close() -> None:
        await asyncio.gather(*(connection.close() for connection in opened))

    return Clients([roundtrip] * concurrency, close)
