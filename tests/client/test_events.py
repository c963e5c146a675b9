"""A task's event log followed across cuts, against a server that misbehaves on cue.

Rules of this file: the peer is a small ASGI app that answers each
``tasks/stream`` with the messages its script gives (as SSE, the response
last or missing, as a cut leaves it) and each ``tasks/get`` with the next
snapshot, served to the client's real :class:`Connection` and
:class:`HttpTransport` through httpx's ASGI transport. What the follower
handed on, and the ``after`` each stream sent, are asserted whole.
"""

from __future__ import annotations

import io
import json
import socket
from collections.abc import MutableMapping
from typing import Any

import attrs
import httpx
import pytest
import trio

from presa_trio.client.connection import Connection
from presa_trio.client.errors import Unreachable
from presa_trio.client.events import Lost, TaskEvents
from presa_trio.client.output import Console
from presa_trio.client.task_stream import follow_refused
from presa_trio.client.transport import HttpTransport
from presa_trio.wire.models import JSONObject
from presa_trio.wire.sse import encode_event
from presa_trio.wire.tasks import EVENT_NOTIFICATION, EVENTS_GONE, STATUS_EVENT
from tests.client.scripted import request_of

URL = "http://peer.test/mcp"
TASK = "task-1"
END: dict[str, Any] = {"result": {}}


def event(seq: int, kind: str = "com.example.step", **payload: Any) -> dict[str, Any]:
    params = {"seq": seq, "taskId": TASK, "type": kind, "payload": payload}
    return {"jsonrpc": "2.0", "method": EVENT_NOTIFICATION, "params": params}


def gone(earliest: int) -> dict[str, Any]:
    data = {"reason": "events_gone", "taskId": TASK, "earliestSeq": earliest}
    return {
        "error": {
            "code": EVENTS_GONE,
            "message": "Task events are no longer available",
            "data": data,
        }
    }


