"""End to end: the server's own change notifications reach every process on one PostgreSQL.

Rules of this file: as ``test_two_processes.py``: two real ``presa-trio serve``
child processes (``tests.e2e.announcing_server``) share one fresh database;
every wait is bounded by ``trio.fail_after``, and nothing asserts how long
anything took.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from presa_trio.testing import request
from tests.e2e.announcing_server import WATCHED
from tests.e2e.harness import headers
from tests.e2e.peers import PATIENCE, TASKS, Peer, two_servers
from tests.streams import sse_messages

SERVER = "tests.e2e.announcing_server:server"
#: A URI only process B announces, last: once a stream has it, whatever A's
#: announcements caused has reached the stream before it.
LAST = "test://last"
#: What each stream asks for.
FILTER = {"toolsListChanged": True, "resourceSubscriptions": [WATCHED, LAST]}

Seen = tuple[str, str | None]


@asynccontextmanager
async def listening(peer: Peer) -> AsyncIterator[AsyncGenerator[dict[str, Any]]]:
    """A listen stream on ``peer`` for :data:`FILTER`, once acknowledged: its notifications."""
    message = request(
        "subscriptions/listen", {"notifications": FILTER}, request_id=9, capabilities=TASKS
    )
    async with peer.http.stream("POST", peer.url, json=message, headers=headers(message)) as stream:
        incoming = sse_messages(stream)
        acknowledged = await anext(incoming)
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
        assert acknowledged["params"]["notifications"] == FILTER
        yield incoming


async def read(incoming: AsyncGenerator[dict[str, Any]], until: Seen) -> list[Seen]:
    """A stream's notifications, as (method, uri), up to and including ``until``."""
    seen: list[Seen] = []
    while not seen or seen[-1] != until:
        message = await anext(incoming)
        seen.append((message["method"], message["params"].get("uri")))
    return seen


async def announce(peer: Peer, uris: list[str], *, tools: bool) -> None:
    arguments = {"uris": uris, "tools": tools}
    await peer.call("tools/call", {"name": "announce", "arguments": arguments})


async def test_a_change_announced_in_one_process_reaches_every_stream_once(
    postgres_url: str, tmp_path: Path
) -> None:
    """Spec-mandated (subscriptions: a listen stream receives the notifications its
    filter names; server/resources §Subscriptions, server/tools §List Changed
    Notification), with presa's relay between the processes on one store: a tool on A
    announces a resource updated and the tool list changed; a stream on B receives each
    once, as A's own stream does; a change B announces then reaches both streams, each
    once, after them (no copy goes round again)."""
    async with two_servers(postgres_url, tmp_path, "30", SERVER) as ((_, a), (_, b)):
        with trio.fail_after(PATIENCE):
            async with listening(a) as on_a, listening(b) as on_b:
                await announce(a, [WATCHED], tools=True)
                expected: list[Seen] = [
                    ("notifications/resources/updated", WATCHED),
                    ("notifications/tools/list_changed", None),
                ]
                assert await read(on_a, expected[-1]) == expected
                assert await read(on_b, expected[-1]) == expected
                await announce(b, [LAST], tools=False)
                last = ("notifications/resources/updated", LAST)
                assert await read(on_b, last) == [last]
                assert await read(on_a, last) == [last]
