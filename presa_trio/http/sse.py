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


@attrs.frozen
class Outgoing:
    """One message for the client; ``final`` marks the response that ends the stream."""

    # The message as compact JSON, encoded by whoever produced it, so that a
    # value JSON cannot hold fails there and not in the writer.
    data: bytes
    final: bool = False
    # The HTTP status if this response goes out as plain JSON.
    status: int = 200


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


async def write_response(
    send: ASGISendCallable, outgoing: trio.MemoryReceiveChannel[Outgoing]
) -> None:
    """Drain ``outgoing`` onto the HTTP response until the final message."""
    first = await outgoing.receive()
    if first.final:
        await send_json(send, first.status, first.data)
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": SSE_HEADERS,
            "trailers": False,
        }
    )
    item: Outgoing | None = first
    while True:
        if item is not None:
            await send(
                {
                    "type": "http.response.body",
                    "body": sse_event(item.data),
                    "more_body": not item.final,
                }
            )
            if item.final:
                return
        item = None
        with trio.move_on_after(PING_INTERVAL_S):
            item = await outgoing.receive()
        if item is None:
            await send({"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True})
