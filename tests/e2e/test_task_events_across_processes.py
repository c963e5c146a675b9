"""End to end: one task's event log written by two ``serve`` processes on one PostgreSQL.

Rules of this file: as ``test_task_event_streams.py``: real ``presa-trio
serve --task-events`` child processes (``tests.e2e.events_server``), real
HTTP, every wait bounded by ``trio.fail_after``, nothing asserting how long
anything took. Process B of the clock test runs with its wall clock
:data:`SKEW_S` seconds ahead of A's: libfaketime (PyPI ``libfaketime``,
which ships the library) is preloaded into it, so every reading of the
wall clock in that process, by Python, libpq or anything else, is ahead,
while its monotonic clock is left alone, as a host's wrong wall clock
leaves it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import libfaketime
import trio

from presa_trio.wire.tasks import EVENTS_GONE
from tests.e2e.event_streams import STATUS, read_events, task_stream
from tests.e2e.events_server import assert_cancelled_log
from tests.e2e.peers import LONG_LEASE, PATIENCE, Peer, serving, two_servers

SERVER = "tests.e2e.events_server:server"
ANSWER = {"action": "accept", "content": {"ok": True}}
#: How far B's wall clock is ahead of A's, in seconds.
SKEW_S = 100
#: The maximum event age both processes run with, in seconds.
MAX_AGE_S = 2
#: Cancel-vs-emit races across the two processes, and how many run at once.
RACES = 200
RACERS = 4


def clock_ahead(seconds: int) -> dict[str, str]:
    """The environment of a process whose wall clock is ``seconds`` ahead (libfaketime)."""
    _, preload = libfaketime.get_reload_information()
    return {**os.environ, **preload, "FAKETIME": f"+{seconds}s"}


async def stream_once(
    peer: Peer, task_id: str, after: int | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One whole ``tasks/stream``: the events it delivered and its response."""
    events: list[dict[str, Any]] = []
    with trio.fail_after(PATIENCE):
        async with task_stream(peer, task_id, after) as stream:
            response = await read_events(stream, events)
    assert response is not None
    return events, response


def assert_one_run(events: list[dict[str, Any]], after: int | None) -> None:
    """Consecutive seqs, from the one after the cursor when there was one."""
    seqs = [e["seq"] for e in events]
    first = after + 1 if after is not None else seqs[0] if seqs else 0
    assert seqs == list(range(first, first + len(seqs))), seqs


async def follow_to_the_end(peer: Peer, task_id: str) -> list[dict[str, Any]]:
    """Stream the task from its start to its end, resuming after ``events_gone`` from
    the ``earliestSeq`` it names, which must lie past everything delivered."""
    seen: list[dict[str, Any]] = []
    after: int | None = None
    while True:
        events, response = await stream_once(peer, task_id, after)
        assert_one_run(events, after)
        seen += events
        if "result" in response:
            return seen
        assert response["error"]["code"] == EVENTS_GONE, response
        earliest = response["error"]["data"]["earliestSeq"]
        assert earliest > (seen[-1]["seq"] + 1 if seen else 0), response
        after = earliest - 1


async def until_aged(peer: Peer, task_id: str) -> None:
    """Until a stream of the task from its start delivers nothing: every event has aged."""
    with trio.fail_after(PATIENCE):
        # The database's clock moves on its own: no Trio Event says when.
        while (await stream_once(peer, task_id))[0]:  # noqa: ASYNC110
            await trio.sleep(0.2)


async def until_asked(peer: Peer, task_id: str, key: str) -> None:
    """``tasks/get`` on ``peer`` until the task asks for ``key``."""
    while key not in (await peer.until(task_id, "input_required"))["inputRequests"]:  # noqa: ASYNC110
        await trio.sleep(0.05)


