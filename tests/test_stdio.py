"""The stdio edge in-process: lines in, lines out, one JSON message per line.

Rules of this file: the server reads Trio's in-memory streams to their end
(or a test closes its input); where a tool waits, the clock is virtual
(autojump); the fuzz runs each example in a fresh ``trio.run`` and server.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import attrs
import pytest
import trio
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from trio.testing import (
    MemorySendStream,
    MockClock,
    lockstep_stream_one_way_pair,
    memory_stream_one_way_pair,
)

from presa_trio.demo import build_server
from presa_trio.line_reader import LineReader
from presa_trio.server import Dispatcher, RequestContext, Server
from presa_trio.server.faults import ServerFailed
from presa_trio.server.subscriptions import MAX_PENDING_TOPICS
from presa_trio.stdio import EOF_GRACE_S, OUTPUT_BUFFER, StdioServer
from presa_trio.tasks import Policy, TaskRunner, TasksExtension
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.events import EventWindow, Retention
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.testing import TASKS_CAPABILITIES, meta, request
from presa_trio.wire import models
from presa_trio.wire.errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from presa_trio.wire.meta import META_LOG_LEVEL, META_SUBSCRIPTION_ID
from tests import wire_schema
from tests.e2e.failing_server import UnwatchableStore
from tests.expect import incident_of
from tests.fuzz_inputs import check_final, near_valid_messages, raw_bodies, read_sent
from tests.returning import server_returning
from tests.stdio_lines import serve_lines


async def test_a_result_json_cannot_hold_is_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """presa-defined (tools §Error Handling: an unexpected fault is -32603 with a generic message):
    a tool whose result holds NaN gets -32603 on stdio too, and the server goes on."""
    server = Server("nan", "1.0.0")

    @server.tool(description="Returns a value JSON cannot hold")
    async def broken(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        return models.CallToolResult([], structured_content={"x": float("nan")})

    out = await serve_lines(
        server,
        [
            json.dumps(request("tools/call", {"name": "broken"}, request_id=1)).encode() + b"\n",
            b"{not json\n",
            json.dumps(request("server/discover", request_id=2)).encode() + b"\n",
        ],
    )
    by_id = {m.get("id"): m for m in out}
    incident_of(by_id[1]["error"], caplog.text)
    assert by_id[None]["error"]["code"] == PARSE_ERROR
    assert by_id[2]["result"]["resultType"] == "complete"


async def test_a_result_whose_meta_is_no_object_is_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Spec-mandated (schema ``$defs.Result``: ``_meta`` is an object; basic/index §Error
    Codes: -32603; E-05): an extension's handler returning a result whose ``_meta`` is no
    object is answered -32603 on stdio, and the server goes on serving the other lines."""

    server = server_returning("odd", {"_meta": 5})
    out = await serve_lines(
        server,
        [
            json.dumps(request("odd/get", request_id=1)).encode() + b"\n",
            json.dumps(request("server/discover", request_id=2)).encode() + b"\n",
        ],
    )
    by_id = {m["id"]: m for m in out}
    incident_of(by_id[1]["error"], caplog.text)
    assert by_id[2]["result"]["resultType"] == "complete"


@pytest.mark.parametrize(
    "meta",
    [{}, {"_meta": {"progressToken": 1}}, {"_meta": {"io.modelcontextprotocol/clientInfo": {}}}],
    ids=["no-meta", "progress-token", "no-version"],
)
async def test_a_legacy_initialize_names_the_supported_versions(meta: dict[str, Any]) -> None:
    """Spec-mandated (versioning §Backward Compatibility with Initialization-Based Versions:
    SHOULD name the versions in any error to an initialize request, on any transport;
    stdio §Backward Compatibility; H-14): an initialize of the 2025 era, with or without a
    ``_meta`` of its own, is refused with -32602 naming 2026-07-28, and the server goes on."""
    legacy = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x"}}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": legacy | meta}
    out = await serve_lines(
        build_server(), [line(initialize), line(request("server/discover", request_id=2))]
    )
    by_id = {m["id"]: m for m in out}
    assert by_id[1]["error"]["code"] == INVALID_PARAMS
    assert by_id[1]["error"]["message"].endswith("supported protocol versions: 2026-07-28")
    assert by_id[2]["result"]["supportedVersions"] == ["2026-07-28"]


