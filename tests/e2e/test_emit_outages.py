"""End to end: a tool's events through a PostgreSQL outage are stored, or the tool is told.

Rules of this file: every server is a real ``presa-trio serve --task-events``
child process serving tests/e2e/emitting_server.py, on a database of a
PostgreSQL of this module's own (tests/postgres.py), which the tests freeze
(SIGSTOP) or whose sessions they terminate while the ``tick`` tool emits.
What is asserted is docs/task-events.md "An event is stored or the tool is
told": each event the tool emitted is in the task's log once, or its emit
raised ``EmitFailed``; the log's seqs have no gap. The sleeps place the
faults; nothing asserts how long anything took.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from presa_trio.testing import request
from tests.e2e.emitting_server import TICK
from tests.e2e.harness import headers
from tests.e2e.peers import PATIENCE, TASKS, Peer, serving
from tests.postgres import Postgres, temporary_postgresql
from tests.streams import sse_messages

#: The store timeout the servers here run with (s): how long an emit waits out an outage.
OPTIONS = ("--store-timeout", "1", "--task-events", "tests.e2e.emitting_server:server")


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[Postgres]:
    """A PostgreSQL for this module alone: freezing it stops nobody else's test."""
    with temporary_postgresql() as server:
        yield server


async def start_ticking(peer: Peer, count: int) -> str:
    """Start ``tick``: ``count`` events, one every 50 ms; its task id."""
    arguments = {"count": count, "every": 0.05}
    created = await peer.call("tools/call", {"name": "tick", "arguments": arguments})
    task_id: str = created["taskId"]
    return task_id


async def told(peer: Peer, task_id: str) -> list[int]:
    """Once the task has completed: the ``n`` of every emit that raised in the tool.

    Polled with ``tasks/get``; right after a fault an answer may be the
    store's retryable -32603, and the next one is sent.
    """
    with trio.fail_after(PATIENCE):
        while True:
            body = await peer.send("tasks/get", {"taskId": task_id})
            if body.get("result", {}).get("status") == "completed":
                break
            assert "result" in body or body["error"]["data"]["retryable"], body
            await trio.sleep(0.1)
    failed: list[int] = json.loads(body["result"]["result"]["content"][0]["text"])["failed"]
    return failed


async def logged(peer: Peer, task_id: str) -> list[dict[str, Any]]:
    """Every event the task's log holds: one ``tasks/stream`` of the ended task, to its end."""
    message = request("tasks/stream", {"taskId": task_id}, capabilities=TASKS)
    sent = headers(message, **{"mcp-name": task_id})
    with trio.fail_after(PATIENCE):
        async with peer.http.stream("POST", peer.url, json=message, headers=sent) as response:
            messages = [m async for m in sse_messages(response)]
    assert "result" in messages[-1], messages[-1]
    return [m["params"] for m in messages[:-1]]


def stored_once_or_told(events: list[dict[str, Any]], failed: list[int], count: int) -> None:
    """Each of the ``count`` ticks is in the log once, or the tool was told; seqs gap-free."""
    assert [e["seq"] for e in events] == list(range(len(events)))
    ticks = [e["payload"]["n"] for e in events if e["type"] == TICK]
    assert len(ticks) == len(set(ticks)), ticks
    assert set(ticks) | set(failed) == set(range(count)), (ticks, failed)


async def test_events_emitted_while_the_database_is_frozen_are_stored_or_the_tool_is_told(
    own_postgres: Postgres, tmp_path: Path
) -> None:
    """presa-defined (docs/task-events.md "An event is stored or the tool is told";
    SEP-2694 §Resume and Replay Semantics, no silent gap; S-28): PostgreSQL frozen for 10 s
    while a tool emits every 50 ms: the emits that met it raise EmitFailed once the
    store timeout has passed, every other event is in the log, once, gap-free."""
    count = 100
    async with serving(own_postgres.new_database(), tmp_path / "server.log", "30", *OPTIONS) as (
        _,
        peer,
    ):
        task_id = await start_ticking(peer, count)
        await trio.sleep(0.5)  # some events first
        own_postgres.freeze()
        try:
            await trio.sleep(10)
        finally:
            own_postgres.thaw()
        failed = await told(peer, task_id)
        events = await logged(peer, task_id)
    assert failed, "no emit met the frozen database"
    stored_once_or_told(events, failed, count)


async def test_events_emitted_while_sessions_are_terminated_are_stored_or_the_tool_is_told(
    own_postgres: Postgres, tmp_path: Path
) -> None:
    """presa-defined (docs/task-events.md "An event is stored or the tool is told";
    S-28): every session of the server terminated five times (pg_terminate_backend) while a
    tool emits every 50 ms: an emit that meets a broken connection waits and tries
    again on a new one, so every event is in the log, once, or the tool was told."""
    count = 60
    url = own_postgres.new_database()
    name = url.rsplit("/", 1)[1]
    log = tmp_path / "server.log"
    async with serving(url, log, "30", *OPTIONS) as (_, peer):
        task_id = await start_ticking(peer, count)
        for _ in range(5):
            await trio.sleep(0.3)
            own_postgres.execute(
                f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'"
            )
        failed = await told(peer, task_id)
        events = await logged(peer, task_id)
    assert "an event waits for the store" in log.read_text(), "no emit met a broken connection"
    stored_once_or_told(events, failed, count)
