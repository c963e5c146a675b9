"""The load client: HTTP/1.1 keep-alive connections on asyncio protocols.

Why this client and not wrk or a Trio client: the servers under test are
Trio programs, and Trio's socket streams cost tens of microseconds a
round trip in Python; an asyncio ``Protocol`` gets its bytes in a callback,
with no stream object between, so the client spends well under half of what
the servers spend per request (``run.py`` measures the client's ceiling
against a raw-socket responder in the same run and prints it). wrk is faster
still but is not on every machine, and its Lua hooks would be needed for the
task figures anyway; one client for everything keeps the numbers comparable.

The load is closed-loop: each connection sends its next request when the
previous response has arrived, so concurrency is the number of connections.
Only responses that complete inside the measured window count.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Self

import attrs


@attrs.frozen
class Response:
    """One parsed HTTP/1.1 response."""

    status: int
    headers: dict[bytes, bytes]
    body: bytes


class HttpError(Exception):
    """The server answered with something this client cannot read."""


def parse_response(buffer: bytearray) -> tuple[Response, int] | None:
    """The first complete response in ``buffer`` and its length, else ``None``.

    Handles ``Content-Length`` and ``chunked`` bodies (hypercorn sends chunked
    when the application gives no length).
    """
    head_end = buffer.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    lines = bytes(buffer[:head_end]).split(b"\r\n")
    try:
        status = int(lines[0].split(b" ", 2)[1])
    except (IndexError, ValueError) as exc:
        raise HttpError(f"bad status line {lines[0]!r}") from exc
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    position = head_end + 4
    if b"content-length" in headers:
        end = position + int(headers[b"content-length"])
        if len(buffer) < end:
            return None
        return Response(status, headers, bytes(buffer[position:end])), end
    if b"chunked" not in headers.get(b"transfer-encoding", b"").lower():
        return Response(status, headers, b""), position
    chunks: list[bytes] = []
    while True:
        line_end = buffer.find(b"\r\n", position)
        if line_end < 0:
            return None
        size = int(bytes(buffer[position:line_end]).split(b";", 1)[0], 16)
        start = line_end + 2
        if size == 0:
            if buffer[start : start + 2] == b"\r\n":
                return Response(status, headers, b"".join(chunks)), start + 2
            trailers_end = buffer.find(b"\r\n\r\n", line_end)
            if trailers_end < 0:
                return None
            return Response(status, headers, b"".join(chunks)), trailers_end + 4
        if len(buffer) < start + size + 2:
            return None
        chunks.append(bytes(buffer[start : start + size]))
        position = start + size + 2


class ClientProtocol(asyncio.Protocol):
    """A client connection on an asyncio protocol: opened, and closed once the server let go."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @classmethod
    async def open(cls, host: str, port: int) -> Self:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_connection(cls, host, port)
        return protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class Connection(ClientProtocol):
    """One keep-alive connection; one request in flight at a time."""

    def __init__(self) -> None:
        super().__init__()
        self.buffer = bytearray()
        self.waiter: asyncio.Future[Response] | None = None
        # False once the server said ``Connection: close`` (hypercorn does so
        # after ``keep_alive_max_requests``, 1000 by default) or closed.
        self.reusable = True

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.waiter is None or self.waiter.done():
            return
        try:
            parsed = parse_response(self.buffer)
        except HttpError as error:
            self.waiter.set_exception(error)
            return
        if parsed is not None:
            response, used = parsed
            del self.buffer[:used]
            if response.headers.get(b"connection", b"").lower() == b"close":
                self.reusable = False
            self.waiter.set_result(response)

    def connection_lost(self, exc: Exception | None) -> None:
        self.reusable = False
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("server closed the connection"))
        super().connection_lost(exc)

    async def roundtrip(self, request: bytes) -> Response:
        """Send one serialized request and wait for its whole response."""
        assert self.transport is not None
        if not self.reusable or self.transport.is_closing():
            raise ConnectionError("connection is closed")
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self.waiter

    async def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
            await self.closed


