"""End to end: two ``presa-trio serve --store postgresql://…`` processes, one database.

Rules of this file: both servers are real child processes on their own
loopback ports, sharing one fresh database on the run's real PostgreSQL
(tests/postgres.py); requests about one task go to either, as a load
balancer would send them. Every wait is a bounded loop under
``trio.fail_after``, which fails only if the servers never get there;
nothing asserts how long anything took.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import trio

from presa_trio.testing import request
from tests.e2e.harness import headers
from tests.e2e.peers import (
    CONFIRM,
    PATIENCE,
    TASKS,
    Peer,
    listening,
    two_servers,
    until_completed,
)
from tests.postgres import Postgres


async def park(creator: Peer, watcher: Peer, filename: str) -> tuple[str, dict[str, Any]]:
    """A ``confirm_delete`` task made on ``creator``; its id and its parked state,
    read on ``watcher`` once it asks for input."""
    created = await creator.call(
        "tools/call", {"name": "confirm_delete", "arguments": {"filename": filename}}
    )
    with trio.fail_after(PATIENCE):
        return created["taskId"], await watcher.until(created["taskId"], "input_required")


async def test_a_task_created_on_one_process_resolves_at_once_on_the_other(
    postgres_url: str, tmp_path: Path
) -> None:
    """Spec-mandated (SEP-2663 §Task Creation, durable creation; T-23): a tasks/get sent
    to another process right after the CreateTaskResult resolves the task."""
    async with two_servers(postgres_url, tmp_path) as ((_, a), (_, b)):
        created = await a.call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 30}})
        task = await b.call("tasks/get", {"taskId": created["taskId"]})
        assert task["taskId"] == created["taskId"]
        assert task["status"] == "working"
        assert task["createdAt"] == created["createdAt"]


async def test_an_update_on_one_process_wakes_the_worker_on_the_other(
    postgres_url: str, tmp_path: Path
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests; T-45): tasks/update served by B
    completes the fulfilment before it answers, and wakes the worker parked on A."""
    async with two_servers(postgres_url, tmp_path) as ((_, a), (_, b)):
        task_id, _ = await park(a, b, "a.txt")
        await b.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {"confirm-delete": CONFIRM}}
        )
        after = await a.call("tasks/get", {"taskId": task_id})
        assert after["status"] in {"working", "completed"}
        assert "confirm-delete" not in after.get("inputRequests", {})
        with trio.fail_after(PATIENCE):
            done = await b.until(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "Delete confirmed: true"


async def test_a_cancel_on_one_process_stops_the_worker_on_the_other(
    postgres_url: str, tmp_path: Path
) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation; T-49, T-66): tasks/cancel served by B
    writes cancelled; the worker on A stops, and A writes nothing for the task after:
    past the time the job would have finished, the task is as the cancel left it."""
    async with two_servers(postgres_url, tmp_path) as ((_, a), (_, b)):
        created = await a.call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 1}})
        task_id = created["taskId"]
        await b.call("tasks/cancel", {"taskId": task_id})
        cancelled = await a.call("tasks/get", {"taskId": task_id})
        assert cancelled["status"] == "cancelled"
        # Longer than the job: had the worker on A gone on, it would have finished.
        await trio.sleep(2)
        assert await b.call("tasks/get", {"taskId": task_id}) == cancelled
    assert f"task {task_id} completed" not in (tmp_path / "a.log").read_text()


async def test_a_listen_stream_on_one_process_hears_changes_made_on_the_other(
    postgres_url: str, tmp_path: Path
) -> None:
    """Spec-mandated (SEP-2663 §Task Status Notifications; T-51, T-52): a listen stream
    on B receives notifications/tasks for changes made on A, in order, each carrying
    what tasks/get returns; a state superseded before the stream sent it may be left
    out (spec-notes §19)."""
    async with two_servers(postgres_url, tmp_path) as ((_, a), (_, b)):
        task_id, _ = await park(a, a, "b.txt")
        with trio.fail_after(PATIENCE):
            async with listening(b, task_id) as incoming:
                ack = await anext(incoming)
                assert ack["params"]["notifications"] == {"taskIds": [task_id]}
                await a.call(
                    "tasks/update",
                    {"taskId": task_id, "inputResponses": {"confirm-delete": CONFIRM}},
                )
                seen = await until_completed(incoming)
        final = await a.call("tasks/get", {"taskId": task_id})
    statuses = [(m["params"]["taskId"], m["params"]["status"]) for m in seen]
    assert statuses[:-1] in ([(task_id, "working")], [])
    completed = {k: v for k, v in seen[-1]["params"].items() if k != "_meta"}
    assert completed == {k: v for k, v in final.items() if k not in ("_meta", "resultType")}


async def test_a_task_whose_process_is_killed_is_recovered_by_the_other(
    postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (recovery, at least once; spec-notes §44): when A is
    killed while its task runs, B claims the task once A's lease expires, runs it
    again, and it completes."""
    async with two_servers(postgres_url, tmp_path, lease="1") as ((process, a), (_, b)):
        created = await a.call(
            "tools/call", {"name": "slow_compute", "arguments": {"seconds": 1, "label": "again"}}
        )
        process.send_signal(signal.SIGKILL)
        with trio.fail_after(PATIENCE):
            await process.wait()
            done = await b.until(created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "Completed again"
    assert f"task {created['taskId']} recovered" in (tmp_path / "b.log").read_text()


async def test_a_recovery_sends_a_listen_stream_no_notification_it_already_had(
    postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (listen streams get each change once; SEP-2663 §Task Status
    Notifications): a stream on B watches a task parked on A; A is killed and B
    claims the task, which changes its lease and not the task, and runs it again,
    asking nothing new. The stream gets no notification of the claim: the next
    one it gets is the change the answer made."""
    async with two_servers(postgres_url, tmp_path, "1") as ((process, a), (_, b)):
        task_id, parked = await park(a, b, "c.txt")
        with trio.fail_after(PATIENCE):
            async with listening(b, task_id) as incoming:
                await anext(incoming)  # the acknowledgement
                process.send_signal(signal.SIGKILL)
                await process.wait()
                # A claim shows nowhere on the wire (that is the point): B's log tells.
                recovered = f"task {task_id} recovered"
                while recovered not in (tmp_path / "b.log").read_text():  # noqa: ASYNC110
                    await trio.sleep(0.05)
                assert await b.call("tasks/get", {"taskId": task_id}) == parked
                await b.call(
                    "tasks/update",
                    {"taskId": task_id, "inputResponses": {"confirm-delete": CONFIRM}},
                )
                seen = await until_completed(incoming)
    assert [m["params"]["status"] for m in seen[:-1]] in (["working"], [])


async def test_a_database_restart_is_a_retryable_error_then_serving_resumes(
    postgres: Postgres, postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (a store that cannot be reached; spec-notes §45): while the database is down,
    requests that need it answer -32603 with data.retryable true and no detail; once
    it is back, both servers serve again by themselves; no task is lost, and a parked
    task still completes when answered on the other process."""
    async with two_servers(postgres_url, tmp_path) as ((_, a), (_, b)):
        task_id, before = await park(a, a, "c.txt")
        unavailable = {
            "code": -32603,
            "message": "The task store is unavailable",
            "data": {"retryable": True},
        }
        await trio.to_thread.run_sync(postgres.stop)
        try:
            for peer in (a, b):
                body = await raw_call(peer, "tasks/get", {"taskId": task_id})
                assert body["error"] == unavailable
        finally:
            await trio.to_thread.run_sync(postgres.start)
        with trio.fail_after(PATIENCE):
            for peer in (a, b):
                while "error" in (body := await raw_call(peer, "tasks/get", {"taskId": task_id})):
                    assert body["error"] == unavailable
                    await trio.sleep(0.05)
                assert body["result"] == before
        await b.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {"confirm-delete": CONFIRM}}
        )
        with trio.fail_after(PATIENCE):
            await a.until(task_id, "completed")