@attrs.define
class ScriptedPeer:
    """Answers each ``tasks/stream`` with the next of ``streams``, each ``tasks/get`` with
    the next of ``snapshots``; keeps every request's params."""

    streams: list[list[dict[str, Any]]]
    snapshots: list[dict[str, Any]] = attrs.field(factory=list)
    received: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        request = await request_of(receive)
        params = {k: v for k, v in request["params"].items() if k != "_meta"}
        self.received.append((request["method"], params))
        if request["method"] == "tasks/stream":
            chunks = [
                encode_event(json.dumps(self.addressed(m, request["id"])).encode(), event="message")
                for m in self.streams.pop(0)
            ]
            content_type = b"text/event-stream"
        else:
            reply = {"result": self.snapshots.pop(0)}
            chunks = [json.dumps(self.addressed(reply, request["id"])).encode()]
            content_type = b"application/json"
        headers = [(b"content-type", content_type)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    @staticmethod
    def addressed(message: dict[str, Any], request_id: Any) -> dict[str, Any]:
        """A notification as it is; a response with the request's id."""
        if "method" in message:
            return message
        return {"jsonrpc": "2.0", "id": request_id, **message}

    def afters(self) -> list[int | None]:
        return [params.get("after") for method, params in self.received if method == "tasks/stream"]


async def ignore(item: dict[str, Any] | Lost) -> None:
    """A handler that takes each item and does nothing with it."""


async def follow(peer: ScriptedPeer) -> tuple[list[dict[str, Any] | Lost], dict[str, Any]]:
    """Everything a follower of ``TASK`` hands on, and the task as its log ended."""
    handed: list[dict[str, Any] | Lost] = []

    async def hand(item: dict[str, Any] | Lost) -> None:
        handed.append(item)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
        connection = Connection(HttpTransport(URL, http), timeout_s=5)
        ended = await TaskEvents(connection, TASK, retry_s=0).follow(hand)
    return handed, ended


async def test_a_replay_is_deduplicated_and_every_loss_is_handed_on() -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics: clients "MUST tolerate
    duplicate delivery after reconnect and SHOULD de-duplicate events by (taskId,
    seq)"; §events_gone error): a stream cut before its response is resumed after
    the last event handed on; an event sent again is dropped; events_gone is a loss
    up to earliestSeq and a resume after earliestSeq - 1; a seq that skips ahead
    without it is a loss too; the closing status event ends the log."""
    closing = event(7, STATUS_EVENT, status="completed", revision=3)
    peer = ScriptedPeer(
        [
            [event(0), event(1)],  # cut: no response
            [event(1), event(2), gone(5)],
            [event(5), closing, END],
        ]
    )
    handed, ended = await follow(peer)
    assert handed == [
        event(0)["params"],
        event(1)["params"],
        event(2)["params"],
        Lost(TASK, 3, 4, 5),
        event(5)["params"],
        Lost(TASK, 6, 6, None),
        closing["params"],
    ]
    assert peer.afters() == [None, 1, 4]
    assert ended == {"taskId": TASK, "status": "completed"}
    assert [method for method, _ in peer.received].count("tasks/get") == 0


async def test_a_stream_that_ends_before_the_closing_event_asks_tasks_get_what_to_do() -> None:
    """Spec-mandated (SEP-2694 §tasks/stream: "Receivers MAY close a stream before a
    task reaches a terminal state. Clients MAY call tasks/stream again using the
    latest fully processed sequence number as after"): an end while the task works
    is resumed; once tasks/get reads it terminal, one more stream delivers the rest
    and its end is the log's."""
    completed = {"taskId": TASK, "status": "completed", "result": {"content": []}}
    peer = ScriptedPeer(
        [[event(0), END], [END], [event(1), END]],
        [{"taskId": TASK, "status": "working"}, completed],
    )
    handed, ended = await follow(peer)
    assert handed == [event(0)["params"], event(1)["params"]]
    assert peer.afters() == [None, 0, 0]
    assert ended == completed


async def test_a_server_unreachable_past_the_timeout_ends_the_follow(autojump_clock: Any) -> None:
    """presa-defined (docs/client.md, "Following a task's events"): the follower tries
    again every retry interval while the server cannot be reached, and gives up once
    it has been unreachable for the connection's timeout."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/mcp"
    started = trio.current_time()
    async with httpx.AsyncClient() as http:
        connection = Connection(HttpTransport(closed, http), timeout_s=30)
        with pytest.raises(Unreachable):
            await TaskEvents(connection, TASK, retry_s=1).follow(ignore)
    assert trio.current_time() - started >= 30  # the clock the follower waited on


def refused() -> dict[str, Any]:
    """A stream refused for now: presa's retryable -32603 (spec-notes §31)."""
    data = {"retryable": True, "limit": "--task-events-max-streams-per-client"}
    return {"error": {"code": -32603, "message": "Too many streams", "data": data}}


async def followed_through_refusals(
    peer: ScriptedPeer, *, timeout_s: float, retry_s: float
) -> tuple[JSONObject, list[str]]:
    """A task's events followed from ``peer``, its refusals waited out: how it ended, and
    each wait the client said it would make ("10 s")."""
    said = io.StringIO()
    console = Console(err=said, live=False, colour=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
        connection = Connection(HttpTransport(URL, http), timeout_s=timeout_s)
        ended = await follow_refused(TaskEvents(connection, TASK, retry_s=retry_s), ignore, console)
    return ended, [line.rpartition("trying again in ")[2] for line in said.getvalue().splitlines()]


async def test_a_refused_stream_waits_no_longer_than_the_longest_retry(
    autojump_clock: Any,
) -> None:
    """presa-defined (docs/client.md, Following a task's events): a stream refused for
    now is tried again after a wait that doubles from the task's poll interval up to
    10 s (``LONGEST_RETRY_S``), never past it, the first wait too: a task polled every
    minute is tried again after 10 s, as every later refusal is."""
    closing = event(0, STATUS_EVENT, status="completed", revision=1)
    peer = ScriptedPeer([[refused()], [refused()], [closing, END]])
    ended, waits = await followed_through_refusals(peer, timeout_s=600, retry_s=60)
    assert ended == {"taskId": TASK, "status": "completed"}
    assert waits == ["10 s", "10 s"]


async def test_refusals_with_events_between_them_are_counted_afresh(
    autojump_clock: Any,
) -> None:
    """presa-defined (docs/client.md, Following a task's events): only refusals that go on
    for the connection's ``--timeout`` with no event between end the follow; a stream
    that brought events before it was refused starts the count, and the wait, again."""
    closing = event(2, STATUS_EVENT, status="completed", revision=1)
    peer = ScriptedPeer(
        [[refused()], [refused()], [event(0), event(1), refused()], [refused()], [closing, END]]
    )
    ended, waits = await followed_through_refusals(peer, timeout_s=3, retry_s=1)
    assert ended == {"taskId": TASK, "status": "completed"}
    assert waits == ["1 s", "2 s", "1 s", "2 s"]


async def test_another_tasks_events_on_the_stream_are_not_handed_on() -> None:
    """Spec-mandated (SEP-2694 §notifications/tasks/event: each event names its task; a
    ``tasks/stream`` is for the task it names): an event of another task on the stream,
    whatever its seq, is neither handed on nor counted in this task's order."""
    other = event(0)
    other["params"] = {**other["params"], "taskId": "task-2"}
    closing = event(1, STATUS_EVENT, status="completed", revision=1)
    peer = ScriptedPeer([[other, event(0), closing, END]])
    handed, ended = await follow(peer)
    assert handed == [event(0)["params"], closing["params"]]
    assert ended == {"taskId": TASK, "status": "completed"}
