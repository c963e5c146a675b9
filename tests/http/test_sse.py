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
from presa_trio.http.exchange import Exchange
from presa_trio.http.sse import PING_INTERVAL_S, ResponseWriter
from presa_trio.server import Connection, RequestContext, Server
from presa_trio.tasks import Policy, TaskRunner, TasksExtension
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, headers_for, meta, request, running
from presa_trio.testing.driver import http_scope
from presa_trio.wire.sse import Comment, EventStreamParser, parse_events
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
    items = EventStreamParser().feed(response.body)
    assert [item for item in items if isinstance(item, Comment)] == [Comment("ping")] * 2
    events = parse_events(response.body)
    assert all(event.type == "message" and event.last_event_id == "" for event in events)
    for event in events:
        compact = json.dumps(json.loads(event.data), separators=(",", ":"), ensure_ascii=False)
        assert event.data == compact
    assert response.body.count(b"data:") == len(events)  # one data line per event
    methods = [json.loads(event.data).get("method") for event in events]
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


def running_tasks() -> list[trio.lowlevel.Task]:
    """Every trio task now running, from the root down."""
    root = trio.lowlevel.current_root_task()
    assert root is not None
    found, pending = [], [root]
    while pending:
        task = pending.pop()
        found.append(task)
        pending += [child for nursery in task.child_nurseries for child in nursery.child_tasks]
    return found


def short_name(task: trio.lowlevel.Task) -> str:
    return task.name.rsplit(".", 1)[-1]


def task_tree() -> list[str]:
    """The names of the trio tasks now running, sorted."""
    return sorted(short_name(task) for task in running_tasks())


def request_helpers() -> tuple[trio.lowlevel.Task, list[str]]:
    """The (one) task that serves a request, and the names of its helpers."""
    found = []
    for task in running_tasks():
        children = [child for nursery in task.child_nurseries for child in nursery.child_tasks]
        if any(short_name(child) == "watch_disconnect" for child in children):
            found.append((task, sorted(short_name(child) for child in children)))
    (serving,) = found
    return serving


async def test_an_exchange_leaves_no_task_behind(autojump_clock: MockClock) -> None:
    """presa-defined (http/exchange.py, http/sse.py): an exchange's disconnect watcher,
    and an event stream's keep-alive, run in a nursery of the task serving the request,
    never in the server-lifetime nursery; once the exchange ends, whether the response
    completed (its helpers end with it, whether or not the client has left yet) or the
    client closed the stream halfway through it, the trio tasks are exactly those that
    ran before it."""
    app = McpApp.for_server(slow_server())
    params = {"name": "chatty", "_meta": meta(progressToken="t")}
    with trio.fail_after(3 * LONG):  # a keep-alive left behind pings forever
        async with running(app) as client:
            await trio.testing.wait_all_tasks_blocked()
            before = task_tree()
            async with client.stream(request("tools/call", params)) as whole:
                await whole.read_to_end()
                await trio.testing.wait_all_tasks_blocked()
                # Complete, the exchange has ended its helpers before the client leaves.
                assert not {"keep_alive", "watch_disconnect"} & set(task_tree())
            assert task_tree() == before
            async with client.stream(request("tools/call", params)) as stream:
                assert (await stream.next_message())["method"] == "notifications/progress"
                assert isinstance(await stream.next_event(), Comment)  # the keep-alive runs
                serving, helpers = request_helpers()
                assert helpers == ["keep_alive", "watch_disconnect"]
                assert app.lifetime is not None
                assert serving is not app.lifetime.parent_task
                assert serving not in app.lifetime.child_tasks
            assert task_tree() == before