async def test_with_clocks_100_s_apart_every_reader_sees_one_run_and_every_stream_ends(
    postgres_url: str, tmp_path: Path
) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics: no gap without
    events_gone, an exact earliestSeq, a terminal task's stream ends; §Event Retention)
    with presa's one clock (rule 7; S-13, S-14, S-30): A runs a task that asks four
    times, B, its clock 100 s ahead, answers, so both write its log, and both age it
    (maximum age 2 s). Streams on both, live and after the end, see one run of seqs or
    events_gone past what they had; once the events have aged, a stream from the start
    ends at once, one from seq 0 is events_gone naming the next seq, and one from the
    last ends."""
    options = ("--task-events", "--task-events-max-age", str(MAX_AGE_S), SERVER)
    async with (
        serving(postgres_url, tmp_path / "a.log", LONG_LEASE, *options) as (_, a),
        serving(
            postgres_url, tmp_path / "b.log", LONG_LEASE, *options, env=clock_ahead(SKEW_S)
        ) as (_, b),
    ):
        created = await a.call(
            "tools/call", {"name": "rounds", "arguments": {"rounds": 4, "steps": 3}}
        )
        task_id = created["taskId"]
        live: dict[str, list[dict[str, Any]]] = {}

        async def follow(name: str, peer: Peer) -> None:
            live[name] = await follow_to_the_end(peer, task_id)

        with trio.fail_after(PATIENCE):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(follow, "a", a)
                nursery.start_soon(follow, "b", b)
                for round_ in range(4):
                    await until_asked(b, task_id, f"r{round_}")
                    update = {"taskId": task_id, "inputResponses": {f"r{round_}": ANSWER}}
                    await b.call("tasks/update", update)
        for seen in live.values():
            assert (seen[-1]["type"], seen[-1]["payload"]["status"]) == (STATUS, "completed")
        last = live["a"][-1]["seq"]
        for peer in (a, b):
            events, response = await stream_once(peer, task_id)
            assert_one_run(events, None)
            assert "result" in response
            assert not events or events[-1]["seq"] == last
        await until_aged(a, task_id)
        for peer in (a, b):
            events, response = await stream_once(peer, task_id)
            assert (events, "result" in response) == ([], True)
            _, gone = await stream_once(peer, task_id, 0)
            assert gone["error"]["code"] == EVENTS_GONE
            assert gone["error"]["data"]["earliestSeq"] == last + 1
            assert (await stream_once(peer, task_id, last))[0] == []
    assert (
        f"this process's clock is +{SKEW_S:.1f} s from the database's"
        in (tmp_path / "b.log").read_text()
    )


async def cancel_while_it_emits(a: Peer, b: Peer) -> None:
    """One race: a chatter on A, cancelled from B once it emits; then its whole log."""
    task_id = (await a.call("tools/call", {"name": "chatter", "arguments": {}}))["taskId"]
    with trio.fail_after(PATIENCE):
        async with task_stream(b, task_id) as stream:
            await read_events(stream, [], 2)
    await b.call("tasks/cancel", {"taskId": task_id})
    events, response = await stream_once(a, task_id)
    assert "result" in response
    assert_cancelled_log(events)


async def test_no_event_lands_after_a_cancel_from_another_process(
    postgres_url: str, tmp_path: Path
) -> None:
    """Spec-mandated (SEP-2694 §Task Event, nothing after the terminal status event)
    with presa's fenced appends (rule 7; S-31): RACES times, RACERS at a time, a tool on A
    emits as fast as the database takes it and B cancels its task; the log is the
    run's status, its steps in order, then `cancelled`, last; the event the tool
    tries once it has seen its cancellation (A hears B's cancel through the
    database) never lands."""
    options = ("--task-events", "--task-events-max", "1000000", SERVER)
    async with two_servers(postgres_url, tmp_path, LONG_LEASE, *options) as ((_, a), (_, b)):

        async def racer() -> None:
            for _ in range(RACES // RACERS):
                await cancel_while_it_emits(a, b)

        async with trio.open_nursery() as nursery:
            for _ in range(RACERS):
                nursery.start_soon(racer)
