"""``tasks/stream`` over real HTTP for the end-to-end tests: open one, read its events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from presa_trio.testing import request
from tests.e2e.harness import headers
from tests.e2e.peers import TASKS, Peer
from tests.streams import sse_messages

EVENT = "notifications/tasks/event"
STATUS = "presa_trio.task.status"


@asynccontextmanager
async def task_stream(
    peer: Peer, task_id: str, after: int | None = None
) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
    """``tasks/stream`` on ``peer``: its JSON-RPC messages as they arrive."""
    params: dict[str, Any] = {"taskId": task_id}
    if after is not None:
        params["after"] = after
    peer.next_id += 1
    message = request("tasks/stream", params, request_id=peer.next_id, capabilities=TASKS)
    sent = headers(message, **{"mcp-name": task_id})
    async with peer.http.stream("POST", peer.url, json=message, headers=sent) as response:
        yield sse_messages(response)


async def read_events(
    stream: AsyncIterator[dict[str, Any]], into: list[dict[str, Any]], count: int | None = None
) -> dict[str, Any] | None:
    """Append events to ``into`` until ``count`` of them (None: the response); the response,
    a result or an error."""
    async for message in stream:
        if message.get("method") != EVENT:
            assert "result" in message or "error" in message, message
            return message
        into.append(message["params"])
        if count is not None and len(into) >= count:
            return None
    raise AssertionError("the stream ended without a response")


def assert_gap_free(events: list[dict[str, Any]]) -> list[int]:
    """The seqs, de-duplicated: 0, 1, 2… with no hole, the order never going back past one."""
    seqs = sorted({e["seq"] for e in events})
    assert seqs == list(range(len(seqs))), [e["seq"] for e in events]
    return seqs
