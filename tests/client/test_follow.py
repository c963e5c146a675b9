"""A task followed to its end, against a server whose every answer is scripted.

Rules of this file: the peer is a small ASGI app that answers each method
with the next of the messages its script gives for it (as SSE, the response
last), served to the client's real :class:`Connection` and
:class:`HttpTransport` through httpx's ASGI transport. What the follower
returns, and the requests that reached the peer, are asserted whole.
"""

from __future__ import annotations

import io
import json
from collections.abc import MutableMapping
from typing import Any

import attrs
import httpx
import pytest
import trio
from trio.testing import MockClock

from presa_trio.client.answers import Answerer
from presa_trio.client.connection import Connection
from presa_trio.client.errors import EXIT_CANCELLED, ProtocolFailure
from presa_trio.client.follow import TaskFollower, ended_status
from presa_trio.client.listen import ACKNOWLEDGED
from presa_trio.client.output import Console
from presa_trio.client.transport import HttpTransport
from presa_trio.wire.sse import encode_event
from presa_trio.wire.tasks import TASK_NOTIFICATION
from tests.client.scripted import request_of

URL = "http://peer.test/mcp"
TASK = "task-1"
#: A task that has just been created, polled again at once.
CREATED = {"resultType": "task", "taskId": TASK, "status": "working", "pollIntervalMs": 20}


def snapshot(status: str, task_id: str = TASK, **more: Any) -> dict[str, Any]:
    return {"taskId": task_id, "status": status, **more}


def done(said: str, task_id: str = TASK) -> dict[str, Any]:
    return snapshot("completed", task_id, result={"content": [{"type": "text", "text": said}]})


