"""``tasks/stream`` on the wire (SEP-2694, a draft), on every store.

Rules of this file: the ASGI app is driven in-process on a real store of
each kind (memory, a SQLite file, a PostgreSQL database); a task tool here
emits what the test asks and waits on gates the test opens, so "live"
means an event appended after the stream was opened; every wait is on a
message, never on time, under ``trio.fail_after``; requests with another
``client`` port came on another connection, with another address from
another client.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import urlsplit

import attrs
import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from presa_trio.auth.guard import ResourceGuard, Verifiers
from presa_trio.auth.static import StaticTokens
from presa_trio.http.app import McpApp
from presa_trio.server import EmitFailed, RequestContext, Server
from presa_trio.tasks import Policy, TaskRunner, TasksExtension
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.events import (
    MAX_SEQ,
    RELATED_TASK,
    NewEvent,
    Retention,
)
from presa_trio.tasks.model import epoch_ms
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import TaskStore
from presa_trio.tasks.writes import Clock
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, Response, Stream, meta, request
from presa_trio.testing import running as serving
from presa_trio.wire.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    InvalidParams,
)
from presa_trio.wire.mrtr import Elicitation
from presa_trio.wire.tasks import (
    EVENTS_GONE,
    INPUT_ANSWERED_EVENT,
    INPUT_REQUESTED_EVENT,
    STATUS_EVENT,
)
from tests.e2e.events_server import add_tools, assert_cancelled_log
from tests.e2e.gates import Gates
from tests.expect import error_of, final_message, result_of
from tests.nesting import DEEP, answers_at_every_depth
from tests.postgres import Postgres

EVENT = "notifications/tasks/event"
STEP = "com.example.step"
#: Cancel-vs-emit races run per store, in process.
RACES = 20
ELSEWHERE = ("127.0.0.1", 50001)
#: Another client: a connection from another address.
ANOTHER_CLIENT = ("127.0.0.2", 50000)
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
#: An error naming a file whose name is not UTF-8: Python reads it with a lone surrogate.
UNREADABLE = "cannot read " + os.fsdecode(b"name-\xff")


def events_server(store: TaskStore, log: TaskEventLog | None, gates: Gates) -> Server:
    """A server with one task tool, ``emitter``: ``before`` events, its gate, ``after`` more."""
    server = Server("events-test", "0")
    tasks = TasksExtension(TaskRunner(store))
    server.add_extension(tasks)
    if log is not None:
        tasks.enable_events(log)

    @tasks.tool(Policy.REQUIRED, description="Emits steps around a gate; may ask first")
    async def emitter(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        if arguments.get("ask"):
            await ctx.ask({"ok": Elicitation("Go on?", CONFIRM)})
        if arguments.get("unreadable"):
            raise InvalidParams(UNREADABLE)
        refused = []
        for event_type, payload in arguments.get("invalid", []):
            try:
                await ctx.emit(event_type, payload)
            except (TypeError, ValueError) as error:
                refused.append(type(error).__name__)
        for n in range(arguments.get("before", 0)):
            await ctx.emit(STEP, {"n": n})
        await gates[arguments.get("label", "")].wait()
        for n in range(arguments.get("after", 0)):
            try:
                await ctx.emit_partial([{"type": "text", "text": f"part {n}"}])
            except EmitFailed as failed:
                refused.append(f"EmitFailed(maybe_stored={failed.maybe_stored})")
                gates["told"].set()
        return " ".join(refused) or "done"

    @tasks.tool(Policy.REQUIRED, description="Emits a list after each item it adds to it")
    async def grower(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        items: list[int] = []
        for n in range(3):
            items.append(n)
            await ctx.emit(STEP, {"items": items})
        return "grown"

    add_tools(tasks)

    return server


@attrs.define
class Harness:
    """A client of the events server, its gates, and shortcuts for this file's requests."""

    client: McpClient
    gates: Gates
    app: McpApp
    log: TaskEventLog

    async def start(self, tool: str = "emitter", **arguments: Any) -> str:
        result = await self.client.call_tool(tool, arguments, capabilities=TASKS_CAPABILITIES)
        task_id: str = result["taskId"]
        return task_id

    def stream(
        self, task_id: str, *, client: tuple[str, int] = ("127.0.0.1", 50000), **params: Any
    ) -> Any:
        message = request(
            "tasks/stream", {"taskId": task_id, **params}, capabilities=TASKS_CAPABILITIES
        )
        return self.client.stream(message, client=client)

    async def post_stream(
        self, task_id: str, *, client: tuple[str, int] = ("127.0.0.1", 50000), **params: Any
    ) -> Response:
        message = request(
            "tasks/stream", {"taskId": task_id, **params}, capabilities=TASKS_CAPABILITIES
        )
        return await self.client.post(message, limit_s=20, client=client)

    async def until_ended(self, task_id: str) -> Response:
        """A whole stream of the task, read to its end: its log is closed by then.

        A stream that a small retention overtook (events_gone) is opened
        again: once the task has ended nothing more is appended, and one
        reaches the end.
        """
        with trio.fail_after(20):
            while "result" not in final_message(response := await self.post_stream(task_id)):
                pass
        return response

    async def until_status(self, task_id: str, status: str) -> dict[str, Any]:
        """The task once it reads ``status``, watched on a listen stream (no polling)."""
        with trio.fail_after(20):
            wanted = {"taskIds": [task_id]}
            async with self.client.listen(wanted, capabilities=TASKS_CAPABILITIES) as changes:
                await changes.next_message()  # the acknowledgement
                task = await self.client.get_task(task_id)
                while task["status"] != status:
                    task = (await changes.next_message())["params"]
        return task