class Pool:
    """Keep-alive connections handed out one request at a time."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.idle: list[Connection] = []
        self.all: list[Connection] = []

    async def roundtrip(self, request: bytes) -> Response:
        connection = self.idle.pop() if self.idle else None
        if connection is None or not connection.reusable:
            connection = await Connection.open(self.host, self.port)
            self.all.append(connection)
        response = await connection.roundtrip(request)
        if connection.reusable:
            self.idle.append(connection)
        return response

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self.all))
        self.idle.clear()
        self.all.clear()


@attrs.frozen
class LoadResult:
    """What one closed-loop run measured inside its window."""

    requests: int
    seconds: float
    # Latencies of the counted requests, in seconds, sorted.
    latencies: Sequence[float]
    errors: int
    # Every response received, in the window or not, good or not.
    answered: int = 0

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def percentile(self, fraction: float) -> float:
        return percentile(self.latencies, fraction)


def percentile(ordered: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of an ascending sequence."""
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), math.ceil(fraction * len(ordered))))
    return ordered[rank - 1]


#: Sends the load's request once and returns the response.
Roundtrip = Callable[[], Awaitable[Response]]


@attrs.define
class Clients:
    """The load's senders, one per unit of concurrency, and how to close what they opened."""

    roundtrips: list[Roundtrip]
    close: Callable[[], Awaitable[None]]


async def connections(host: str, port: int, request: bytes, concurrency: int) -> Clients:
    """``concurrency`` HTTP/1.1 keep-alive connections, each sending ``request``.

    A connection the server closed (hypercorn does after
    ``keep_alive_max_requests``) is replaced before the next request.
    """
    opened = [await Connection.open(host, port) for _ in range(concurrency)]

    def roundtrip_on(index: int) -> Roundtrip:
        async def roundtrip() -> Response:
            if not opened[index].reusable:
                await opened[index].close()
                opened[index] = await Connection.open(host, port)
            return await opened[index].roundtrip(request)

        return roundtrip

    async def close() -> None:
        await asyncio.gather(*(c.close() for c in opened))

    return Clients([roundtrip_on(i) for i in range(concurrency)], close)


def ms(ordered: Sequence[float], fraction: float) -> str:
    """A percentile of seconds, shown in milliseconds."""
    return f"{percentile(ordered, fraction) * 1000:.2f}"


async def closed_loop(
    clients: Clients,
    *,
    warmup: float,
    duration: float,
    check: Callable[[Response], bool],
    on_window: Callable[[str], None] = lambda edge: None,
) -> LoadResult:
    """Every one of ``clients`` sends its request back to back, then they are closed.

    Requests completing during ``warmup`` are not counted; ``on_window`` is
    called with ``"start"`` and ``"end"`` at the window's edges so the caller
    can read the server's CPU clock there. ``check`` judges every response;
    a failed check is counted as an error, never timed.
    """
    loop = asyncio.get_running_loop()
    window_start = loop.time() + warmup
    window_end = window_start + duration
    latencies: list[float] = []
    errors = answered = 0

    async def drive(roundtrip: Roundtrip) -> None:
        nonlocal errors, answered
        clock = time.perf_counter
        now = loop.time
        while now() < window_end:
            sent = clock()
            response = await roundtrip()
            elapsed = clock() - sent
            done = now()
            answered += 1
            if not check(response):
                errors += 1
            elif window_start <= done < window_end:
                latencies.append(elapsed)

    async def edges() -> None:
        await asyncio.sleep(max(0.0, window_start - loop.time()))
        on_window("start")
        await asyncio.sleep(max(0.0, window_end - loop.time()))
        on_window("end")

    try:
        await asyncio.gather(edges(), *(drive(roundtrip) for roundtrip in clients.roundtrips))
    finally:
        await clients.close()
    latencies.sort()
    return LoadResult(len(latencies), duration, latencies, errors, answered)
