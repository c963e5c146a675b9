"""A response written while its connection is being closed is dropped, not raised.

A client sends a request presa answers from its head with ``Connection:
close`` (a body that is not JSON: 415), then leaves before its body is
whole. The task reading the connection finds the body cut short and closes
the connection while the app's task is writing the response. Trio's
``send_eof`` holds the stream's sending side across a checkpoint; a
``send_all`` from another task in that moment is
:class:`trio.BusyResourceError` (:class:`trio.abc.HalfCloseableStream`). The
stream here orders that moment: the client's end is read once the
response's first write has begun, and the write goes on once the close has
(:mod:`presa_trio.http.connection`).
"""

from __future__ import annotations

from typing import Any, cast

import trio
from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.config import Config
from hypercorn.trio.worker_context import WorkerContext

from presa_trio.http import connection
from presa_trio.http.app import McpApp
from presa_trio.server import Server
from presa_trio.testing import running

#: A 415 from its head; 5 of its 100 bytes of body.
REQUEST = (
    b"POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: text/plain\r\n"
    b"accept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\nhello"
)


class ClosingWhileWritten(trio.abc.HalfCloseableStream):
    """A socket's stream on which the client's end comes while a write is under way,
    and the server's ``send_eof`` holds the sending side until that write has tried it.
    """

    def __init__(self, socket: trio.socket.SocketType) -> None:
        self.socket = socket  # hypercorn asks it for the addresses
        self.stream = trio.SocketStream(socket)
        self.sending = False
        self.writing = trio.Event()
        self.closing = trio.Event()
        self.tried = trio.Event()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        data = await self.stream.receive_some(max_bytes)
        if not data:
            await self.writing.wait()
        return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.writing.set()
        await self.closing.wait()
        try:
            self.start_sending()
        finally:
            self.tried.set()
        try:
            await self.stream.send_all(data)
        finally:
            self.sending = False

    async def send_eof(self) -> None:
        self.start_sending()
        self.closing.set()
        try:
            await self.tried.wait()
        finally:
            self.sending = False
        await self.stream.send_eof()

    def start_sending(self) -> None:
        if self.sending:
            raise trio.BusyResourceError("another task is sending on this stream")
        self.sending = True

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        await self.stream.aclose()


async def test_a_response_written_while_the_client_leaves_mid_body_is_dropped() -> None:
    server_side, client_side = trio.socket.socketpair()
    stream = ClosingWhileWritten(server_side)
    raised: list[BaseException] = []

    async with running(McpApp.for_server(Server("close", "1.0.0"))) as client:

        async def app(scope: Any, receive: Any, send: Any) -> None:
            async def recorded_send(message: Any) -> None:
                try:
                    await send(message)
                except BaseException as error:
                    raised.append(error)
                    raise

            await client.app(scope, receive, recorded_send)

        with client_side:
            await client_side.send(REQUEST)
            client_side.shutdown(trio.socket.SHUT_WR)
            # hypercorn types its stream as TLS's; it serves a plain one alike.
            plain = cast(Any, stream)
            server = connection.MendedTCPServer(
                ASGIWrapper(app), Config(), WorkerContext(None), {}, plain
            )
            with trio.fail_after(10):
                await server.run()

    assert stream.tried.is_set()  # the write met the close
    assert raised == []
