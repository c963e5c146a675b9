"""End to end on a real PostgreSQL: a read-only episode, on two processes.

Rules of this file: real hypercorn servers on port 0, each with its own
PostgreSQL store on one fresh database of the run's server (tests/postgres.py),
httpx over loopback; the episode is made the way an operator makes one
(``ALTER DATABASE … SET default_transaction_read_only``, sessions ended),
and lasts three seconds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import urlsplit

import pytest
import trio

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TaskRunner, TasksExtension
from presa_trio.tasks.stores import open_store
from tests.e2e.harness import ServeApp, Served, TaskClient
from tests.postgres import Postgres

EPISODE_S = 3.0


def build(store: Any, gate: trio.Event) -> McpApp:
    server = Server("postgresql-failures", "1.0.0")
    # Leases outlast the episode: renewal fails during it, and no lease lapses.
    tasks = TasksExtension(TaskRunner(store, lease_ms=6_000))
    server.add_extension(tasks)

    @tasks.tool(Policy.REQUIRED, description="Answers with the text given.")
    async def echo(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        if arguments.get("wait"):
            await gate.wait()
        return str(arguments.get("text", "echo"))

    return McpApp.for_server(server)


@pytest.fixture
async def two(
    serve_app: ServeApp, task_client: Callable[[Served], TaskClient], postgres_url: str
) -> AsyncIterator[tuple[TaskClient, TaskClient, trio.Event]]:
    """Two servers on one database (two processes, as far as the store can tell)."""
    gate = trio.Event()
    async with AsyncExitStack() as stack:
        clients = []
        for _ in range(2):
            store = await stack.enter_async_context(open_store(postgres_url))
            served, _ = await serve_app(build(store, gate))
            clients.append(task_client(served))
        yield clients[0], clients[1], gate


async def test_a_read_only_episode_is_retryable_while_it_lasts_and_leaves_no_trace(
    two: tuple[TaskClient, TaskClient, trio.Event], postgres: Postgres, postgres_url: str
) -> None:
    """presa-defined (docs/tasks.md, the failure policy: unavailable): while the
    database is read-only (sessions ended, new ones read-only), a creation on either
    process answers -32603 with data.retryable true, and a task finishing meanwhile
    waits; once it is writable again, both processes serve in full at once (no
    restart, no failed call), and the waiting task's result is stored."""
    a, b, gate = two
    with trio.fail_after(40):
        waiting = await a.create("echo", wait=True, text="kept")
        with postgres.read_only(urlsplit(postgres_url).path.lstrip("/")):
            gate.set()  # the waiting task finishes now; its write must wait
            episode_ends = trio.current_time() + EPISODE_S
            while trio.current_time() < episode_ends:
                for client in (a, b):
                    answer = await client.send("tools/call", name="echo", arguments={})
                    assert answer["error"]["code"] == -32603
                    assert answer["error"]["data"] == {"retryable": True}
                await trio.sleep(0.2)
        for client in (a, b):
            assert "result" in await client.send("server/discover")
            done = await client.settled(await client.create("echo", text="after"))
            assert done["result"]["content"] == [{"type": "text", "text": "after"}]
        kept = await a.settled(waiting)
        assert kept["result"]["content"] == [{"type": "text", "text": "kept"}]