@pytest.fixture
def retention() -> Retention:
    return Retention()


@pytest.fixture
async def harness(store: TaskStore, retention: Retention) -> AsyncIterator[Harness]:
    gates = Gates()
    log = TaskEventLog(retention, max_streams_per_client=3, max_streams=5)
    app = McpApp.for_server(events_server(store, log, gates))
    async with serving(app) as client:
        yield Harness(client, gates, app, log)


def events_in(response: Response) -> list[dict[str, Any]]:
    return [m["params"] for m in response.messages() if m.get("method") == EVENT]


async def next_event(stream: Stream) -> dict[str, Any]:
    with trio.fail_after(20):
        message = await stream.next_message()
    assert message["method"] == EVENT, message
    params: dict[str, Any] = message["params"]
    return params


def server_on_a_clock(
    store: TaskStore, gates: Gates, now: list[int], *, reap_every: float
) -> Server:
    """The events server whose tasks live a minute by ``now[0]`` (wall milliseconds,
    moved by the test), leased for an hour, reaped every ``reap_every`` seconds."""
    server = events_server(store, TaskEventLog(), gates)
    (tasks,) = (
        extension for extension in server.extensions if isinstance(extension, TasksExtension)
    )
    runner = tasks.runner
    runner.clock = Clock(wall_ms=lambda: now[0])
    runner.ttl_ms, runner.lease_ms, runner.reap_every = 60_000, 3_600_000, reap_every
    return server


async def test_without_the_option_tasks_stream_is_method_not_found(store: TaskStore) -> None:
    """Spec-mandated (SEP-2694 §Specification; S-01): a server without task event
    streams answers -32601, and advertises the Tasks extension with `{}` as before."""
    async with serving(McpApp.for_server(events_server(store, None, Gates()))) as client:
        response = await client.call(
            "tasks/stream", {"taskId": "x"}, capabilities=TASKS_CAPABILITIES
        )
        error_of(response, 404, METHOD_NOT_FOUND)
        discovered = result_of(await client.call("server/discover"))
    assert discovered["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"] == {}


async def test_without_the_option_tasks_stream_is_method_not_found_before_any_check(
    store: TaskStore,
) -> None:
    """Spec-mandated (SEP-2694 §Specification, §Backward Compatibility: "Servers that
    do not support tasks/stream return -32601"; S-01): without task event streams, a
    client that did not declare the Tasks extension, or sends params no stream would
    take, gets -32601 too, never the -32021 or -32602 a served tasks/stream answers."""
    async with serving(McpApp.for_server(events_server(store, None, Gates()))) as client:
        undeclared = await client.call("tasks/stream", {"taskId": "x"})
        invalid = await client.call(
            "tasks/stream", {"taskId": 1, "after": -1}, capabilities=TASKS_CAPABILITIES
        )
    error_of(undeclared, 404, METHOD_NOT_FOUND)
    error_of(invalid, 404, METHOD_NOT_FOUND)


async def test_with_the_option_the_tasks_extension_advertises_event_streams(
    harness: Harness,
) -> None:
    """Spec-permitted (SEP-2694 §Specification, "MAY advertise … an eventStreams
    sub-capability of Tasks"; S-01)."""
    discovered = result_of(await harness.client.call("server/discover"))
    tasks = discovered["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"]
    assert tasks == {"eventStreams": {}}


async def test_a_whole_stream_from_the_start_to_the_tasks_end(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §Task Event, §notifications/tasks/event, §tasks/stream;
    S-02, S-03, S-04, S-06, S-09, S-11, S-17, S-22): seq 0, 1, 2… in order on the
    request's own SSE stream, each naming its task in related-task `_meta`, only
    prefixed types, presa's status events agreeing with tasks/get, then `{}`."""
    task_id = await harness.start(before=3, after=2)
    harness.gates[""].set()
    await harness.until_ended(task_id)
    response = await harness.post_stream(task_id)
    assert response.headers["content-type"] == "text/event-stream"
    events = events_in(response)
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert all(
        e["taskId"] == task_id and e["_meta"][RELATED_TASK] == {"taskId": task_id} for e in events
    )
    assert all(len(e["type"].split(".")) >= 3 for e in events)
    kinds = [e["type"] for e in events]
    assert kinds == [
        STATUS_EVENT,
        STEP,
        STEP,
        STEP,
        "presa_trio.content.partial",
        "presa_trio.content.partial",
        STATUS_EVENT,
    ]
    assert [e["payload"]["n"] for e in events if e["type"] == STEP] == [0, 1, 2]
    assert events[4]["payload"] == {"content": [{"type": "text", "text": "part 0"}]}
    final = await harness.client.get_task(task_id)
    assert events[-1]["payload"]["status"] == final["status"] == "completed"
    assert result_of(response)["resultType"] == "complete"
    assert set(result_of(response)) == {"resultType", "_meta"}