def waiting_server() -> Server:
    """A server whose ``wait`` tool sleeps for ``seconds`` (virtual under autojump)."""
    server = Server("waiting", "1.0.0")

    @server.tool(description="Sleeps, then answers")
    async def wait(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await trio.sleep(arguments["seconds"])
        return "waited"

    return server


def line(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\n"


def cancelled(request_id: Any) -> bytes:
    return line(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    )


WAIT_ONE_SECOND = line(request("tools/call", {"name": "wait", "arguments": {"seconds": 1}}))
#: Cancellations of request 1 whose other params break CancelledNotificationParams.
CANCEL_REASON_NUMBER = {"requestId": 1, "reason": 5}
CANCEL_REASON_NULL = {"requestId": 1, "reason": None}
CANCEL_META_STRING = {"requestId": 1, "_meta": "m"}


@pytest.mark.parametrize(
    ("request_id", "cancels"),
    [(1, True), (True, False), (1.0, False), ("1", False), ([1], False), ({"id": 1}, False)],
    ids=["integer", "true", "float", "string", "list", "object"],
)
async def test_a_cancellation_names_a_request_only_by_its_exact_id(
    autojump_clock: MockClock, request_id: Any, cancels: bool
) -> None:
    """Spec-mandated (basic/index §Requests: an id is a string or an integer;
    basic/transports/stdio §Cancellation): ``requestId: 1`` cancels request 1 (nothing
    more is sent for it); ``true``, ``1.0``, ``"1"``, a list or an object name no
    request, stop nothing, and the server goes on."""
    out = await serve_lines(waiting_server(), [WAIT_ONE_SECOND, cancelled(request_id)])
    assert [m["result"]["content"][0]["text"] for m in out] == ([] if cancels else ["waited"])


async def test_a_cancellation_is_logged_with_its_reason(
    autojump_clock: MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Spec-mandated (basic/patterns/cancellation §Implementation Notes: both parties
    SHOULD log cancellation reasons): a cancellation that stops a request in flight is
    logged at DEBUG with its id and reason, the reason quoted so that it stays one
    line; one that names no request in flight is not."""
    caplog.set_level(logging.DEBUG, logger="presa_trio.stdio")
    reason = "the user pressed stop\nand left"
    lines = [
        WAIT_ONE_SECOND,
        line(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 1, "reason": reason},
            }
        ),
        cancelled("not-in-flight"),
    ]
    await serve_lines(waiting_server(), lines)
    logged = [r.getMessage() for r in caplog.records if r.name == "presa_trio.stdio"]
    assert [m for m in logged if "cancelled" in m] == [
        f"request 1 cancelled by the client: {reason!r}"
    ]


@pytest.mark.parametrize(
    "malformed",
    [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": None},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": "1"},
        {"jsonrpc": "1.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": CANCEL_REASON_NUMBER},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": CANCEL_REASON_NULL},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": CANCEL_META_STRING},
    ],
    ids=[
        "params-list",
        "params-null",
        "params-string",
        "jsonrpc-1.0",
        "no-jsonrpc",
        "other",
        "reason-number",
        "reason-null",
        "meta-string",
    ],
)
async def test_a_malformed_notification_is_ignored(
    autojump_clock: MockClock, malformed: dict[str, Any]
) -> None:
    """Spec-mandated (basic/patterns/cancellation §Error Handling: malformed cancellation
    notifications SHOULD be ignored, a ``reason`` that is not a string or a ``_meta``
    that is not an object among them (schema ``CancelledNotificationParams``);
    basic/index §Notifications: the receiver MUST NOT
    send a response): a message without an id that names a method is a notification,
    and however malformed, nothing is written for it; it cancels nothing, and the
    request in flight is answered."""
    out = await serve_lines(waiting_server(), [WAIT_ONE_SECOND, line(malformed)])
    assert [(m.get("id"), m["result"]["content"][0]["text"]) for m in out] == [(1, "waited")]


async def test_a_cancelled_requests_id_is_free_at_once(autojump_clock: MockClock) -> None:
    """Spec-mandated (basic/patterns/cancellation §Behavior Requirements: a server
    receiving a cancellation SHOULD stop processing the request and free its
    resources; basic/index §Requests: an id must not match a request still awaiting
    its response): once a cancellation is read, the id is the client's again, even
    when the next line was read with it, before the cancelled request has stopped.
    A request reusing the id is served; a third, while that one is in flight, is
    refused; the cancelled one's end does not free the new one's id."""

    discover = line(request("server/discover", request_id=1))
    out = await serve_lines(
        waiting_server(), [WAIT_ONE_SECOND, cancelled(1), WAIT_ONE_SECOND, discover]
    )
    assert [(m["id"], m.get("error", {}).get("code")) for m in out] == [
        (1, INVALID_REQUEST),
        (1, None),
    ]
    assert out[1]["result"]["content"][0]["text"] == "waited"


async def test_the_end_of_a_cancelled_request_leaves_its_ids_new_request_alone(
    autojump_clock: MockClock,
) -> None:
    """Spec-mandated (basic/index §Requests: an id must not match a request still
    awaiting its response; basic/patterns/cancellation §Behavior Requirements): a
    cancelled request that takes a while to stop frees its id at once; a request reusing
    the id is in flight when the cancelled one ends, and stays so: a third request with
    the id, read after that end, is refused, and the second is answered."""
    server = waiting_server()

    @server.tool(description="Takes half a second to stop once cancelled")
    async def linger(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await trio.sleep(0.5)

    stdin, server_stdin = memory_stream_one_way_pair()
    server_stdout = MemorySendStream()
    async with trio.open_nursery() as nursery:
        stdio = StdioServer(Dispatcher.for_server(server), server_stdin, server_stdout)
        nursery.start_soon(stdio.serve)
        await stdin.send_all(line(request("tools/call", {"name": "linger"})))
        await trio.testing.wait_all_tasks_blocked()
        await stdin.send_all(cancelled(1) + WAIT_ONE_SECOND)
        await trio.sleep(0.75)  # the cancelled request has ended; the second is in flight
        await stdin.send_all(WAIT_ONE_SECOND)
        await stdin.aclose()
    out = [json.loads(m) for m in server_stdout.get_data_nowait().splitlines()]
    assert [(m["id"], m.get("error", {}).get("code")) for m in out] == [
        (1, INVALID_REQUEST),
        (1, None),
    ]
    assert out[1]["result"]["content"][0]["text"] == "waited"


@pytest.mark.parametrize(
    "method", ["notifications/progress", "notifications/initialized", "notifications/other"]
)
async def test_only_a_cancellation_cancels(autojump_clock: MockClock, method: str) -> None:
    """Spec-mandated (basic/patterns/cancellation §Cancellation Flow: a request is
    cancelled by ``notifications/cancelled``): another notification whose params name
    the request in flight (``requestId: 1``) cancels nothing, and the request is
    answered."""
    other = {"jsonrpc": "2.0", "method": method, "params": {"requestId": 1}}
    out = await serve_lines(waiting_server(), [WAIT_ONE_SECOND, line(other)])
    assert [(m.get("id"), m["result"]["content"][0]["text"]) for m in out] == [(1, "waited")]


async def test_blank_lines_are_skipped_unanswered() -> None:
    """presa-defined (basic/transports/stdio: messages are delimited by newlines; a
    line holding only whitespace holds no message): empty and blank lines, with a
    carriage return or not, get no answer, not even -32700, and the next request is
    served."""
    discover = line(request("server/discover", request_id=7))
    out = await serve_lines(waiting_server(), [b"\n", b"  \t\r\n", b"\r\n", discover])
    assert [m["id"] for m in out] == [7]


async def test_a_cancelled_request_sends_nothing_even_from_a_shielded_part(
    autojump_clock: MockClock,
) -> None:
    """Spec-mandated (basic/transports/stdio §Cancellation: the server MUST NOT send any
    further messages for a cancelled request): a tool that, shielded from the
    cancellation, reports progress afterwards has that progress dropped, and its
    result too."""
    server = Server("shielded", "1.0.0")
    reported: list[int] = []

    @server.tool(description="Finishes a step whatever happens, then reports it")
    async def step(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        with trio.CancelScope(shield=True):
            await trio.sleep(1)
            await ctx.report_progress(1)
            reported.append(1)
        return "done"

    call = request("tools/call", {"name": "step", "_meta": meta(progressToken="p")})
    assert await serve_lines(server, [line(call), cancelled(1)]) == []
    assert reported == [1]  # the tool did report, after the cancellation


async def test_a_cancelled_requests_queued_notifications_are_not_written() -> None:
    """Spec-mandated (basic/transports/stdio §Cancellation: the server MUST NOT send any
    further messages for a cancelled request): while the client does not read stdout,
    a tool reporting progress, shielded, fills the output queue and waits in it; once
    the request is cancelled, none of what it queued or was queueing is written, only
    the line the writer held already. They were all written after the cancellation."""
    server = Server("queued", "1.0.0")
    reports = OUTPUT_BUFFER + 4

    @server.tool(description="Reports progress whatever happens")
    async def report(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        with trio.CancelScope(shield=True):
            for done in range(reports):
                await ctx.report_progress(done)
        return "done"

    stdin, server_stdin = memory_stream_one_way_pair()
    server_stdout, stdout = lockstep_stream_one_way_pair()
    output = LineReader(stdout, 1 << 20)
    call = request("tools/call", {"name": "report", "_meta": meta(progressToken="p")})
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            stdio = StdioServer(Dispatcher.for_server(server), server_stdin, server_stdout)
            nursery.start_soon(stdio.serve)
            await stdin.send_all(line(call))
            await trio.testing.wait_all_tasks_blocked()  # the queue is full; the tool waits
            await stdin.send_all(cancelled(1) + line(request("server/discover", request_id=2)))
            written = []
            while "id" not in (message := json.loads(await output.next_line() or b"")):
                written.append(message)
            nursery.cancel_scope.cancel()
    assert message["id"] == 2
    assert len(written) <= 1  # the line the writer was writing as the cancellation came
    assert all(m["method"] == "notifications/progress" for m in written)


@attrs.define(eq=False, repr=False)
class HeldRead(MemoryStore):
    """A memory store whose log read, once :attr:`hold` is set, ends only when
    :attr:`let_go` is: shielded, as a SQLite read finishes in its thread whatever
    happens to its caller."""

    hold: bool = False
    held: trio.Event = attrs.field(factory=trio.Event)
    let_go: trio.Event = attrs.field(factory=trio.Event)

    async def read_events(
        self, task_id: str, after: int, limit: int, now_ms: int, retention: Retention
    ) -> EventWindow:
        if self.hold:
            self.hold = False
            self.held.set()
            with trio.CancelScope(shield=True):
                await self.let_go.wait()
        return await super().read_events(task_id, after, limit, now_ms, retention)


async def test_a_task_stream_cancelled_and_opened_again_on_the_next_line_is_served() -> None:
    """Spec-mandated (SEP-2694 §tasks/stream: at most one *active* stream per task per
    connection, and "Clients that want to change the cursor SHOULD cancel the active
    stream first, then open a new one"; basic/patterns/cancellation §Behavior
    Requirements: free its resources): on stdio nothing tells the client when a
    cancellation took effect, so a `notifications/cancelled` for a `tasks/stream`
    followed at once by a new `tasks/stream` of the task is served from its cursor,
    never refused -32602 as a second active stream, even while the cancelled stream
    finishes a read of the store it cannot abandon."""
    store = HeldRead()
    server = Server("streams", "1.0.0")
    tasks = TasksExtension(TaskRunner(store))
    server.add_extension(tasks)
    tasks.enable_events(TaskEventLog())
    step, go_on = trio.Event(), trio.Event()

    @tasks.tool(Policy.REQUIRED, description="Emits a step, another when told, then waits")
    async def stepper(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.emit("com.example.step", {})
        await step.wait()
        await ctx.emit("com.example.step", {})
        await go_on.wait()
        return "done"

    def stream(request_id: int, **params: Any) -> bytes:
        return line(
            request("tasks/stream", params, capabilities=TASKS_CAPABILITIES, request_id=request_id)
        )

    stdin, server_stdin = memory_stream_one_way_pair()
    server_stdout, stdout = memory_stream_one_way_pair()
    output = LineReader(stdout, 1 << 20)
    call = request("tools/call", {"name": "stepper"}, capabilities=TASKS_CAPABILITIES)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            stdio = StdioServer(Dispatcher.for_server(server), server_stdin, server_stdout)
            nursery.start_soon(stdio.serve)
            await stdin.send_all(line(call))
            task_id = json.loads(await output.next_line() or b"")["result"]["taskId"]
            await stdin.send_all(stream(2, taskId=task_id))
            seqs = [json.loads(await output.next_line() or b"")["params"]["seq"] for _ in "ab"]
            store.hold = True
            step.set()
            await store.held.wait()  # the stream reads its log, and cannot stop halfway
            await stdin.send_all(cancelled(2) + stream(3, taskId=task_id, after=0))
            await trio.testing.wait_all_tasks_blocked()
            store.let_go.set()
            resumed = json.loads(await output.next_line() or b"")
            go_on.set()
            await stdin.aclose()
    assert seqs == [0, 1]
    assert resumed.get("method") == "notifications/tasks/event", resumed
    assert resumed["params"]["seq"] == 1


async def test_a_second_request_in_flight_with_the_same_id_is_refused(
    autojump_clock: MockClock,
) -> None:
    """presa-defined (stdio.py; basic/index §Requests: an id is not reused; on stdio the
    responses are told apart by id alone): -32600 echoing the id; the first request is
    answered."""
    out = await serve_lines(waiting_server(), [WAIT_ONE_SECOND, WAIT_ONE_SECOND])
    assert [m.get("error", {}).get("code") for m in out] == [INVALID_REQUEST, None]
    assert [m["id"] for m in out] == [1, 1]
    assert out[1]["result"]["content"][0]["text"] == "waited"


@pytest.mark.parametrize(
    "response",
    [{"result": {}}, {"error": {"code": -32603, "message": "x"}}],
    ids=["result", "error"],
)
async def test_a_response_from_the_client_is_refused_without_its_id(
    autojump_clock: MockClock, response: dict[str, Any]
) -> None:
    """Spec-mandated (basic/transports/stdio §Sending Messages: the client MUST NOT
    write responses; basic/index §Error Responses: an error carries the id of the
    request it answers): a response names no request of the client's, so its refusal
    (-32600) has no id (spec-notes §52); were it echoed, the client would take it for
    the answer to its own request 1, which is still in flight and is answered once."""
    stray = line({"jsonrpc": "2.0", "id": 1, **response})
    out = await serve_lines(waiting_server(), [WAIT_ONE_SECOND, stray])
    assert [(m.get("id"), m.get("error", {}).get("code")) for m in out] == [
        (None, INVALID_REQUEST),
        (1, None),
    ]


async def test_ids_are_echoed_with_their_json_type() -> None:
    """Spec-mandated (basic/index §Responses: the same id as the request; §Requests: a
    string or an integer, never null): ``"1"`` stays a string, a large integer stays
    exact; ``true`` and ``1.0`` are not ids, -32600 with no id (spec-notes §52)."""
    ids: list[Any] = ["1", 2**70, True, 1.0]
    out = await serve_lines(
        Server("ids", "1.0.0"), [line(request("server/discover", request_id=i)) for i in ids]
    )
    answered = sorted((repr(m.get("id")), m.get("error", {}).get("code")) for m in out)
    assert answered == [
        ("'1'", None),
        ("1180591620717411303424", None),
        ("None", INVALID_REQUEST),
        ("None", INVALID_REQUEST),
    ]


async def test_an_over_long_line_is_refused_and_the_next_one_served() -> None:
    """presa-defined (stdio.py; the HTTP edge's body limit, as a line limit): a line
    longer than ``max_line`` is -32600 with no id, read to its end and dropped."""
    long = line(request("server/discover", {"padding": "x" * 1000}, request_id=1))
    out = await serve_lines(
        Server("long", "1.0.0"),
        [long, line(request("server/discover", request_id=2))],
        max_line=1000,
    )
    assert [(m.get("id"), m.get("error", {}).get("code")) for m in out] == [
        (None, INVALID_REQUEST),
        (2, None),
    ]


async def test_end_of_input_ends_listens_and_requests_after_a_grace(
    autojump_clock: MockClock,
) -> None:
    """Spec-mandated (basic/transports/stdio §Shutdown: the server SHOULD exit promptly
    when its stdin is closed); presa-defined (stdio.py: in-flight requests get
    ``EOF_GRACE_S``): at end of input a listen ends, unanswered; a request that
    answers within the grace is answered; one that would take longer is not, and the
    server returns without it."""

    def wait(seconds: float, request_id: int) -> bytes:
        params = {"name": "wait", "arguments": {"seconds": seconds}}
        return line(request("tools/call", params, request_id=request_id))

    listen = {"notifications": {"toolsListChanged": True}}
    lines = [
        line(request("subscriptions/listen", listen, request_id="L")),
        wait(EOF_GRACE_S / 2, 1),
        wait(EOF_GRACE_S * 2, 2),
    ]
    out = await serve_lines(waiting_server(), lines)
    assert [m.get("id") for m in out] == [None, 1]
    assert out[0]["method"] == "notifications/subscriptions/acknowledged"


async def test_a_last_line_without_a_newline_is_answered() -> None:
    """Spec-mandated (basic/transports/stdio §Receiving Messages): end of input also
    ends the last message."""
    out = await serve_lines(Server("last", "1.0.0"), [line(request("server/discover"))[:-1]])
    assert out[0]["result"]["resultType"] == "complete"


async def test_a_stalled_reader_is_ended_while_the_server_runs_on() -> None:
    """presa-defined (subscriptions.py): while the client does not read stdout, the
    loop keeps running (the writer task waits, nothing else does), changes coalesce,
    and a listen with more topics waiting than MAX_PENDING_TOPICS is ended: when the
    client reads again it finds the listen's result, tagged with its id."""
    server = Server("stalled", "1.0.0")

    @server.resource_template("test://stalled/{n}", name="stalled")
    async def stalled(ctx: RequestContext, variables: dict[str, str]) -> str:
        return variables["n"]

    stdin, server_stdin = memory_stream_one_way_pair()
    server_stdout, stdout = lockstep_stream_one_way_pair()
    output = LineReader(stdout, 1 << 24)
    uris = [f"test://stalled/{n}" for n in range(2 * MAX_PENDING_TOPICS)]
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            stdio = StdioServer(Dispatcher.for_server(server), server_stdin, server_stdout)
            nursery.start_soon(stdio.serve)
            await stdin.send_all(
                line(
                    request(
                        "subscriptions/listen",
                        {"notifications": {"resourceSubscriptions": uris}},
                        request_id="L",
                    )
                )
            )
            ack = json.loads(await output.next_line() or b"")
            for uri in uris:
                server.notify_resource_updated(uri)
                await trio.testing.wait_all_tasks_blocked()
            received = []
            while "id" not in (message := json.loads(await output.next_line() or b"")):
                received.append(message)
            await stdin.aclose()
    assert ack["params"]["notifications"] == {"resourceSubscriptions": uris}
    assert 0 < len(received) < len(uris) - MAX_PENDING_TOPICS
    assert message["id"] == "L"
    assert message["result"]["resultType"] == "complete"
    assert message["result"]["_meta"][META_SUBSCRIPTION_ID] == "L"


async def test_past_max_in_flight_requests_the_next_one_waits_and_stdin_is_not_read() -> None:
    """presa-defined (stdio.py: at most ``max_in_flight`` ordinary requests in flight;
    basic/transports/stdio: one pipe each way): with that many requests running, the
    reader holds the next request line and reads no further, so a client that sends
    requests without reading their answers is held by the pipe rather than growing
    the server's memory; an open listen takes no room. Once the running requests are
    answered, the held one and the lines after it are served."""
    server = Server("held", "1.0.0")
    release = trio.Event()

    @server.tool(description="Waits until the test lets it go")
    async def hold(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await release.wait()
        return "held"

    stdin, server_stdin = lockstep_stream_one_way_pair()
    server_stdout, stdout = memory_stream_one_way_pair()
    output = LineReader(stdout, 1 << 20)
    listen = {"notifications": {"toolsListChanged": True}}
    read_past_the_held_line = False

    async def send_after() -> None:
        nonlocal read_past_the_held_line
        await stdin.send_all(line(request("server/discover", request_id="after")))
        read_past_the_held_line = True

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            dispatcher = Dispatcher.for_server(server)
            stdio = StdioServer(dispatcher, server_stdin, server_stdout, max_in_flight=2)
            nursery.start_soon(stdio.serve)
            await stdin.send_all(line(request("subscriptions/listen", listen, request_id="L")))
            for n in range(3):  # the third line is read, and held
                await stdin.send_all(line(request("tools/call", {"name": "hold"}, request_id=n)))
            nursery.start_soon(send_after)
            await trio.testing.wait_all_tasks_blocked()
            held = read_past_the_held_line
            release.set()
            messages = [json.loads(await output.next_line() or b"") for _ in range(5)]
            await stdin.aclose()
    assert not held
    assert read_past_the_held_line
    answers = {m["id"]: m for m in messages if "id" in m}
    assert sorted(answers, key=str) == [0, 1, 2, "after"]
    assert {answers[n]["result"]["content"][0]["text"] for n in range(3)} == {"held"}
    assert answers["after"]["result"]["resultType"] == "complete"


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=10,
)
TASKS_DECLARED: dict[str, Any] = {
    "elicitation": {},
    "extensions": {"io.modelcontextprotocol/tasks": {}},
}
#: One well-formed request of each kind (method, params).
REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("server/discover", {}),
    ("tools/list", {"cursor": "c"}),
    ("tools/call", {"name": "test_simple_text", "arguments": {}}),
    ("tools/call", {"name": "slow_compute", "arguments": {"seconds": 1}}),
    ("tools/call", {"name": "confirm_delete", "arguments": {"filename": "f"}}),
    ("subscriptions/listen", {"notifications": {"toolsListChanged": True, "taskIds": []}}),
    ("tasks/get", {"taskId": "t"}),
    ("tasks/update", {"taskId": "t", "inputResponses": {}}),
    ("tasks/cancel", {"taskId": "t"}),
    ("resources/read", {"uri": "test://static-text"}),
    ("prompts/get", {"name": "test_simple_prompt", "arguments": {}}),
]
#: What the fuzz starts from: it puts any JSON value at any one place of one of these.
TEMPLATES: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
    {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}},
    *(request(method, params, capabilities=TASKS_DECLARED) for method, params in REQUESTS),
]


def places(value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every place in a message: itself and, inside objects, each member, recursively."""
    found = [path]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += places(inner, (*path, key))
    return found


def put(message: Any, path: tuple[str, ...], value: Any) -> Any:
    """``message`` with ``value`` at ``path``."""
    if not path:
        return value
    return {**message, path[0]: put(message[path[0]], path[1:], value)}


FUZZED = st.sampled_from(TEMPLATES).flatmap(
    lambda message: st.builds(put, st.just(message), st.sampled_from(places(message)), JSON_VALUES)
)
LINES = FUZZED.map(lambda message: json.dumps(message).encode()) | st.binary(max_size=40).map(
    lambda raw: raw.replace(b"\n", b"")
)
PROBE = line(request("server/discover", request_id="probe-after-fuzz"))


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(LINES, min_size=1, max_size=4))
def test_no_input_line_stops_the_server(lines: list[bytes]) -> None:
    """Spec-mandated (basic/transports/stdio §Receiving Messages; basic/index): a
    message of any kind with any JSON value at any one place (or bytes that are not
    JSON) is answered or dropped, every output line is one JSON-RPC message, and a
    request after it is answered."""
    assume(all(b"probe-after-fuzz" not in fuzzed for fuzzed in lines))
    out = trio.run(
        serve_lines,
        build_server(),
        [*(fuzzed + b"\n" for fuzzed in lines), PROBE],
        clock=MockClock(autojump_threshold=0),
    )
    assert all(message["jsonrpc"] == "2.0" for message in out)
    probe = [message for message in out if message.get("id") == "probe-after-fuzz"]
    assert probe[0]["result"]["resultType"] == "complete"


@settings(
    max_examples=int(os.environ.get("PRESA_FUZZ_EXAMPLES", "100")), deadline=None, derandomize=True
)
@given(data=st.data())
def test_a_near_valid_line_gets_the_specs_answer(data: st.DataObject) -> None:
    """Spec-mandated (basic/transports/stdio §Receiving Messages; basic/index §Error
    Codes; spec-notes §52), property: a near-valid message, or its bytes as parsers
    differ on them (cut short, repeated keys, another encoding, deep nesting, numbers
    past a double), gets at most one answer, a result or an error of a spec'd code
    echoing the id it could read, never a traceback; what comes before it is
    notifications; a request after it is answered."""
    message = data.draw(near_valid_messages([]), label="message")
    written = json.dumps(message).encode("utf-8", "surrogatepass")
    body = data.draw(st.one_of(st.just(written), raw_bodies(message)), label="line")
    body = body.replace(b"\n", b"").replace(b"\r", b"")
    assume(b"probe-after-fuzz" not in body)
    out = trio.run(
        serve_lines, build_server(), [body + b"\n", PROBE], clock=MockClock(autojump_threshold=0)
    )
    probe = [answer for answer in out if answer.get("id") == "probe-after-fuzz"]
    assert len(probe) == 1, out
    assert probe[0]["result"]["resultType"] == "complete", out
    answers = [answer for answer in out if "method" not in answer and answer not in probe]
    assert len(answers) <= 1, out
    for answer in answers:
        check_final(answer, read_sent(body))
    for notification in out:
        if "method" in notification:
            assert "id" not in notification, out


async def test_a_runner_that_cannot_start_stops_stdio_in_one_line() -> None:
    """presa-defined (docs/tasks.md, the failure policy; stdio.py): a task runner that
    cannot start (its store cannot be watched) stops the stdio server before it reads
    a line: ServerFailed with one line, as serve_http's startup."""
    server = Server("unwatchable", "1.0.0")
    server.add_extension(TasksExtension(TaskRunner(UnwatchableStore())))
    discover = json.dumps(request("server/discover", request_id=1)).encode() + b"\n"
    with trio.fail_after(10), pytest.raises(ServerFailed) as failed:
        await serve_lines(server, [discover])
    assert str(failed.value) == "StoreUnavailable: test: no announcements today"


async def test_an_over_long_last_line_is_dropped_whole() -> None:
    """presa-defined (stdio.py: a line longer than ``max_line`` is refused, read to its
    end and dropped): when input ends inside an over-long line, none of it is read as a
    message: what arrived after the limit was passed is dropped too, even when it holds
    a whole request."""
    stdin, server_stdin = memory_stream_one_way_pair()
    stdout = MemorySendStream()
    smuggled = json.dumps(request("server/discover", request_id="smuggled")).encode()
    stdio = StdioServer(Dispatcher.for_server(Server("long", "1.0.0")), server_stdin, stdout, 300)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stdio.serve)
            await stdin.send_all(b'"' + b"x" * 400)
            await trio.testing.wait_all_tasks_blocked()
            await stdin.send_all(smuggled)
            await trio.testing.wait_all_tasks_blocked()
            await stdin.aclose()
    out = [json.loads(line) for line in stdout.get_data_nowait().splitlines()]
    assert [(m.get("id"), m.get("error", {}).get("code")) for m in out] == [(None, INVALID_REQUEST)]


async def test_every_line_written_validates_against_the_schema(autojump_clock: MockClock) -> None:
    """Spec-mandated (schema $defs.*ResultResponse, $defs.JSONRPCErrorResponse,
    $defs.ServerNotification; SEP-2663 §Task Creation, §Task Polling; basic/transports/stdio;
    E-26): what the HTTP sweep holds the HTTP edge to, the stdio edge meets too,
    refusals of lines that are no request included."""
    sent = {
        1: request("server/discover", request_id=1),
        2: request("tools/list", request_id=2),
        3: request(
            "tools/call",
            {
                "name": "test_logging_tool",
                "_meta": {**meta(), META_LOG_LEVEL: "info"},
            },
            request_id=3,
        ),
        4: request(
            "tools/call",
            {"name": "test_tool_with_progress", "_meta": meta(progressToken="p")},
            request_id=4,
        ),
        5: request("tools/call", {"name": "confirm_delete"}, request_id=5),
        6: request(
            "tools/call", {"name": "slow_compute"}, request_id=6, capabilities=TASKS_CAPABILITIES
        ),
        7: request("resources/read", {"uri": "test://none"}, request_id=7),
        8: request("no/such/method", request_id=8),
        9: request("tasks/get", {"taskId": "none"}, request_id=9),
    }
    lines = [line(message) for message in sent.values()]
    lines += [b"{not json\n", b"[]\n", line({**sent[1], "id": None})]
    written = await serve_lines(build_server(), lines)
    assert len(written) == len(lines) + 2 + 3  # info and warning logged; three progress reports
    for message in written:
        if "method" in message:
            assert wire_schema.notification_problems(message) == [], message
            continue
        problems = wire_schema.envelope_problems(message) + wire_schema.error_problems(message)
        if "result" in message:
            method = sent[message["id"]]["method"]
            problems += wire_schema.result_problems(
                method, message["result"], tasks_declared=message["id"] == 6
            )
        assert problems == [], message


async def test_a_request_sends_nothing_once_it_is_answered(autojump_clock: MockClock) -> None:
    """Spec-mandated (logging §Per-request log level: a log message only on the stream of
    the request that asked, before its final response; basic/patterns/progress §Behavior
    Requirements: progress only for an in-progress operation; basic/transports/stdio
    §Receiving Messages: notifications relate to an in-flight request): a handler that
    keeps its context and logs or reports progress through it after its request was
    answered writes nothing, though every request shares stdout, and a request in
    flight that asked for neither sees no line of the other's."""
    server = Server("kept", "1.0.0")
    kept: list[RequestContext] = []

    @server.tool(description="Logs, keeps its context, and answers")
    async def keep(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.log("info", "in flight")
        kept.append(ctx)
        return "kept"

    @server.tool(description="Waits, then logs and reports through the kept context")
    async def late(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await trio.sleep(1)
        await kept[0].log("error", "answered already")
        await kept[0].report_progress(1)
        return "late"

    asks = {**meta(progressToken="p"), META_LOG_LEVEL: "debug"}
    out = await serve_lines(
        server,
        [
            line(request("tools/call", {"name": "keep", "_meta": asks}, request_id=1)),
            line(request("tools/call", {"name": "late"}, request_id=2)),
        ],
    )
    assert [(m.get("method"), m.get("id")) for m in out] == [
        ("notifications/message", None),
        (None, 1),
        (None, 2),
    ]
