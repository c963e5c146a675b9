"""End to end: ``tasks/stream`` across processes and restarts (``--task-events``, SEP-2694).

Rules of this file: every server is a real ``presa-trio serve --task-events``
child process on a loopback port, on a real store (a SQLite file, a
database on the run's PostgreSQL), killed with a real signal; streams are
read over real HTTP as SSE. Every wait is bounded by ``trio.fail_after``,
which fails only if the servers never get there; nothing asserts how long
anything took. A resumed stream may repeat an event (the client
de-duplicates by ``seq``) but may never skip one.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from contextlib import suppress
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import trio

from presa_trio.testing import request
from presa_trio.wire.errors import INVALID_PARAMS
from tests.e2e.event_streams import EVENT, STATUS, assert_gap_free, read_events, task_stream
from tests.e2e.harness import headers
from tests.e2e.peers import LONG_LEASE, PATIENCE, TASKS, Peer, StdioPeer, serving, two_servers


async def test_events_written_on_one_process_stream_on_another_and_resume_after_a_kill(
    postgres_url: str, tmp_path: Path
) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics; S-03, S-04, S-11, S-23,
    S-25): a task running on A streams on B; B is killed mid-stream; the stream resumed on A
    with `after` picks up where B stopped, with no gap, and ends with the task."""
    async with two_servers(postgres_url, tmp_path, LONG_LEASE, "--task-events") as (
        (_, a),
        (process_b, b),
    ):
        created = await a.call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 4}})
        task_id = created["taskId"]
        seen: list[dict[str, Any]] = []
        with trio.fail_after(PATIENCE):
            async with task_stream(b, task_id) as on_b:
                assert await read_events(on_b, seen, 3) is None
                process_b.send_signal(signal.SIGKILL)
                with suppress(httpx.HTTPError):  # B is gone: the stream breaks where it was
                    await read_events(on_b, seen)
            assert seen[0]["payload"]["status"] == "working"
            resumed: list[dict[str, Any]] = []
            async with task_stream(a, task_id, after=seen[-1]["seq"]) as on_a:
                result = await read_events(on_a, resumed)
        assert result is not None
        assert "result" in result, result
        assert resumed[0]["seq"] == seen[-1]["seq"] + 1
        assert_gap_free(seen + resumed)
        assert (resumed[-1]["type"], resumed[-1]["payload"]["status"]) == (STATUS, "completed")
        assert all(e["taskId"] == task_id for e in seen + resumed)