async def test_a_stream_follows_live_events_then_ends_with_the_task(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §tasks/stream, §Resume and Replay Semantics; S-04, S-11,
    S-12): retained events first, then the ones appended after the stream opened, then
    `{}` once the task's terminal event was delivered."""
    task_id = await harness.start(before=2, after=2, label="live")
    async with harness.stream(task_id) as stream:
        seen = [await next_event(stream) for _ in range(3)]
        assert [e["seq"] for e in seen] == [0, 1, 2]
        harness.gates["live"].set()
        seen += [await next_event(stream) for _ in range(3)]
        with trio.fail_after(20):
            final = await stream.next_message()
    assert [e["seq"] for e in seen] == [0, 1, 2, 3, 4, 5]
    assert seen[-1]["payload"]["status"] == "completed"
    assert final["result"]["resultType"] == "complete"


async def test_resuming_after_a_cursor_delivers_only_what_follows(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics; S-11): `after` is
    exclusive; a terminal task with nothing after it answers `{}` at once, as plain
    JSON with no notification."""
    task_id = await harness.start(before=3)
    harness.gates[""].set()
    await harness.until_ended(task_id)
    resumed = events_in(await harness.post_stream(task_id, after=2))
    assert [e["seq"] for e in resumed] == [3, 4]
    caught_up = await harness.post_stream(task_id, after=4)
    assert caught_up.headers["content-type"] == "application/json"
    assert result_of(caught_up)["resultType"] == "complete"


async def test_a_cursor_at_the_last_event_of_a_running_task_follows_live_events(
    harness: Harness,
) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics, "Deliver retained events
    with seq greater than the supplied value, then continue with live events"; S-11):
    a cursor at the last event of a task still running is valid; the stream waits,
    then sends each event appended after it from `after + 1` on, then `{}`."""
    task_id = await harness.start(before=2, after=1, label="last")
    async with harness.stream(task_id) as stream:
        last = [await next_event(stream) for _ in range(3)][-1]["seq"]
    responses: list[Response] = []

    async def resume() -> None:
        responses.append(await harness.post_stream(task_id, after=last))

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(resume)
            await wait_all_tasks_blocked()
            harness.gates["last"].set()
    (response,) = responses
    live = events_in(response)
    assert [e["seq"] for e in live] == [last + 1, last + 2]
    assert live[-1]["payload"]["status"] == "completed"
    assert result_of(response)["resultType"] == "complete"


@pytest.mark.parametrize("after", [-1, 1.5, True, "0", None, 2**63, 2**64])
async def test_a_cursor_that_is_not_a_non_negative_integer_is_invalid_params(
    harness: Harness, after: Any
) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics; S-10): -32602, HTTP 400,
    on every store alike, a cursor past what a store can hold (2^63) included."""
    task_id = await harness.start()
    error_of(await harness.post_stream(task_id, after=after), 400, INVALID_PARAMS)
    harness.gates[""].set()


async def test_a_cursor_beyond_the_last_event_is_invalid_params(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics, "not a valid sequence number
    value"; S-10)."""
    task_id = await harness.start()
    error_of(await harness.post_stream(task_id, after=50), 400, INVALID_PARAMS)
    harness.gates[""].set()


@pytest.mark.parametrize("retention", [Retention(max_events=3)])
async def test_a_cursor_before_what_is_retained_is_events_gone(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §events_gone error, §Event Retention; S-13, S-14): once
    retention dropped events, a cursor before them is -32010 with reason, taskId and
    earliestSeq (HTTP 410 as plain JSON); without a cursor the stream starts at the
    earliest retained event."""
    task_id = await harness.start(before=8)
    harness.gates[""].set()
    await harness.until_ended(task_id)
    gone = error_of(await harness.post_stream(task_id, after=2), 410, EVENTS_GONE)
    assert gone["message"] == "Task events are no longer available"
    assert gone["data"] == {"reason": "events_gone", "taskId": task_id, "earliestSeq": 7}
    assert [e["seq"] for e in events_in(await harness.post_stream(task_id))] == [7, 8, 9]
    assert [e["seq"] for e in events_in(await harness.post_stream(task_id, after=6))] == [7, 8, 9]


@pytest.mark.parametrize(
    "retention", [Retention(max_events=MAX_SEQ, max_age_ms=MAX_SEQ, terminal_ms=MAX_SEQ)]
)
async def test_a_retention_at_the_most_a_store_holds_lets_every_task_end(
    harness: Harness,
) -> None:
    """presa-defined (docs/task-events.md "Retention"): with every limit at the largest
    a store's 64-bit integer holds (one more is refused when the retention is made),
    a task's writes and their events are stored on every store: it ends, and its
    stream delivers each event to the end."""
    task_id = await harness.start(before=2)
    harness.gates[""].set()
    response = await harness.until_ended(task_id)
    assert [e["seq"] for e in events_in(response)] == [0, 1, 2, 3]
    assert (await harness.client.get_task(task_id))["status"] == "completed"


@pytest.mark.parametrize("retention", [Retention(terminal_ms=0)])
async def test_past_its_terminal_retention_a_finished_tasks_stream_ends_at_once(
    harness: Harness,
) -> None:
    """Spec-mandated (SEP-2694 §Event Retention, terminal retention; §Resume and Replay
    Semantics; S-15, S-30): with a terminal retention of 0, the log of a finished task
    is gone for every read at once, before any pruning pass: a stream from the start
    answers `{}` with no event, one from seq 0 is events_gone naming the next seq, one
    from the last seq `{}`."""
    task_id = await harness.start()
    harness.gates[""].set()
    await harness.until_status(task_id, "completed")
    ended = await harness.post_stream(task_id)
    assert (events_in(ended), result_of(ended)["resultType"]) == ([], "complete")
    gone = error_of(await harness.post_stream(task_id, after=0), 410, EVENTS_GONE)
    assert gone["data"] == {"reason": "events_gone", "taskId": task_id, "earliestSeq": 2}
    assert result_of(await harness.post_stream(task_id, after=1))["resultType"] == "complete"


async def test_one_active_stream_per_task_per_connection(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §tasks/stream; S-07): a second tasks/stream for the task
    on the same connection is -32602; on another connection it streams; once the first
    ended, the same connection may open one again."""
    task_id = await harness.start(label="one")
    async with harness.stream(task_id) as first:
        await next_event(first)
        error_of(await harness.post_stream(task_id), 400, INVALID_PARAMS)
        async with harness.stream(task_id, client=ELSEWHERE) as second:
            assert (await next_event(second))["seq"] == 0
    async with harness.stream(task_id) as again:
        assert (await next_event(again))["seq"] == 0
    harness.gates["one"].set()