def notified(task: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": TASK_NOTIFICATION, "params": task}


def acknowledged(*task_ids: str) -> dict[str, Any]:
    params = {"notifications": {"taskIds": list(task_ids)}}
    return {"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": params}


@attrs.define
class ScriptedPeer:
    """Answers each method with the next of ``script[method]``: a result, or a list of
    notifications and then a result (``None`` for a stream that ends without one)."""

    script: dict[str, list[Any]]
    received: list[str] = attrs.field(factory=list)
    #: When each request came, on the clock of the test's run.
    times: list[float] = attrs.field(factory=list)

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        request = await request_of(receive)
        self.received.append(request["method"])
        self.times.append(trio.current_time())
        answer = self.script[request["method"]].pop(0)
        *notifications, result = answer if isinstance(answer, list) else [answer]
        messages = [*notifications, {"jsonrpc": "2.0", "id": request["id"], "result": result}]
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for message in messages:
            chunk = encode_event(json.dumps(message).encode(), event="message")
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def followed(peer: ScriptedPeer, task: dict[str, Any], listen: bool) -> dict[str, Any]:
    """What a follower of ``task`` returns once it has ended."""
    console = Console(out=io.StringIO(), err=io.StringIO(), live=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
        connection = Connection(HttpTransport(URL, http), timeout_s=5)
        follower = TaskFollower(connection, Answerer(), console, listen=listen)
        return await follower.follow(task)


async def test_only_the_followed_tasks_notifications_are_its_status() -> None:
    """Spec-mandated (SEP-2663 §Task Status Notifications: each notification names its
    task by ``taskId``): on a listen that agreed to the task, another task's
    ``completed`` does not end this one; its own terminal notification, which carries
    the result, does, with no ``tasks/get`` more than the one for its state at the
    start."""
    peer = ScriptedPeer(
        {
            "server/discover": [{"capabilities": {}}],
            "subscriptions/listen": [
                [
                    acknowledged(TASK),
                    notified(done("another's", "task-2")),
                    notified(snapshot("completed", "task-2")),
                    notified(done("ours")),
                    {},
                ]
            ],
            "tasks/get": [snapshot("working", pollIntervalMs=20), done("polled")],
        }
    )
    ended = await followed(peer, CREATED, listen=True)
    assert ended == done("ours")
    assert peer.received == ["server/discover", "subscriptions/listen", "tasks/get"]


async def test_a_listen_that_agrees_to_none_of_the_task_is_left_for_polling() -> None:
    """Spec-mandated (basic/patterns/subscriptions §Acknowledgment: the acknowledgement
    names what the server agreed to; SEP-2663 §Task Polling): a listen whose
    acknowledgement does not name the task brings none of its notifications; the
    client polls ``tasks/get`` instead, and what else that stream carries is not read."""
    peer = ScriptedPeer(
        {
            "server/discover": [{"capabilities": {}}],
            "subscriptions/listen": [[acknowledged(), notified(done("not agreed")), {}]],
            "tasks/get": [snapshot("working", pollIntervalMs=20), done("polled")],
        }
    )
    ended = await followed(peer, CREATED, listen=True)
    assert ended == done("polled")
    assert peer.received == ["server/discover", "subscriptions/listen", "tasks/get", "tasks/get"]


async def test_a_failed_task_without_its_error_is_asked_for_it() -> None:
    """Spec-mandated (SEP-2663 §Tasks: only the DetailedTask ``tasks/get`` answers must
    carry ``error`` when ``failed``): a task created already ``failed``, with no error,
    is asked for it once."""
    error = {"code": -32603, "message": "broke"}
    peer = ScriptedPeer({"tasks/get": [snapshot("failed", error=error)]})
    ended = await followed(peer, {**CREATED, "status": "failed"}, listen=False)
    assert ended == snapshot("failed", error=error)
    assert peer.received == ["tasks/get"]


async def test_a_task_get_that_reads_no_end_is_no_outcome() -> None:
    """Spec-mandated (SEP-2663 §Task Status Lifecycle: a terminal status never changes):
    a task created ``completed`` whose ``tasks/get`` answers ``working`` is the server's
    mistake, not an outcome without a result."""
    peer = ScriptedPeer({"tasks/get": [snapshot("working")]})
    with pytest.raises(ProtocolFailure, match="without its outcome"):
        await followed(peer, {**CREATED, "status": "completed"}, listen=False)


async def test_cancel_waits_for_the_task_to_read_cancelled() -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation: cancellation may be eventual; the
    task's own status says when it took): after ``tasks/cancel``, ``tasks/get`` is asked
    until the task reads terminal, and that snapshot is what cancel returns; its exit
    status is 130 (docs/client.md, exit statuses)."""
    peer = ScriptedPeer(
        {"tasks/cancel": [{}], "tasks/get": [snapshot("working"), snapshot("cancelled")]}
    )
    console = Console(out=io.StringIO(), err=io.StringIO(), live=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
        connection = Connection(HttpTransport(URL, http), timeout_s=5)
        ended = await TaskFollower(connection, Answerer(), console).cancel(TASK)
    assert ended == snapshot("cancelled")
    assert peer.received == ["tasks/cancel", "tasks/get", "tasks/get"]
    assert ended_status(ended, console) == EXIT_CANCELLED


async def test_an_input_request_answered_before_is_not_answered_again() -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests: clients deduplicate input requests
    by key): a task that still reads ``input_required`` with the key already answered,
    as it may until the server has taken the answer, gets no ``tasks/update`` for it,
    not even an empty one."""
    ask = {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "go?", "requestedSchema": {"type": "object"}},
    }
    waiting = snapshot("input_required", inputRequests={"k": ask}, pollIntervalMs=20)
    peer = ScriptedPeer({"tasks/update": [{}], "tasks/get": [waiting, done("answered")]})
    console = Console(out=io.StringIO(), err=io.StringIO(), live=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
        connection = Connection(HttpTransport(URL, http), timeout_s=5)
        answerer = Answerer(given={"k": {"action": "decline"}})
        follower = TaskFollower(connection, answerer, console, listen=False)
        ended = await follower.follow(waiting)
    assert ended == done("answered")
    assert peer.received == ["tasks/update", "tasks/get", "tasks/get"]


async def test_polling_waits_the_interval_the_task_names(autojump_clock: MockClock) -> None:
    """Spec-mandated (SEP-2663 §Task Polling: clients SHOULD respect ``pollIntervalMs``):
    ``tasks/get`` is asked again only once the interval the last snapshot named has
    passed (on a clock the test runs, so nothing waits): 5 s when it says 5000, and
    the shortest interval presa honours, 20 ms, when it says 1."""
    for interval, seconds in ((5000, 5.0), (1, 0.02)):
        working = snapshot("working", pollIntervalMs=interval)
        peer = ScriptedPeer({"tasks/get": [working, working, done("polled")]})
        started = trio.current_time()
        await followed(peer, {**CREATED, "pollIntervalMs": interval}, listen=False)
        gaps = [b - a for a, b in zip([started, *peer.times], peer.times, strict=False)]
        assert [round(gap, 6) for gap in gaps] == [seconds] * 3, interval
