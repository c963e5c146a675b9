"""Clients that see the connection itself: HTTP/1.1 on h11, HTTP/2 on h2.

httpx hides what these tests are about: when the *server* ends a
connection. These speak over a bare Trio socket, so a test can read to the
end of the stream and see whether the server closed it. Every read is one
``receive_some``; the tests bound them with ``trio.fail_after``, so a server
that leaves the connection open fails by hanging-timeout, never by a clock.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import h2.config
import h2.connection
import h2.events
import h11
import trio

from tests.e2e.harness import headers


def wire_headers(message: dict[str, Any], **extra: str) -> list[tuple[str, str]]:
    """A correct client's headers for ``message`` with a loopback Host."""
    return [("host", "localhost"), *headers(message, **extra).items()]


@attrs.frozen
class Answer:
    """One response as read off the wire."""

    status: int
    headers: dict[bytes, bytes]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@attrs.define(eq=False)
class H11Client:
    """One HTTP/1.1 connection; requests go one after another on it."""

    stream: trio.SocketStream
    connection: h11.Connection = attrs.field(factory=lambda: h11.Connection(h11.CLIENT))

    @classmethod
    async def connect(cls, port: int) -> H11Client:
        return cls(await trio.open_tcp_stream("127.0.0.1", port))

    async def send(self, event: Any) -> None:
        data = self.connection.send(event)
        if data:
            await self.stream.send_all(data)

    async def next_event(self) -> Any:
        while True:
            event = self.connection.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.connection.receive_data(await self.stream.receive_some(65536))

    async def post(self, body: bytes, sent: list[tuple[str, str]]) -> Answer:
        """POST one request to ``/mcp`` and read its response to the end of the message."""
        return await self.request("POST", "/mcp", sent, body)

    async def request(
        self, method: str, target: str, sent: list[tuple[str, str]], body: bytes = b""
    ) -> Answer:
        """Send one request and read its response to the end of the message."""
        length = ("content-length", str(len(body)))
        await self.send(h11.Request(method=method, target=target, headers=[*sent, length]))
        if body:
            await self.send(h11.Data(data=body))
        await self.send(h11.EndOfMessage())
        response = await self.next_event()
        assert isinstance(response, h11.Response)
        chunks = []
        while not isinstance(event := await self.next_event(), h11.EndOfMessage):
            chunks.append(event.data)
        answer = Answer(response.status_code, dict(response.headers), b"".join(chunks))
        if self.connection.our_state is h11.DONE and self.connection.their_state is h11.DONE:
            self.connection.start_next_cycle()
        return answer

    async def closed_by_server(self) -> bool:
        """Read to the end of the stream: True when it ends without another byte."""
        return await self.stream.receive_some(65536) == b""

    async def aclose(self) -> None:
        await self.stream.aclose()


@attrs.define(eq=False)
class H2Run:
    """What one HTTP/2 connection carried before it ended."""

    #: The JSON-RPC responses of the streams that completed, by stream id.
    answers: dict[int, Any] = attrs.field(factory=dict)
    #: The streams sent that the server never answered.
    unanswered: list[int] = attrs.field(factory=list)
    #: The last stream the server's GOAWAY says it took, if it sent one.
    goaway_last_stream: int | None = None


