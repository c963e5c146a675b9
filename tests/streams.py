"""The JSON-RPC messages of a response read over a real socket, as they arrive.

One reader for every test that talks to a served presa through httpx: the
events go through the one SSE parser (:mod:`presa_trio.wire.sse`), and a
plain JSON answer is its one message.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import httpx

from presa_trio.wire.sse import Event, EventStreamParser


async def sse_messages(response: httpx.Response) -> AsyncGenerator[dict[str, Any]]:
    """Each message of ``response``: its SSE events' data, or its JSON body."""
    if response.headers.get("content-type", "").startswith("application/json"):
        yield json.loads(await response.aread())
        return
    parser = EventStreamParser()
    async for chunk in response.aiter_bytes():
        for item in parser.feed(chunk):
            if isinstance(item, Event):
                yield json.loads(item.data)
