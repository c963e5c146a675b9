"""The client reads any server's event stream as the SSE format allows it to be written.

Rules of this file: the peer is a small ASGI app that writes its bytes
exactly as given, served to the client's real :class:`HttpTransport` through
httpx's ASGI transport; what the client gets is asserted message by message.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest

from presa_trio.client.errors import ProtocolFailure
from presa_trio.client.transport import HttpTransport

URL = "http://peer.test/mcp"
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
RESULT = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}


def peer(chunks: list[bytes]) -> httpx.AsyncClient:
    """An HTTP client whose every POST is answered by an event stream of ``chunks``."""

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app))


async def replies_of(chunks: list[bytes], count: int) -> list[dict[str, Any]]:
    async with peer(chunks) as http:
        transport = HttpTransport(URL, http)
        async with transport.exchange({"jsonrpc": "2.0", "id": 1}, {}) as replies:
            return [await replies.next() for _ in range(count)]


async def test_lf_and_cr_line_ends_a_bom_comments_and_multi_line_data_are_read() -> None:
    """Spec-mandated (HTML §9.2.5–9.2.6, read through wire/sse.py; streamable-http
    §Receiving Messages): a server that ends lines with LF or CR, opens with a byte
    order mark, sends comments, leaves out the space after the colon, or splits its
    JSON over several ``data`` lines is read the same as presa's own framing."""
    progress = json.dumps(PROGRESS, indent=1).replace("\n", "\ndata:")
    stream = (
        f"\ufeff: hello\n\nevent: message\rdata:{progress}\r\r: ping\n\ndata: "
        f"{json.dumps(RESULT)}\n\n"
    ).encode()
    assert await replies_of([stream[:7], stream[7:40], stream[40:]], 2) == [PROGRESS, RESULT]


async def test_a_stream_that_ends_before_its_response_is_a_protocol_failure() -> None:
    """Spec-mandated (streamable-http §Sending Messages: the stream carries the
    response; HTML §9.2.5: an event the stream ends inside is not dispatched)."""
    with pytest.raises(ProtocolFailure, match="without a response"):
        await replies_of([b"data: " + json.dumps(RESULT).encode() + b"\n"], 1)