async def raw_call(peer: Peer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """One JSON-RPC call; the whole response body, error or result."""
    peer.next_id += 1
    message = request(method, params, request_id=peer.next_id, capabilities=TASKS)
    extra = {"mcp-name": params["taskId"]} if "taskId" in params else {}
    response = await peer.http.post(peer.url, json=message, headers=headers(message, **extra))
    body: dict[str, Any] = json.loads(response.content)
    return body


async def test_a_worker_that_finishes_while_the_database_is_down_writes_once_it_is_back(
    postgres: Postgres, postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (a store that cannot be reached; recovery at least once): a
    worker on A that ends while the database is down keeps its result until the
    database is back and then writes it; the task is neither lost nor run again,
    and A serves on."""
    async with two_servers(postgres_url, tmp_path) as ((process, a), (_, b)):
        created = await a.call(
            "tools/call", {"name": "slow_compute", "arguments": {"seconds": 1, "label": "once"}}
        )
        await trio.to_thread.run_sync(postgres.stop)
        try:
            # Longer than the job: its worker ends while nothing can be written.
            await trio.sleep(2)
        finally:
            await trio.to_thread.run_sync(postgres.start)
        with trio.fail_after(PATIENCE):
            done = await settled(b, created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "Completed once"
        assert process.returncode is None
        assert (await a.call("server/discover", {}))["resultType"] == "complete"
    for log in ("a.log", "b.log"):
        assert "recovered" not in (tmp_path / log).read_text()


async def settled(peer: Peer, task_id: str, status: str) -> dict[str, Any]:
    """Like ``Peer.until``, riding out retryable store errors while the database returns."""
    while True:
        body = await raw_call(peer, "tasks/get", {"taskId": task_id})
        if "error" in body:
            assert body["error"]["data"] == {"retryable": True}
        elif body["result"]["status"] == status:
            result: dict[str, Any] = body["result"]
            return result
        await trio.sleep(0.05)


async def test_a_database_down_longer_than_the_lease_takes_no_task_from_its_live_holder(
    postgres: Postgres, postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (docs/task-stores.md, "An outage longer than the lease"): with
    leases of 1 s and the database down for 3 s, no lease could be renewed, yet A
    was alive throughout: once the database is back, A renews before B claims, so
    A's running and parked tasks each complete once on A, and B recovers none."""
    async with two_servers(postgres_url, tmp_path, "1") as ((_, a), (_, b)):
        running = [
            (await a.call("tools/call", slow_compute(6, "once")))["taskId"] for _ in range(4)
        ]
        parked, _ = await park(a, a, "d.txt")
        await trio.to_thread.run_sync(postgres.stop)
        try:
            await trio.sleep(3)  # three leases: every one of them lapses
        finally:
            await trio.to_thread.run_sync(postgres.start)
        with trio.fail_after(PATIENCE):
            await settled(b, parked, "input_required")
        await b.call(
            "tasks/update", {"taskId": parked, "inputResponses": {"confirm-delete": CONFIRM}}
        )
        with trio.fail_after(PATIENCE):
            for task_id in [*running, parked]:
                await settled(b, task_id, "completed")
    a_log = (tmp_path / "a.log").read_text()
    for task_id in [*running, parked]:
        assert a_log.count(f"task {task_id} completed") == 1, a_log
    for log in ("a.log", "b.log"):
        text = (tmp_path / log).read_text()
        assert "recovered" not in text, text
        assert "cannot run again" not in text, text


def slow_compute(seconds: float, label: str) -> dict[str, Any]:
    return {"name": "slow_compute", "arguments": {"seconds": seconds, "label": label}}
