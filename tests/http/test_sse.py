"""How a response is written: plain JSON for a quiet handler, SSE once it speaks.

Spec: 2026-07-28 basic/transports/streamable-http §Receiving Messages.

Time runs on Trio's autojump clock: the tools here wait minutes of virtual
time, never real time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from trio.testing import MockClock

from presa_trio.http.app import McpApp
from presa_trio.http.sse import PING_INTERVAL_S
from presa_trio.http.watch import WATCH_PERIOD_S
from presa_trio.server import RequestContext, Server
from presa_trio.testing import McpClient, meta, request, running
from tests.expect import result_of


def slow_server() -> Server:
    server = Server("slow", "1.0.0")

    @server.tool(description="Thinks for a long time, silently.")
    async def quiet(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await trio.sleep(10 * PING_INTERVAL_S)
        return "done"

    @server.tool(description="Reports progress, then thinks for a long time.")
    async def chatty(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.report_progress(1, total=2)
        await trio.sleep(2.5 * PING_INTERVAL_S)
        await ctx.report_progress(2, total=2)
        return "done"

    return server


#: A virtual-time bound for the slow tools (which sleep 10 intervals at most).
LONG = 20 * PING_INTERVAL_S


@pytest.fixture
async def slow() -> AsyncIterator[McpClient]:
    async with running(McpApp.for_server(slow_server())) as client:
        yield client


async def test_a_quiet_handler_is_answered_with_plain_json(
    slow: McpClient, autojump_clock: MockClock
) -> None:
    """Spec-mandated (streamable-http §Sending Messages: application/json or an SSE
    stream; H-30): a handler that sends nothing before its result gets
    one compact JSON body, however long it takes."""
    response = await slow.post(request("tools/call", {"name": "quiet"}), limit_s=LONG)
    assert response.headers["content-type"] == "application/json"
    assert b"\n" not in response.body
    assert result_of(response)["content"][0]["text"] == "done"


async def test_an_sse_stream_frames_one_compact_message_per_event(
    slow: McpClient, autojump_clock: MockClock
) -> None:
    """Spec-mandated (streamable-http §Receiving Messages: ``event: message``,
    one compact JSON per ``data:`` line, no ``id:`` field, Cache-Control no-cache and
    X-Accel-Buffering no); quiet stretches carry ``: ping`` comments, which the
    progress notifications precede and the response ends."""
    params = {"name": "chatty", "_meta": meta(progressToken="t")}
    response = await slow.post(request("tools/call", params), limit_s=LONG)
    assert response.status == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-accel-buffering"] == "no"
    blocks = response.body.decode().split("\r\n\r\n")
    assert blocks[-1] == ""
    events = [b for b in blocks[:-1] if not b.startswith(":")]
    pings = [b for b in blocks[:-1] if b.startswith(":")]
    assert pings == [": ping", ": ping"]
    for event in events:
        name, data = event.split("\r\n")
        assert name == "event: message"
        assert data.startswith("data: ")
        assert (
            json.dumps(json.loads(data[6:]), separators=(",", ":"), ensure_ascii=False) == data[6:]
        )
    methods = [json.loads(e.split("data: ")[1]).get("method") for e in events]
    assert methods == ["notifications/progress", "notifications/progress", None]


async def test_requests_with_equal_ids_are_answered_independently(
    slow: McpClient, autojump_clock: MockClock
) -> None:
    """Spec-mandated (basic/index §Statelessness: requests run concurrently on separate
    connections with equal ids; key nothing globally by id)."""
    answers: list[dict[str, Any]] = []

    async def ask(tool: str) -> None:
        params: dict[str, Any] = {"name": tool, "_meta": meta(progressToken=tool)}
        message = request("tools/call", params, request_id=1)
        answers.append(result_of(await slow.post(message, limit_s=LONG)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "quiet")
        nursery.start_soon(ask, "chatty")
    assert len(answers) == 2
    assert all(a["content"][0]["text"] == "done" for a in answers)


def exchange_tasks(app: McpApp) -> list[str]:
    """What runs for exchanges in the server-lifetime nursery: keep-alives, and watchers."""
    assert app.lifetime is not None
    names = []
    for task in app.lifetime.child_tasks:
        if task.name.endswith("ExchangeWatch.run"):
            names += [t.name for n in task.child_nurseries for t in n.child_tasks]
        else:
            names.append(task.name)
    return sorted(name.rsplit(".", 1)[-1] for name in names)


async def test_an_exchange_leaves_no_task_behind(autojump_clock: MockClock) -> None:
    """presa-defined (http/watch.py, http/sse.py): an exchange that lasts gets a
    disconnect watcher, and an event stream a keep-alive, both in the server-lifetime
    nursery; both end with their exchange, whether the response completed or the client
    closed the stream halfway through it."""
    app = McpApp.for_server(slow_server())
    params = {"name": "chatty", "_meta": meta(progressToken="t")}
    with trio.fail_after(3 * LONG):  # a keep-alive left behind pings forever
        async with running(app) as client:
            await client.post(request("tools/call", params), limit_s=LONG)
            await trio.testing.wait_all_tasks_blocked()
            assert exchange_tasks(app) == []
            async with client.stream(request("tools/call", params)) as stream:
                assert (await stream.next_message())["method"] == "notifications/progress"
                await trio.sleep(3 * WATCH_PERIOD_S)
                assert exchange_tasks(app) == ["keep_alive", "watch_disconnect"]
            await trio.testing.wait_all_tasks_blocked()
            assert exchange_tasks(app) == []