async def h2_requests(
    port: int, bodies: list[bytes], sent: list[tuple[str, str]], *, in_flight: int
) -> H2Run:
    """Send ``bodies`` on one h2c connection (prior knowledge), ``in_flight`` at a time.

    Returns when the server has closed the connection, or when every body
    is answered and the client closes it. After a GOAWAY nothing more is
    sent and the read goes on to the end of the stream.
    """
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    run = H2Run()
    pending = list(bodies)
    open_streams: dict[int, bytearray] = {}
    request_headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "localhost"),
        (":path", "/mcp"),
        *[(name, value) for name, value in sent if name != "host"],
    ]
    async with stream:
        while True:
            while pending and run.goaway_last_stream is None and len(open_streams) < in_flight:
                stream_id = connection.get_next_available_stream_id()
                body = pending.pop(0)
                connection.send_headers(
                    stream_id, [*request_headers, ("content-length", str(len(body)))]
                )
                connection.send_data(stream_id, body, end_stream=True)
                open_streams[stream_id] = bytearray()
            await stream.send_all(connection.data_to_send())
            if not pending and not open_streams:
                return run
            data = await stream.receive_some(65536)
            if not data:
                run.unanswered = sorted(open_streams)
                return run
            for event in connection.receive_data(data):
                if isinstance(event, h2.events.DataReceived):
                    open_streams[event.stream_id] += event.data
                    connection.acknowledge_received_data(
                        event.flow_controlled_length, event.stream_id
                    )
                elif isinstance(event, h2.events.StreamEnded):
                    run.answers[event.stream_id] = json.loads(open_streams.pop(event.stream_id))
                elif isinstance(event, h2.events.StreamReset):
                    open_streams.pop(event.stream_id, None)
                    run.unanswered.append(event.stream_id)
                elif isinstance(event, h2.events.ConnectionTerminated):
                    run.goaway_last_stream = event.last_stream_id


@attrs.define(eq=False)
class H2Client:
    """One h2c connection (prior knowledge) whose streams a test drives frame by frame."""

    stream: trio.SocketStream
    connection: h2.connection.H2Connection
    #: Per stream: the response head's status, its body so far, whether it ended.
    statuses: dict[int, int] = attrs.field(factory=dict)
    bodies: dict[int, bytearray] = attrs.field(factory=dict)
    ended: set[int] = attrs.field(factory=set)
    #: The streams the server reset, with its error code.
    reset: dict[int, int] = attrs.field(factory=dict)

    @classmethod
    async def connect(cls, port: int) -> H2Client:
        connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        connection.initiate_connection()
        client = cls(await trio.open_tcp_stream("127.0.0.1", port), connection)
        await client.flush()
        return client

    async def flush(self) -> None:
        await self.stream.send_all(self.connection.data_to_send())

    async def open(self, message: dict[str, Any], path: str = "/mcp", **extra: str) -> int:
        """Send ``message``'s head alone (no ``content-length``) to ``path``; the new
        stream's id."""
        stream_id: int = self.connection.get_next_available_stream_id()
        sent = [(name, value) for name, value in wire_headers(message, **extra) if name != "host"]
        pseudo = [(":method", "POST"), (":scheme", "http"), (":authority", "localhost")]
        self.connection.send_headers(stream_id, [*pseudo, (":path", path), *sent])
        await self.flush()
        return stream_id

    async def send_body(self, stream_id: int, body: bytes, *, end: bool) -> None:
        self.connection.send_data(stream_id, body, end_stream=end)
        await self.flush()

    async def post(self, message: dict[str, Any], path: str = "/mcp", **extra: str) -> int:
        """Send ``message`` whole on a new stream to ``path``; its id."""
        stream_id = await self.open(message, path, **extra)
        await self.send_body(stream_id, json.dumps(message).encode(), end=True)
        return stream_id

    async def read(self) -> bool:
        """Read once and take in what came; False once the server closed the connection."""
        data = await self.stream.receive_some(65536)
        if not data:
            return False
        for event in self.connection.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                self.statuses[event.stream_id] = int(dict(event.headers)[b":status"])
            elif isinstance(event, h2.events.DataReceived):
                self.bodies.setdefault(event.stream_id, bytearray()).extend(event.data)
                self.connection.acknowledge_received_data(
                    event.flow_controlled_length, event.stream_id
                )
            elif isinstance(event, h2.events.StreamEnded):
                self.ended.add(event.stream_id)
            elif isinstance(event, h2.events.StreamReset):
                self.reset[event.stream_id] = event.error_code
        await self.flush()
        return True

    async def answer(self, stream_id: int) -> Answer:
        """Read until ``stream_id``'s response has ended; that response."""
        while stream_id not in self.ended:
            assert await self.read(), "the server closed the connection"
        return Answer(self.statuses[stream_id], {}, bytes(self.bodies.get(stream_id, b"")))

    async def aclose(self) -> None:
        await self.stream.aclose()
