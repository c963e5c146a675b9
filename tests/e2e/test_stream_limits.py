"""End to end: limits on open ``tasks/stream`` requests, per client and per process.

Rules of this file: the server is a real ``presa-trio serve --task-events``
child process on a loopback port, without authorization; each client is a
real httpx client whose sockets are bound to an address of its own on
loopback (127.0.0.1, 127.0.0.2), so the server sees two clients. Streams
are held open by reading their first event; every wait is bounded by
``trio.fail_after``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import trio

from presa_trio.testing import request
from presa_trio.wire.errors import INTERNAL_ERROR
from tests.e2e.harness import headers
from tests.e2e.peers import PATIENCE, TASKS, Peer, serving
from tests.streams import sse_messages

#: The streams one client may hold by default, and the process's cap in this file.
PER_CLIENT = 16
CAP = 20


def stream_request(task_id: str) -> tuple[dict[str, Any], dict[str, str]]:
    message = request("tasks/stream", {"taskId": task_id}, capabilities=TASKS)
    return message, headers(message, **{"mcp-name": task_id})


@asynccontextmanager
async def client_at(address: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client whose connections come from ``address``."""
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(transport=transport, timeout=10) as client:
        yield client


async def hold_stream(
    stack: AsyncExitStack, client: httpx.AsyncClient, url: str, task_id: str
) -> None:
    """Open a ``tasks/stream`` on a connection of its own, and keep it open with ``stack``."""
    message, sent = stream_request(task_id)
    response = await stack.enter_async_context(
        client.stream("POST", url, json=message, headers=sent)
    )
    assert response.status_code == 200, await response.aread()
    messages = sse_messages(response)
    stack.push_async_callback(messages.aclose)  # held, so it is not collected (and closed)
    with trio.fail_after(PATIENCE):
        first = await anext(messages)
    assert first["method"] == "notifications/tasks/event", first


async def refused(client: httpx.AsyncClient, url: str, task_id: str, status: int) -> Any:
    """One more ``tasks/stream``: answered ``status`` with Retry-After; its ``error.data``."""
    message, sent = stream_request(task_id)
    response = await client.post(url, json=message, headers=sent)
    assert response.status_code == status, response.text
    assert response.headers["retry-after"] == "5"
    error = json.loads(response.content)["error"]
    assert error["code"] == INTERNAL_ERROR
    return error["data"]


async def test_a_client_holding_its_streams_leaves_another_client_its_own(
    tmp_path: Path,
) -> None:
    """Spec-recommended (SEP-2694 §Security Implications, concurrent streams per client;
    S-21): without authorization, a client at 127.0.0.1 holding its 16 streams gets
    429 for a 17th, while a client at 127.0.0.2 streams; once the process holds its
    cap (20 here), that client, under its own limit, gets 503. Both with Retry-After."""
    options = ("--task-events", "--task-events-max-streams", str(CAP))
    async with (
        serving("memory:", tmp_path / "server.log", "30", *options) as (_, peer),
        client_at("127.0.0.1") as first,
        client_at("127.0.0.2") as second,
        AsyncExitStack() as held,
    ):
        url = peer.url.replace("localhost", "127.0.0.1")
        task_id = await parked_task(peer)
        for _ in range(PER_CLIENT):
            await hold_stream(held, first, url, task_id)
        assert await refused(first, url, task_id, 429) == {
            "retryable": True,
            "limit": "max_streams_per_client",
            "reason": "too_many_streams",
        }
        for _ in range(CAP - PER_CLIENT):
            await hold_stream(held, second, url, task_id)
        assert await refused(second, url, task_id, 503) == {
            "retryable": True,
            "limit": "max_streams",
            "reason": "too_many_streams",
        }


async def parked_task(peer: Peer) -> str:
    """A task that waits for input for as long as the test runs; its id."""
    created = await peer.call(
        "tools/call", {"name": "confirm_delete", "arguments": {"filename": "f"}}
    )
    task_id: str = created["taskId"]
    return task_id