async def test_a_stream_cut_by_a_sqlite_server_restart_resumes_from_the_file(
    tmp_path: Path,
) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics; S-03, S-11, S-23): the
    server is killed mid-stream; the next one on the same file still has the log, the
    recovered task's new events take the next seqs, and the stream resumed with
    `after` delivers them, gap-free, to the end."""
    db, log = tmp_path / "tasks.db", tmp_path / "server.log"
    seen: list[dict[str, Any]] = []
    async with serving(f"sqlite:///{db}", log, "1", "--task-events") as (process, peer):
        created = await peer.call(
            "tools/call", {"name": "slow_compute", "arguments": {"seconds": 3}}
        )
        task_id = created["taskId"]
        with trio.fail_after(PATIENCE):
            async with task_stream(peer, task_id) as stream:
                assert await read_events(stream, seen, 2) is None
                process.send_signal(signal.SIGKILL)
                with suppress(httpx.HTTPError):
                    await read_events(stream, seen)
            await process.wait()
    async with serving(f"sqlite:///{db}", log, "1", "--task-events") as (_, peer):
        resumed: list[dict[str, Any]] = []
        with trio.fail_after(PATIENCE):
            async with task_stream(peer, task_id, after=seen[-1]["seq"]) as stream:
                result = await read_events(stream, resumed)
    assert result is not None
    assert "result" in result, result
    assert resumed[0]["seq"] == seen[-1]["seq"] + 1
    assert_gap_free(seen + resumed)
    assert resumed[-1]["payload"]["status"] == "completed"
    assert f"task {task_id} recovered" in log.read_text()


async def test_over_stdio_the_pipe_is_the_connection_and_cancelling_ends_only_the_stream(
    nursery: trio.Nursery,
) -> None:
    """Spec-mandated (SEP-2694 §tasks/stream; S-07, S-08, S-11): `presa-trio stdio
    --task-events`: a second stream of the task on the pipe is -32602;
    notifications/cancelled ends the first with nothing more sent for it, and the task
    goes on; a stream with `after` then delivers the rest and ends with the task."""
    command = [
        sys.executable,
        "-m",
        "presa_trio",
        "stdio",
        "--task-events",
        "--log-level",
        "WARNING",
    ]
    process: trio.Process = await nursery.start(
        partial(trio.run_process, command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    )
    peer = StdioPeer(process)
    call = {"name": "confirm_delete", "arguments": {"filename": "a.txt"}}
    with trio.fail_after(PATIENCE):
        task_id = (await peer.call("tools/call", call, 1, capabilities=TASKS))["result"]["taskId"]
        await peer.send(
            request("tasks/stream", {"taskId": task_id}, request_id=2, capabilities=TASKS)
        )
        first = [await peer.next_message() for _ in range(3)]
        second = await peer.call("tasks/stream", {"taskId": task_id}, 3, capabilities=TASKS)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        await peer.send(cancel)
        answer = {"confirm-delete": {"action": "accept", "content": {"confirm": True}}}
        params = {"taskId": task_id, "inputResponses": answer}
        await peer.call("tasks/update", params, 4, capabilities=TASKS)
        await peer.send(
            request(
                "tasks/stream", {"taskId": task_id, "after": 2}, request_id=5, capabilities=TASKS
            )
        )
        final = await peer.response_to(5)
        assert process.stdin is not None
        await process.stdin.aclose()
        while await peer.next_message() is not None:
            pass
        assert await process.wait() == 0
    assert [m["params"]["seq"] for m in first if m is not None] == [0, 1, 2]
    assert second["error"]["code"] == INVALID_PARAMS
    assert "result" in final
    assert not [m for m in peer.received if m.get("id") == 2]
    resumed = [m["params"] for m in peer.received if m.get("method") == EVENT][3:]
    assert [e["seq"] for e in resumed] == [3, 4, 5]
    assert resumed[-1]["payload"]["status"] == "completed"


async def test_over_http2_one_connection_holds_one_stream_per_task(tmp_path: Path) -> None:
    """Spec-mandated (SEP-2694 §tasks/stream; S-07): on a real hypercorn, a second
    tasks/stream of a task on the same HTTP/2 connection is -32602; on another
    connection it streams. "Connection" is what hypercorn's ASGI scope gives every
    stream of one HTTP/2 connection alike (spec-notes §50)."""
    async with serving("memory:", tmp_path / "server.log", "30", "--task-events") as (_, peer):
        task_id = (await peer.call("tools/call", {"name": "confirm_delete", "arguments": {}}))[
            "taskId"
        ]
        async with (
            httpx.AsyncClient(http1=False, http2=True, timeout=10) as one,
            httpx.AsyncClient(http1=False, http2=True, timeout=10) as other,
        ):
            first = Peer(one, peer.url)
            with trio.fail_after(PATIENCE):
                async with task_stream(first, task_id) as opened:
                    seen: list[dict[str, Any]] = []
                    await read_events(opened, seen, 1)
                    first.next_id += 1
                    again = request(
                        "tasks/stream",
                        {"taskId": task_id},
                        request_id=first.next_id,
                        capabilities=TASKS,
                    )
                    refused = await one.post(
                        peer.url, json=again, headers=headers(again, **{"mcp-name": task_id})
                    )
                    elsewhere: list[dict[str, Any]] = []
                    async with task_stream(Peer(other, peer.url), task_id) as second:
                        await read_events(second, elsewhere, 1)
    assert refused.http_version == "HTTP/2"
    assert json.loads(refused.content)["error"]["code"] == INVALID_PARAMS
    assert seen[0]["seq"] == elsewhere[0]["seq"] == 0