async def test_cancelling_the_stream_never_cancels_the_task(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §tasks/stream, "Cancellation stops event delivery but
    does not cancel the underlying task"; S-08): the client closes the stream; the task
    runs on and completes, its later events kept for the next stream."""
    task_id = await harness.start(after=1, label="cut")
    async with harness.stream(task_id) as stream:
        await next_event(stream)
    assert (await harness.client.get_task(task_id))["status"] == "working"
    harness.gates["cut"].set()
    await harness.until_ended(task_id)
    resumed = events_in(await harness.post_stream(task_id, after=0))
    assert [e["seq"] for e in resumed] == [1, 2]


async def test_a_task_the_caller_may_not_see_is_answered_as_tasks_get(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §Security Implications; S-19): an unknown id, a missing
    declaration and a bad taskId get exactly what tasks/get gets."""
    for params in ({"taskId": "no-such-task"}, {"taskId": ""}, {}):
        as_get = await harness.client.call("tasks/get", params, capabilities=TASKS_CAPABILITIES)
        as_stream = await harness.client.call(
            "tasks/stream", params, capabilities=TASKS_CAPABILITIES
        )
        assert (as_stream.status, as_stream.json()["error"]) == (
            as_get.status,
            as_get.json()["error"],
        )
    undeclared = await harness.client.call("tasks/stream", {"taskId": "x"})
    as_get = await harness.client.call("tasks/get", {"taskId": "x"})
    assert (undeclared.status, undeclared.json()["error"]) == (
        as_get.status,
        as_get.json()["error"],
    )


async def test_an_expired_task_not_yet_deleted_is_answered_as_tasks_get(
    store: TaskStore,
) -> None:
    """Spec-mandated (SEP-2694 §Security Implications, "the same authorization checks
    to tasks/stream that they apply to tasks/get"; S-19): once a finished task's TTL
    elapsed, before the reaper deleted it, a stream of it, with or without a cursor,
    gets exactly what tasks/get gets (-32602, the task has expired), not its events."""
    gates = Gates()
    gates[""].set()
    now = [epoch_ms()]
    server = server_on_a_clock(store, gates, now, reap_every=3_600)
    async with serving(McpApp.for_server(server)) as client:
        harness = Harness(client, gates, client.app, TaskEventLog())
        task_id = await harness.start()
        await harness.until_status(task_id, "completed")
        now[0] += 120_000
        as_get = await client.call(
            "tasks/get", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES
        )
        for params in ({"taskId": task_id}, {"taskId": task_id, "after": 0}):
            as_stream = await client.call("tasks/stream", params, capabilities=TASKS_CAPABILITIES)
            assert (as_stream.status, as_stream.json()["error"]) == (
                as_get.status,
                as_get.json()["error"],
            )
    assert error_of(as_get, 400, INVALID_PARAMS)["message"].startswith("The task has expired")


async def test_another_principals_task_cannot_be_streamed(store: TaskStore) -> None:
    """Spec-mandated (SEP-2694 §Security Implications; S-19, S-20): with authorization
    on, bob's tasks/stream of alice's task is answered as bob's tasks/get of it: as
    an unknown task."""
    guard = ResourceGuard(
        "http://localhost:3000/mcp",
        Verifiers(static=StaticTokens({"a": "alice", "b": "bob"})),
        authorization_servers=["https://auth.example.com"],
    )
    gates = Gates()
    app = McpApp.for_server(events_server(store, TaskEventLog(), gates), auth=guard)
    async with serving(app) as client:

        async def as_user(method: str, params: Mapping[str, Any], token: str) -> Response:
            message = request(method, params, capabilities=TASKS_CAPABILITIES)
            headers = [*client.headers_for(message).items(), ("authorization", f"Bearer {token}")]
            return await client.post(message, headers)

        created = result_of(await as_user("tools/call", {"name": "emitter", "arguments": {}}, "a"))
        task_id = created["taskId"]
        by_bob = await as_user("tasks/stream", {"taskId": task_id}, "b")
        get_by_bob = await as_user("tasks/get", {"taskId": task_id}, "b")
        assert (by_bob.status, by_bob.json()["error"]) == (
            get_by_bob.status,
            get_by_bob.json()["error"],
        )
        assert by_bob.json()["error"]["code"] == INVALID_PARAMS
        gates[""].set()
        own = await as_user("tasks/stream", {"taskId": task_id}, "a")
        assert events_in(own)[0]["seq"] == 0


async def test_one_client_holding_its_streams_leaves_other_clients_theirs(
    harness: Harness,
) -> None:
    """Spec-recommended (SEP-2694 §Security Implications, concurrent streams per client;
    S-21): without authorization, streams count per client address: past
    max_streams_per_client (3 here) one more is 429 with Retry-After and a retryable
    -32603 naming the limit, while a client at another address streams."""
    tasks = [await harness.start(label="bound") for _ in range(4)]
    async with AsyncExitStack() as held:
        for task_id in tasks[:3]:
            await next_event(await held.enter_async_context(harness.stream(task_id)))
        refused = await harness.post_stream(tasks[3], client=("127.0.0.1", 50001))
        assert refused.headers["retry-after"] == "5"
        assert error_of(refused, 429, INTERNAL_ERROR)["data"] == {
            "retryable": True,
            "limit": "max_streams_per_client",
            "reason": "too_many_streams",
        }
        async with harness.stream(tasks[3], client=ANOTHER_CLIENT) as other:
            assert (await next_event(other))["seq"] == 0
    harness.gates["bound"].set()


async def test_past_the_servers_cap_a_stream_is_503_with_retry_after(harness: Harness) -> None:
    """presa-defined (SEP-2694 §Security Implications; S-21): past max_streams (5 here)
    in the process, a client under its own limit gets 503 with Retry-After and a
    retryable -32603 naming the server's limit; once a stream ends it streams."""
    task_id = await harness.start(label="cap")
    five = [("127.0.0.1", 50020), ("127.0.0.1", 50021), ("127.0.0.1", 50022)]
    five += [("127.0.0.2", 50023), ("127.0.0.2", 50024)]
    async with AsyncExitStack() as held:
        for client in five:
            await next_event(await held.enter_async_context(harness.stream(task_id, client=client)))
        refused = await harness.post_stream(task_id, client=("127.0.0.3", 50030))
        assert refused.headers["retry-after"] == "5"
        assert error_of(refused, 503, INTERNAL_ERROR)["data"] == {
            "retryable": True,
            "limit": "max_streams",
            "reason": "too_many_streams",
        }
    async with harness.stream(task_id, client=("127.0.0.3", 50030)) as later:
        assert (await next_event(later))["seq"] == 0
    harness.gates["cap"].set()


async def test_with_authorization_streams_count_per_principal_at_any_address(
    store: TaskStore,
) -> None:
    """Spec-recommended (SEP-2694 §Security Implications; S-21): with authorization the
    limit counts the caller's principal: alice's second stream is 429 from another
    address too, and bob, at alice's address, streams."""
    guard = ResourceGuard(
        "http://localhost:3000/mcp",
        Verifiers(static=StaticTokens({"a": "alice", "b": "bob"})),
        authorization_servers=["https://auth.example.com"],
    )
    gates = Gates()
    log = TaskEventLog(max_streams_per_client=1)
    app = McpApp.for_server(events_server(store, log, gates), auth=guard)
    async with serving(app) as client:

        def as_user(method: str, params: Mapping[str, Any], token: str) -> tuple[Any, Any]:
            message = request(method, params, capabilities=TASKS_CAPABILITIES)
            headers = [*client.headers_for(message).items(), ("authorization", f"Bearer {token}")]
            return message, headers

        tasks = {}
        for token in ("a", "b"):
            call = as_user("tools/call", {"name": "emitter", "arguments": {}}, token)
            tasks[token] = result_of(await client.post(*call))["taskId"]
        async with client.stream(*as_user("tasks/stream", {"taskId": tasks["a"]}, "a")) as own:
            await next_event(own)
            again = as_user("tasks/stream", {"taskId": tasks["a"]}, "a")
            refused = await client.post(*again, client=ANOTHER_CLIENT)
            assert error_of(refused, 429, INTERNAL_ERROR)["data"]["limit"] == (
                "max_streams_per_client"
            )
            by_bob = as_user("tasks/stream", {"taskId": tasks["b"]}, "b")
            async with client.stream(*by_bob, client=("127.0.0.1", 50001)) as bobs:
                assert (await next_event(bobs))["seq"] == 0
        gates[""].set()


async def test_mcp_name_on_tasks_stream_is_checked_only_when_sent(harness: Harness) -> None:
    """presa-defined (spec-notes §50; S-29; SEP-2694 names no header, SEP-2663
    §Streamable HTTP: Routing Headers names Mcp-Name for the other task methods): a tasks/stream
    without Mcp-Name streams, where tasks/get is 400 -32020; one whose Mcp-Name
    differs from taskId gets exactly what tasks/get gets with it."""
    task_id = await harness.start()
    harness.gates[""].set()
    await harness.until_ended(task_id)
    unnamed: dict[str, Response] = {}
    wrong: dict[str, tuple[int, Any]] = {}
    for method in ("tasks/stream", "tasks/get"):
        message = request(method, {"taskId": task_id}, capabilities=TASKS_CAPABILITIES)
        headers = harness.client.headers_for(message)
        assert headers.pop("mcp-name") == task_id
        unnamed[method] = await harness.client.post(message, headers, limit_s=20)
        answer = await harness.client.post(message, {**headers, "mcp-name": "another-task"})
        wrong[method] = (answer.status, answer.json()["error"])
    assert "result" in final_message(unnamed["tasks/stream"])
    assert events_in(unnamed["tasks/stream"])[0]["seq"] == 0
    error_of(unnamed["tasks/get"], 400, HEADER_MISMATCH)
    assert wrong["tasks/stream"] == wrong["tasks/get"]
    assert wrong["tasks/get"][0] == 400
    assert wrong["tasks/get"][1]["code"] == HEADER_MISMATCH


async def test_an_event_the_store_cannot_take_in_time_raises_in_the_tool(
    harness: Harness, store_kind: str, store_url: str
) -> None:
    """presa-defined (docs/task-events.md "An event is stored or the tool is told";
    S-28): while another program holds the SQLite file's write lock past the store
    timeout, the tool's emit raises EmitFailed, maybe stored since the store did not
    answer; the log holds no event for it and no gap, and the task ends once the
    lock is let go."""
    if store_kind != "sqlite":
        pytest.skip("a write lock held by another program is SQLite's")
    harness.log.emit_wait = 0.5
    task_id = await harness.start(after=1, label="locked")
    async with harness.stream(task_id) as stream:
        await next_event(stream)  # the run has begun: nothing but the tool's emit is due
    holder = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        harness.gates["locked"].set()
        with trio.fail_after(20):
            await harness.gates["told"].wait()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await harness.until_ended(task_id)
    done = await harness.client.get_task(task_id)
    assert done["result"]["content"][0]["text"] == "EmitFailed(maybe_stored=True)"
    events = events_in(await harness.post_stream(task_id))
    assert [(e["seq"], e["payload"]["status"]) for e in events] == [
        (0, "working"),
        (1, "completed"),
    ]


async def test_the_tasks_input_and_status_are_events(harness: Harness) -> None:
    """presa-defined (S-17, S-22; SEP-2694 §Relationship to Task Status Notifications):
    asking and answering appear as prefixed events between status events that match
    what tasks/get showed."""
    task_id = await harness.start(ask=True)
    asked = await harness.until_status(task_id, "input_required")
    await harness.client.update_task(task_id, {"ok": {"action": "accept", "content": {"ok": True}}})
    harness.gates[""].set()
    await harness.until_ended(task_id)
    events = events_in(await harness.post_stream(task_id))
    kinds = [(e["type"], e["payload"].get("status")) for e in events]
    assert kinds == [
        (STATUS_EVENT, "working"),
        (INPUT_REQUESTED_EVENT, None),
        (STATUS_EVENT, "input_required"),
        (INPUT_ANSWERED_EVENT, None),
        (STATUS_EVENT, "working"),
        (STATUS_EVENT, "completed"),
    ]
    assert events[1]["payload"]["keys"] == list(asked["inputRequests"]) == ["ok"]


async def test_a_task_that_fails_naming_an_undecodable_file_keeps_its_error(
    harness: Harness,
) -> None:
    """Spec-mandated (SEP-2663 §Task Status: `failed` carries the JSON-RPC error;
    SEP-2694 §Backward Compatibility: "existing tasks/get and task lifecycle semantics
    are unchanged"): a tool's error whose message holds a lone surrogate (a file name
    that is not UTF-8) is the task's error, and its status event says it, on every
    store, as without task event streams; the SQL stores refused the closing event and
    so the write, and the task failed with the store's refusal instead."""
    task_id = await harness.start(unreadable=True)
    events = events_in(await harness.until_ended(task_id))
    failed = await harness.client.get_task(task_id)
    assert (failed["status"], failed["error"]) == (
        "failed",
        {"code": INVALID_PARAMS, "message": UNREADABLE},
    )
    assert events[-1]["payload"] == {"status": "failed", "revision": 1, "statusMessage": UNREADABLE}


async def test_a_cancelled_tasks_stream_ends_and_late_emits_are_dropped(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics; S-11, S-17): cancelling the
    task ends its open stream after a `cancelled` status event; nothing follows it."""
    task_id = await harness.start(before=1, label="cancel")
    async with harness.stream(task_id) as stream:
        await next_event(stream)
        await next_event(stream)
        await harness.client.cancel_task(task_id)
        last = await next_event(stream)
        with trio.fail_after(20):
            final = await stream.next_message()
    assert (last["type"], last["payload"]["status"]) == (STATUS_EVENT, "cancelled")
    assert final["result"]["resultType"] == "complete"
    assert [e["seq"] for e in events_in(await harness.post_stream(task_id))] == [0, 1, 2]


@pytest.mark.parametrize("retention", [Retention(max_events=1_000_000)])
async def test_no_event_lands_after_a_cancel_however_the_race_goes(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §Task Event, nothing after the terminal status event;
    presa's fenced appends, rule 7; S-31): RACES times, a tool emitting as fast as it can is
    cancelled; its log is its status, its steps in order, then `cancelled`, last; the
    event it tries once it has seen its cancellation never lands."""
    for _ in range(RACES):
        task_id = await harness.start("chatter")
        async with harness.stream(task_id) as stream:
            await next_event(stream)
            await next_event(stream)
        await harness.client.cancel_task(task_id)
        assert_cancelled_log(events_in(await harness.until_ended(task_id)))


async def test_an_event_is_what_its_payload_was_when_it_was_emitted(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §Task Event: "A task event is an immutable entry in a
    task's event stream"; S-05): a tool that emits a list, adds to it and emits it
    again finds each event as it was emitted, on every store; the memory store kept
    the tool's own list, so every event read back as its last state."""
    task_id = await harness.start("grower")
    events = events_in(await harness.until_ended(task_id))
    assert [e["payload"] for e in events if e["type"] == STEP] == [
        {"items": [0]},
        {"items": [0, 1]},
        {"items": [0, 1, 2]},
    ]


async def test_invalid_events_are_refused_to_the_tool(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §Task Event, §Event Types; S-05, S-06): an unprefixed type
    and a payload that is not an object raise in the tool and never reach the log."""
    task_id = await harness.start(invalid=[["task.status", {}], [STEP, [1, 2]]])
    harness.gates[""].set()
    await harness.until_ended(task_id)
    done = await harness.client.get_task(task_id)
    assert done["result"]["content"][0]["text"] == "ValueError TypeError"
    assert [e["type"] for e in events_in(await harness.post_stream(task_id))] == [
        STATUS_EVENT,
        STATUS_EVENT,
    ]


async def test_a_payload_of_any_depth_the_parser_accepts_never_breaks_a_stream(
    harness: Harness,
) -> None:
    """presa-defined (SEP-2694 §Task Event: a payload is a JSON object; S-05): a tool
    emitting its arguments, nested as deep as the body's parser accepts, either has the
    event stored or gets ValueError; every event stored is one each later tasks/stream
    writes (a stream writes it from deeper in the stack than the tool emitted it), so
    a stream of the task ends with its result, never an internal error."""
    harness.gates[""].set()
    params = {"name": "emitter", "arguments": {"invalid": [[STEP, {"d": DEEP}]]}}
    body = request("tools/call", params, capabilities=TASKS_CAPABILITIES)
    streamed = 0
    async for depth, created in answers_at_every_depth(harness.client, body):
        if "error" in created.json():  # too deep to measure: no task (spec-notes §31)
            assert created.json()["error"]["data"]["limit"] == "max_input_bytes", depth
            continue
        task_id = result_of(created)["taskId"]
        await harness.until_status(task_id, "completed")
        assert "result" in final_message(await harness.post_stream(task_id)), depth
        streamed += 1
    assert streamed > 0  # the depths tried reached the task runner, not only the parser


async def test_progress_is_never_a_task_event(harness: Harness) -> None:
    """Spec-mandated (SEP-2694 §Relationship to Progress Notifications; S-18): a
    tasks/stream with a progressToken gets events only, their seqs unmoved."""
    task_id = await harness.start(before=1)
    harness.gates[""].set()
    await harness.until_ended(task_id)
    message = request(
        "tasks/stream", {"taskId": task_id, "_meta": meta(TASKS_CAPABILITIES, progressToken="p")}
    )
    response = await harness.client.post(message)
    methods = [m.get("method") for m in response.messages()]
    assert methods == [EVENT, EVENT, EVENT, None]


async def test_the_servers_shutdown_ends_open_streams_normally(harness: Harness) -> None:
    """presa-defined (S-24): when the server stops (its change bus closes), an open
    stream ends with `{}`, so the client resumes with `after` elsewhere."""
    task_id = await harness.start(label="shutdown")
    async with harness.stream(task_id) as stream:
        await next_event(stream)
        harness.app.dispatcher.server.changes.close()
        with trio.fail_after(20):
            final = await stream.next_message()
    assert final["result"]["resultType"] == "complete"
    harness.gates["shutdown"].set()


async def test_a_stream_stopped_mid_replay_sends_nothing_after_the_event_in_flight(
    harness: Harness,
) -> None:
    """presa-defined (S-24, spec-notes §49: a stream ends once the server stops, or
    its token lapses, as a listen stream does with nothing pending delivered): a
    reader slow on the third event of a 150-event replay is still there when the
    server stops; the stream ends with `{}` right after that event, not after the
    rest of its page of the log (100 events)."""
    task_id = await harness.start(before=150, label="slow")
    async with harness.stream(task_id) as written:
        while (await next_event(written))["seq"] < 150:  # until the last step is in the log
            pass
    sent = 0
    writing_third, go_on = trio.Event(), trio.Event()

    async def slow_reader(scope: Any, receive: Any, send: Any) -> None:
        async def slowly(message: Any) -> None:
            nonlocal sent
            if message["type"] == "http.response.body" and message.get("more_body"):
                sent += 1
                if sent == 3:
                    writing_third.set()
                    await go_on.wait()
            await send(message)

        await harness.app(scope, receive, slowly)

    slow = McpClient(harness.app, slow_reader)
    message = request("tasks/stream", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES)
    with trio.fail_after(20):
        async with slow.stream(message) as stream:
            await writing_third.wait()
            harness.app.dispatcher.server.changes.close()
            await wait_all_tasks_blocked()
            go_on.set()
            response = await stream.read_to_end()
    assert [e["seq"] for e in events_in(response)] == [0, 1, 2]
    assert result_of(response)["resultType"] == "complete"
    harness.gates["slow"].set()


async def test_several_readers_of_one_task_each_get_every_event(harness: Harness) -> None:
    """presa-defined (S-04, S-24; SEP-2694 Open Question 2): three streams on three
    connections follow one task live, sharing their reads of the log; each delivers
    every event once, in order, and ends with the task."""
    task_id = await harness.start(before=2, after=20, label="many")
    results: dict[int, list[int]] = {}

    async def read(port: int, *, task_status: trio.TaskStatus[None]) -> None:
        async with harness.stream(task_id, client=("127.0.0.1", port)) as stream:
            seqs = [(await next_event(stream))["seq"]]
            task_status.started()
            while True:
                with trio.fail_after(20):
                    message = await stream.next_message()
                if message.get("method") != EVENT:
                    break
                seqs.append(message["params"]["seq"])
        results[port] = seqs

    async with trio.open_nursery() as nursery:
        for port in (50010, 50011, 50012):
            await nursery.start(read, port)
        harness.gates["many"].set()
    assert list(results.values()) == [list(range(24))] * 3


@pytest.mark.parametrize("retention", [Retention(max_events=3)])
async def test_a_reader_overtaken_by_retention_gets_events_gone_on_its_stream(
    harness: Harness, store: TaskStore
) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics, "If the receiver cannot
    provide a gap-free stream after the cursor, it MUST return events_gone"; S-13):
    ten events appended at once past a live reader's cursor, beyond what retention
    keeps, end its open stream with -32010 naming the earliest retained seq."""
    task_id = await harness.start(label="overtaken")
    async with harness.stream(task_id) as stream:
        assert (await next_event(stream))["seq"] == 0
        burst = [NewEvent(STEP, {"n": n}) for n in range(10)]
        await store.append_events(task_id, burst, int(time.time() * 1000), Retention(max_events=3))
        with trio.fail_after(20):
            final = await stream.next_message()
    assert final["error"]["code"] == EVENTS_GONE
    assert final["error"]["data"] == {"reason": "events_gone", "taskId": task_id, "earliestSeq": 8}
    harness.gates["overtaken"].set()


async def test_a_stream_of_a_task_deleted_at_its_ttl_ends_normally(store: TaskStore) -> None:
    """presa-defined (S-24; docs/task-events.md, "an empty result: … expiry"): a
    working task's TTL elapses while a stream follows it and the reaper deletes it;
    the stream ends with `{}` (nothing more will come), never waits on a task that is
    gone."""
    gates = Gates()
    now = [epoch_ms()]
    server = server_on_a_clock(store, gates, now, reap_every=0.01)
    async with serving(McpApp.for_server(server)) as client:
        result = await client.call_tool(
            "emitter", {"label": "ttl"}, capabilities=TASKS_CAPABILITIES
        )
        task_id = result["taskId"]
        message = request("tasks/stream", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES)
        async with client.stream(message) as stream:
            assert (await next_event(stream))["seq"] == 0
            now[0] += 120_000
            with trio.fail_after(20):
                final = await stream.next_message()
        assert final["result"]["resultType"] == "complete"
        gates["ttl"].set()


async def test_a_stream_that_cannot_close_an_ended_tasks_log_ends_normally(
    postgres: Postgres, postgres_url: str
) -> None:
    """presa-defined (S-24; docs/task-events.md, "an empty result: terminal … `{}`"):
    a task ended on a server without task event streams leaves its log open; while
    the database is read-only, a stream of it finds the task ended and cannot append
    the closing event: it ends with `{}` (the client asks tasks/get for the outcome)
    rather than trying again and again."""
    gates = Gates()
    gates[""].set()
    async with open_store(postgres_url) as store:
        async with serving(McpApp.for_server(events_server(store, None, gates))) as plain:
            without_events = Harness(plain, gates, plain.app, TaskEventLog())
            task_id = await without_events.start()
            await without_events.until_status(task_id, "completed")
        server = events_server(store, TaskEventLog(), gates)
        async with serving(McpApp.for_server(server)) as client:
            with postgres.read_only(urlsplit(postgres_url).path.lstrip("/")), trio.fail_after(20):
                message = request(
                    "tasks/stream", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES
                )
                # The first call may meet a session the episode ended: a retryable -32603.
                while "result" not in final_message(response := await client.post(message)):
                    assert final_message(response)["error"]["data"] == {"retryable": True}
    assert (events_in(response), result_of(response)["resultType"]) == ([], "complete")