async def test_a_client_that_leaves_a_quiet_handler_cancels_it(
    autojump_clock: MockClock,
) -> None:
    """Spec-mandated (basic/patterns/cancellation §Transport-Specific Cancellation: a
    client disconnect is the cancellation of its request): a handler that has sent
    nothing yet is cancelled the moment its client leaves, and the exchange's tasks
    are gone when the app returns."""
    server = Server("quiet", "1.0.0")
    cancelled = trio.Event()

    @server.tool(description="Waits until cancelled.")
    async def wait(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    app = McpApp.for_server(server)
    message = request("tools/call", {"name": "wait"})
    body = json.dumps(message).encode()
    left = trio.Event()
    events = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        if events:
            return events.pop()
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        raise AssertionError(f"nothing is sent to a client that left: {event}")

    scope = http_scope(headers_for(message))
    async with running(app):
        await trio.testing.wait_all_tasks_blocked()
        before = task_tree()
        with trio.fail_after(LONG):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(app, scope, receive, send)  # type: ignore[arg-type]
                await trio.sleep(60)
                assert not cancelled.is_set()
                left.set()
                await cancelled.wait()
                at = trio.current_time()
        assert trio.current_time() == at
        assert task_tree() == before


async def test_a_task_stream_with_nothing_to_send_yet_is_kept_alive(
    autojump_clock: MockClock,
) -> None:
    """Spec-permitted (streamable-http §Receiving Messages: a long-lived stream is
    kept alive with SSE comments in quiet periods; SEP-2694 §tasks/stream, "The
    tasks/stream request remains active while the stream is open"): a `tasks/stream`
    resumed after the last event of a task that goes quiet sends its headers and a
    `: ping` once the keep-alive interval has passed, as an open stream does, rather
    than no byte at all until the task's next event; the events follow on the same
    stream, to its result."""
    server = Server("streams", "1.0.0")
    tasks = TasksExtension(TaskRunner())
    server.add_extension(tasks)
    tasks.enable_events(TaskEventLog())
    go_on = trio.Event()

    @tasks.tool(Policy.REQUIRED, description="Waits until told, silently")
    async def parked(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await go_on.wait()
        return "done"

    with trio.fail_after(LONG):
        async with running(McpApp.for_server(server)) as client:
            created = await client.call_tool("parked", {}, capabilities=TASKS_CAPABILITIES)
            message = request(
                "tasks/stream",
                {"taskId": created["taskId"], "after": 0},
                capabilities=TASKS_CAPABILITIES,
            )
            async with client.stream(message) as stream:
                assert stream.response.headers["content-type"] == "text/event-stream"
                assert await stream.next_event() == Comment("ping")
                go_on.set()
                status = await stream.next_message()
                assert (status["params"]["seq"], status["params"]["payload"]["status"]) == (
                    1,
                    "completed",
                )
                assert (await stream.next_message())["result"]["resultType"] == "complete"


async def test_nothing_is_written_after_the_response_event(autojump_clock: MockClock) -> None:
    """Spec-mandated (streamable-http §Receiving Messages: the final response ends the
    stream): a keep-alive ping that falls due while the response event is still being
    written (the client's window holds it back) waits for it, and is then dropped: no
    message follows the one that ends the body."""
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message["more_body"]:
            await trio.sleep(2 * PING_INTERVAL_S)  # a slow reader: the ping falls due

    async with trio.open_nursery() as nursery:
        writer = ResponseWriter(send, nursery)
        writer.start()
        await writer.notify(b'{"jsonrpc":"2.0","method":"notifications/progress"}')
        await trio.testing.wait_all_tasks_blocked()  # the keep-alive waits for its interval
        await writer.finish(b'{"jsonrpc":"2.0","id":1,"result":{}}')
        writer.close()
        await trio.sleep(2 * PING_INTERVAL_S)
        nursery.cancel_scope.cancel()
    assert [message["type"] for message in sent] == ["http.response.start"] + [
        "http.response.body"
    ] * 2
    assert sent[-1]["more_body"] is False
    assert [event.data for event in parse_events(b"".join(m["body"] for m in sent[1:]))] == [
        '{"jsonrpc":"2.0","method":"notifications/progress"}',
        '{"jsonrpc":"2.0","id":1,"result":{}}',
    ]


@pytest.mark.parametrize("streaming", [False, True], ids=["plain-json", "event-stream"])
async def test_a_disconnect_reported_during_the_last_write_cancels_nothing(
    autojump_clock: MockClock, streaming: bool
) -> None:
    """Spec-mandated (streamable-http §Cancellation: closing the stream cancels the
    request, not a response already given): the server may report the stream's end
    from inside the app's last ``send``, as hypercorn does when it closes it; that
    disconnect is the normal end, so the last ``send`` is not interrupted."""
    disconnected = trio.Event()
    completed: list[bool] = []

    async def send(message: Any) -> None:
        if message["type"] == "http.response.body" and not message["more_body"]:
            disconnected.set()  # the server ends the stream while it writes the last bytes
            await trio.sleep(1)
            completed.append(True)

    async def receive() -> Any:
        await disconnected.wait()
        return {"type": "http.disconnect"}

    async with trio.open_nursery() as nursery:
        writer = ResponseWriter(send, nursery)
        Exchange(receive, nursery, Connection(object())).watch_disconnect(writer)
        writer.start()
        if streaming:
            await writer.notify(b'{"jsonrpc":"2.0","method":"notifications/progress"}')
        await writer.finish(b'{"jsonrpc":"2.0","id":1,"result":{}}')
        writer.close()
    assert completed == [True]


async def test_a_handler_cancelled_before_its_first_notification_answers_plain_json() -> None:
    """presa-defined (http/sse.py): a handler whose own deadline passed before its first
    notification gets its cancel before the event stream opens, so nothing of a stream
    is sent and its result still goes out as one plain JSON body."""
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)
        await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        writer = ResponseWriter(send, nursery)
        writer.start()
        with trio.CancelScope() as deadline:
            deadline.cancel()
            await writer.notify(b'{"jsonrpc":"2.0","method":"notifications/progress"}')
        assert sent == []
        await writer.finish(b'{"jsonrpc":"2.0","id":1,"result":{}}')
        writer.close()
    start, body = sent
    assert (b"content-type", b"application/json") in start["headers"]
    assert body["body"] == b'{"jsonrpc":"2.0","id":1,"result":{}}'


async def test_a_disconnect_watcher_that_fails_ends_its_request(autojump_clock: MockClock) -> None:
    """presa-defined (http/exchange.py, the exchange nursery's failure policy): a watcher
    whose ``receive`` fails can no longer tell when the client leaves, so it ends its
    request at once, rather than leave a handler running that nobody may wait for."""

    async def receive() -> Any:
        raise RuntimeError("the server's receive failed")

    async def send(message: Any) -> None:
        await trio.lowlevel.checkpoint()

    ended_at: list[float] = []
    async with trio.open_nursery() as nursery:
        writer = ResponseWriter(send, nursery)
        Exchange(receive, nursery, Connection(object())).watch_disconnect(writer)
        writer.start()
        with trio.move_on_after(LONG):
            try:
                await trio.sleep_forever()  # the handler, waiting for what never comes
            finally:
                ended_at.append(trio.current_time())
    assert ended_at == [0.0]
