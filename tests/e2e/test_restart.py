"""End to end: tasks outlive their process with ``presa-trio serve --store sqlite:///…``.

Rules of this file: the server is a real child process on a loopback port,
stopped with a real signal and started again on the same file. Every wait
is a bounded loop under ``trio.fail_after``, which fails only if the server
never gets there; nothing asserts how long anything took.
"""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from presa_trio.testing import request
from tests.e2e.conftest import headers
from tests.postgres import free_port

TASKS: dict[str, Any] = {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}
CONFIRM = {"action": "accept", "content": {"confirm": True}}
#: A short lease, so the restarted server claims the killed one's tasks soon.
LEASE_SECONDS = "1"
#: Hang guard for every wait on the server; a passing run needs a few seconds.
PATIENCE = 60


class Peer:
    """A JSON-RPC client of one server process."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.next_id = 0

    async def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC response to one request: a result or an error."""
        self.next_id += 1
        message = request(method, params, request_id=self.next_id, capabilities=TASKS)
        extra = {"mcp-name": params["taskId"]} if "taskId" in params else {}
        response = await self.http.post(self.url, json=message, headers=headers(message, **extra))
        body: dict[str, Any] = json.loads(response.content)
        return body

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = await self.send(method, params)
        assert "result" in body, body
        result: dict[str, Any] = body["result"]
        return result

    async def until(self, task_id: str, status: str) -> dict[str, Any]:
        """``tasks/get`` until the task reads ``status``; its DetailedTask then."""
        while True:
            task = await self.call("tasks/get", {"taskId": task_id})
            if task["status"] == status:
                return task
            await trio.sleep(0.05)


@asynccontextmanager
async def serving(
    store: str,
    log: Path,
    lease: str = LEASE_SECONDS,
    *options: str,
    program: Sequence[str] = ("-m", "presa_trio"),
) -> AsyncIterator[tuple[trio.Process, Peer]]:
    """``presa-trio serve --store STORE OPTIONS``; yields the process once it answers.

    ``program`` is what Python runs: the command line, or a launcher around it.
    """
    port = free_port()
    command = [
        sys.executable,
        *program,
        "serve",
        "--port",
        str(port),
        "--store",
        store,
        "--task-lease",
        lease,
        *options,
    ]
    with log.open("ab") as stderr:
        async with trio.open_nursery() as nursery:
            process: trio.Process = await nursery.start(
                partial(trio.run_process, command, check=False, stderr=stderr)
            )
            try:
                async with httpx.AsyncClient(timeout=10) as http:
                    peer = Peer(http, f"http://localhost:{port}/mcp")
                    with trio.fail_after(PATIENCE):
                        while True:
                            try:
                                await peer.call("server/discover", {})
                                break
                            except httpx.TransportError:
                                await trio.sleep(0.05)
                    yield process, peer
            finally:
                if process.returncode is None:
                    process.kill()


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
async def test_parked_and_running_tasks_survive_a_restart(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """presa-defined (tasks that outlive the process; spec-notes §44):
    after the process is stopped, the next one on the same file shows the parked
    task unchanged (same id, status, input requests, timestamps) and completes it
    when answered; the running task is run again and completes."""
    db, log = tmp_path / "tasks.db", tmp_path / "server.log"
    async with serving(f"sqlite:///{db}", log) as (process, peer):
        parked = await peer.call(
            "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"}}
        )
        running = await peer.call(
            "tools/call", {"name": "slow_compute", "arguments": {"seconds": 2, "label": "again"}}
        )
        with trio.fail_after(PATIENCE):
            before = await peer.until(parked["taskId"], "input_required")
        process.send_signal(stop)
        with trio.fail_after(PATIENCE):
            await process.wait()

    async with serving(f"sqlite:///{db}", log) as (_, peer):
        after = await peer.call("tasks/get", {"taskId": parked["taskId"]})
        assert after == before
        assert list(after["inputRequests"]) == ["confirm-delete"]
        await peer.call(
            "tasks/update",
            {"taskId": parked["taskId"], "inputResponses": {"confirm-delete": CONFIRM}},
        )
        with trio.fail_after(PATIENCE):
            done = await peer.until(parked["taskId"], "completed")
            rerun = await peer.until(running["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "Delete confirmed: true"
        assert done["createdAt"] == before["createdAt"]
        assert rerun["result"]["content"][0]["text"] == "Completed again"
    assert f"task {running['taskId']} recovered" in log.read_text()


@pytest.mark.parametrize(
    ("command", "url", "says"),
    [
        ("serve", "redis://localhost", "unknown store URL 'redis://localhost'"),
        ("serve", "sqlite:///", "bad store URL 'sqlite:///'"),
        ("serve", "sqlite:////no/such/dir/t.db", "cannot open sqlite:////no/such/dir/t.db"),
        ("stdio", "sqlite:////no/such/dir/t.db", "cannot open sqlite:////no/such/dir/t.db"),
    ],
)
async def test_a_store_that_cannot_be_opened_stops_the_start_with_one_line(
    command: str, url: str, says: str
) -> None:
    """presa-defined (operator errors): a bad ``--store`` ends the start with exit
    status 2 and one line naming the URL, never a traceback."""
    with trio.fail_after(PATIENCE):
        finished = await trio.run_process(
            [sys.executable, "-m", "presa_trio", command, "--store", url],
            check=False,
            capture_stdout=True,
            capture_stderr=True,
            stdin=b"",
        )
    lines = finished.stderr.decode().splitlines()
    assert (finished.returncode, len(lines)) == (2, 1), lines
    assert lines[0].startswith(f"presa-trio: error: {says}")
    assert finished.stdout == b""
