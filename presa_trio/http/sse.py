"""Writing one response: plain JSON, or a Server-Sent Events stream.

A request is answered by ``application/json`` when its handler sends nothing
before the result, and by ``text/event-stream`` when it sends notifications
first (progress, logs, a listen stream): the notifications, then exactly one
response, then the end. The choice is made at the first message, so a quiet
handler costs no stream. Quiet streams get a ``: ping`` comment now and then.

Spec: 2026-07-28 basic/transports/streamable-http §Receiving Messages; wire §9.
"""

from __future__ import annotations

import attrs
import trio
from hypercorn.typing import ASGISendCallable

#: Seconds of silence on a stream before a ``: ping`` comment is sent.
PING_INTERVAL_S = 15.0

SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]
JSON_HEADERS = [(b"content-type", b"application/json")]


def sse_event(data: bytes) -> bytes:
    """``event: message`` with the compact JSON on a single ``data:`` line."""
    return b"event: message\r\ndata: " + data + b"\r\n\r\n"


async def send_json(send: ASGISendCallable, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": JSON_HEADERS,
            "trailers": False,
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


@attrs.define(eq=False)
class ResponseWriter:
    """Writes one response as the handler produces it, from the handler's own task.

    The first notification opens the event stream and starts the keep-alive
    in ``nursery``; :meth:`finish` writes the response, as the JSON body when
    nothing came before it, else as the stream's last event. A quiet handler
    therefore costs no stream, no lock and no extra task.
    """

    send: ASGISendCallable
    # Where the keep-alive runs; the caller cancels it when the response is done.
    nursery: trio.Nursery
    # Serializes stream writes (handler and keep-alive); None until a stream opens.
    lock: trio.Lock | None = None
    # Trio time of the last write on the stream: the keep-alive measures silence from it.
    last_write: float = 0.0
    # True once the last byte of the response is written; nothing follows it.
    finished: bool = False

    async def notify(self, data: bytes) -> None:
        """Send one message (compact JSON) as an event, opening the stream first if needed."""
        if self.lock is None:
            self.lock = trio.Lock()
            await self.send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": SSE_HEADERS,
                    "trailers": False,
                }
            )
            self.last_write = trio.current_time()
            self.nursery.start_soon(self.keep_alive)
        await self.write(sse_event(data), more_body=True)

    async def finish(self, data: bytes, status: int = 200) -> None:
        """Send the response; ``status`` applies only when it goes out as plain JSON."""
        if self.lock is None:
            self.finished = True
            await send_json(self.send, status, data)
        else:
            await self.write(sse_event(data), more_body=False)

    async def write(self, body: bytes, *, more_body: bool) -> None:
        assert self.lock is not None
        async with self.lock:
            if self.finished:
                return
            self.finished = not more_body
            self.last_write = trio.current_time()
            await self.send({"type": "http.response.body", "body": body, "more_body": more_body})

    async def keep_alive(self) -> None:
        """A ``: ping`` comment after each ``PING_INTERVAL_S`` of silence on the stream."""
        while not self.finished:
            await trio.sleep_until(self.last_write + PING_INTERVAL_S)
            if trio.current_time() >= self.last_write + PING_INTERVAL_S:
                await self.write(b": ping\r\n\r\n", more_body=True)
