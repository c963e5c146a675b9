"""``subscriptions/listen``: one long-lived SSE stream of the changes a client asked for.

Rules of this file (subscriptions): the first message is the acknowledgement;
every later one is a requested change tagged with the listen id (same JSON
type); a change nobody asked for is shown absent by the next requested
change arriving first, not by waiting; and every test leaves with the app
call returned.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from trio.testing import MockClock

from presa_trio.http.app import McpApp
from presa_trio.http.sse import PING_INTERVAL_S
from presa_trio.server import RequestContext, Server
from presa_trio.server.subscriptions import MAX_PENDING_TOPICS
from presa_trio.tasks import Policy, TasksExtension
from presa_trio.testing import McpClient, Stream, meta, request, running
from presa_trio.wire.errors import INTERNAL_ERROR, INVALID_PARAMS
from presa_trio.wire.meta import META_LOG_LEVEL, META_SUBSCRIPTION_ID
from presa_trio.wire.sse import Comment
from tests.expect import error_of, result_of

ACK = "notifications/subscriptions/acknowledged"
TOOLS_CHANGED = "notifications/tools/list_changed"
PROMPTS_CHANGED = "notifications/prompts/list_changed"
RESOURCES_CHANGED = "notifications/resources/list_changed"
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def listen(notifications: dict[str, Any], request_id: int | str = 1_764_000_000_000) -> Any:
    return request("subscriptions/listen", {"notifications": notifications}, request_id=request_id)


@pytest.fixture
async def tools_listen(client: McpClient) -> AsyncIterator[Stream]:
    async with client.stream(listen({"toolsListChanged": True})) as stream:
        yield stream


async def test_the_first_message_acknowledges_the_subscription(client: McpClient) -> None:
    """Runner-scored (server-stateless/sep-2575-server-sends-subscription-ack): an SSE
    stream, HTTP 200, opening with the acknowledgement tagged with the listen id and
    naming the honoured filter (basic/patterns/subscriptions)."""
    with trio.fail_after(5):
        async with client.stream(listen({"toolsListChanged": True}, request_id=42)) as stream:
            assert stream.response.status == 200
            assert stream.response.headers["content-type"] == "text/event-stream"
            ack = await stream.next_message()
            assert ack == {
                "jsonrpc": "2.0",
                "method": ACK,
                "params": {
                    "_meta": {META_SUBSCRIPTION_ID: 42},
                    "notifications": {"toolsListChanged": True},
                },
            }


async def test_the_acknowledgement_leaves_out_what_is_not_honoured(client: McpClient) -> None:
    """Spec-mandated (subscriptions §Acknowledgment: the honoured subset; omit
    unsupported types)."""
    wanted = {"toolsListChanged": False, "promptsListChanged": True, "somethingElse": True}
    with trio.fail_after(5):
        async with client.stream(listen(wanted)) as stream:
            ack = await stream.next_message()
    assert ack["params"]["notifications"] == {"promptsListChanged": True}


def tools_only_app(server: Server | None = None) -> McpApp:
    """A server that offers tools and nothing else: no prompts, no resources."""
    server = server or Server("tools-only", "1.0.0")

    @server.tool(description="Answers ok.")
    async def ok(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return "ok"

    return McpApp.for_server(server)


async def test_the_acknowledgement_leaves_out_what_the_server_does_not_offer() -> None:
    """Spec-mandated (schema $defs.SubscriptionsAcknowledgedNotificationParams: only the
    types the server supports, "e.g., `promptsListChanged` when the server has no
    prompts"; subscriptions §Acknowledgment): a server without prompts or resources
    honours none of their notifications, as server/discover offers neither."""
    wanted = {
        "toolsListChanged": True,
        "promptsListChanged": True,
        "resourcesListChanged": True,
        "resourceSubscriptions": ["test://static-text"],
    }
    async with running(tools_only_app()) as client:
        with trio.fail_after(5):
            async with client.stream(listen(wanted)) as stream:
                ack = await stream.next_message()
    assert ack["params"]["notifications"] == {"toolsListChanged": True}


@pytest.mark.parametrize("listen_id", [1_764_000_000_000, "listen-7"], ids=["integer", "string"])
async def test_a_change_is_delivered_tagged_with_the_listen_id(
    client: McpClient, listen_id: int | str
) -> None:
    """Runner-scored (server-stateless/sep-2575-server-tags-subscription-id,
    sep-2575-server-sends-tools-list-changed-on-subscription): the trigger's change
    reaches the open stream, tagged with the listen id in its own JSON type
    (subscriptions §Receiving Notifications; spec-notes §13)."""
    with trio.fail_after(5):
        async with client.stream(listen({"toolsListChanged": True}, listen_id)) as stream:
            await stream.next_message()
            result_of(await client.call("tools/call", {"name": "test_trigger_tool_change"}))
            change = await stream.next_message()
    assert change["method"] == TOOLS_CHANGED
    assert change["params"]["_meta"] == {META_SUBSCRIPTION_ID: listen_id}
    assert "id" not in change


async def test_only_requested_changes_are_delivered(client: McpClient) -> None:
    """Runner-scored (server-stateless/sep-2575-server-honors-notification-filter,
    sep-2575-server-sends-prompts-list-changed-on-subscription): a prompts-only listen
    never sees a tools change; the prompts change that follows arrives first."""
    with trio.fail_after(5):
        async with client.stream(listen({"promptsListChanged": True})) as stream:
            await stream.next_message()
            await client.call("tools/call", {"name": "test_trigger_tool_change"})
            await client.call("tools/call", {"name": "test_trigger_prompt_change"})
            change = await stream.next_message()
    assert change["method"] == PROMPTS_CHANGED


async def test_every_open_stream_that_asked_gets_the_change(client: McpClient) -> None:
    """Spec-mandated (subscriptions §Multiple Concurrent Subscriptions: deliver each change to every
    open stream whose filter
    asks for it)."""
    with trio.fail_after(5):
        async with (
            client.stream(listen({"toolsListChanged": True}, 1)) as first,
            client.stream(
                listen({"toolsListChanged": True, "promptsListChanged": True}, 2)
            ) as second,
        ):
            await first.next_message()
            await second.next_message()
            await client.call("tools/call", {"name": "test_trigger_tool_change"})
            got_first, got_second = await first.next_message(), await second.next_message()
    assert got_first["params"]["_meta"] == {META_SUBSCRIPTION_ID: 1}
    assert got_second["params"]["_meta"] == {META_SUBSCRIPTION_ID: 2}
    assert got_first["method"] == got_second["method"] == TOOLS_CHANGED


async def test_resource_updates_arrive_only_for_subscribed_uris(
    client: McpClient, app: McpApp
) -> None:
    """Spec-mandated (subscriptions §Receiving Notifications: resourceSubscriptions):
    ``notifications/resources/updated {uri}`` for the listed URIs only."""
    server = app.dispatcher.server
    wanted = {"resourceSubscriptions": ["test://static-text"], "resourcesListChanged": True}
    with trio.fail_after(5):
        async with client.stream(listen(wanted)) as stream:
            ack = await stream.next_message()
            server.notify_resource_updated("test://static-binary")
            server.notify_resource_updated("test://static-text")
            server.notify_resources_list_changed()
            updated, list_changed = await stream.next_message(), await stream.next_message()
    assert ack["params"]["notifications"] == wanted
    assert updated["method"] == "notifications/resources/updated"
    assert updated["params"]["uri"] == "test://static-text"
    assert list_changed["method"] == "notifications/resources/list_changed"


async def test_a_subscribed_uri_is_matched_exactly_not_as_a_prefix(
    client: McpClient, app: McpApp
) -> None:
    """presa-defined (spec-notes §68: schema ``$defs.ResourceUpdatedNotificationParams``
    lets an update name "a sub-resource of the one that the client actually subscribed
    to", and no page says which URIs are one's sub-resources): an update is delivered
    only for a URI the filter lists, character for character; one under it, or one that
    differs only in case, is not."""
    server = app.dispatcher.server
    wanted = {"resourceSubscriptions": ["test://template/"]}
    with trio.fail_after(5):
        async with client.stream(listen(wanted)) as stream:
            await stream.next_message()
            server.notify_resource_updated("test://template/1/data")
            server.notify_resource_updated("TEST://template/")
            server.notify_resource_updated("test://template/")
            updated = await stream.next_message()
    assert updated["params"]["uri"] == "test://template/"


async def test_a_tool_on_a_worker_thread_announces_a_resource_update(
    client: McpClient, app: McpApp
) -> None:
    """Spec-mandated (subscriptions §Receiving Notifications: resourceSubscriptions;
    presa's thread=True tools): a plain `def` tool, run on a worker thread, calls
    `ctx.server.notify_resource_updated` as an async tool does; the call answers and
    the listen stream gets the update. It failed with -32603 (Trio's Event set from
    the thread), and the update was never sent."""
    server = app.dispatcher.server

    def touch(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        ctx.server.notify_resource_updated("test://static-text")
        return "touched"

    server.tool(description="Touches a resource.", thread=True)(touch)
    wanted = {"resourceSubscriptions": ["test://static-text"]}
    with trio.fail_after(5):
        async with client.stream(listen(wanted)) as stream:
            await stream.next_message()
            touched = result_of(await client.call("tools/call", {"name": "touch"}))
            updated = await stream.next_message()
    assert touched["content"] == [{"type": "text", "text": "touched"}]
    assert updated["method"] == "notifications/resources/updated"
    assert updated["params"]["uri"] == "test://static-text"


async def test_registering_while_served_announces_the_list_change(
    client: McpClient, app: McpApp
) -> None:
    """Spec-mandated (tools, prompts §List Changed Notification: a server declaring
    listChanged SHOULD notify when the list changes; resources §List Changed
    Notification): a tool, prompt, resource or template registered while the server
    is served is announced on the streams that asked, each once."""
    server = app.dispatcher.server
    wanted = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}

    async def late_tool(ctx: RequestContext) -> str:
        return "late"

    async def late_template(ctx: RequestContext, variables: dict[str, str]) -> str:
        return "late"

    with trio.fail_after(5):
        async with client.stream(listen(wanted)) as stream:
            await stream.next_message()
            server.tool(description="Late.")(late_tool)
            assert (await stream.next_message())["method"] == TOOLS_CHANGED
            server.prompt("late_prompt", description="Late.")(late_tool)
            assert (await stream.next_message())["method"] == PROMPTS_CHANGED
            server.resource("test://late", name="late")(late_tool)
            assert (await stream.next_message())["method"] == RESOURCES_CHANGED
            server.resource_template("test://late/{n}", name="late-n")(late_template)
            assert (await stream.next_message())["method"] == RESOURCES_CHANGED
            await client.call("tools/call", {"name": "test_trigger_tool_change"})
            assert (await stream.next_message())["method"] == TOOLS_CHANGED


async def test_request_scoped_notifications_never_reach_a_listen_stream(
    client: McpClient,
) -> None:
    """Spec-mandated (streamable-http §Receiving Messages: progress and log messages
    flow only on the stream of their request; subscriptions §Multiple Concurrent Subscriptions)."""
    params = {
        "notifications": {"toolsListChanged": True},
        "_meta": {**meta(progressToken="p"), META_LOG_LEVEL: "debug"},
    }
    with trio.fail_after(5):
        async with client.stream(request("subscriptions/listen", params)) as stream:
            await stream.next_message()
            logged = await client.call(
                "tools/call",
                {
                    "name": "test_logging_tool",
                    "_meta": {**meta(), META_LOG_LEVEL: "debug"},
                },
            )
            assert logged.events()[0]["method"] == "notifications/message"
            await client.call("tools/call", {"name": "test_trigger_tool_change"})
            assert (await stream.next_message())["method"] == TOOLS_CHANGED


async def test_a_disconnect_ends_the_call(client: McpClient) -> None:
    """Spec-mandated (streamable-http §Cancellation; subscriptions §Cancellation: the client ends a
    listen by closing the stream): each closed stream's ASGI call returns (leaving the
    stream's context waits for it), and later changes go nowhere."""
    with trio.fail_after(5):
        for _ in range(3):
            async with client.stream(listen({"toolsListChanged": True})) as stream:
                await stream.next_message()
                await client.call("tools/call", {"name": "test_trigger_tool_change"})
                assert (await stream.next_message())["method"] == TOOLS_CHANGED
    result_of(await client.call("tools/call", {"name": "test_trigger_tool_change"}))


def gated_tasks_app(gate: trio.Event) -> McpApp:
    """A server whose one task tool waits for ``gate``: every task completes at once."""
    server = Server("burst", "1.0.0")
    tasks = TasksExtension()
    server.add_extension(tasks)

    @tasks.tool(Policy.REQUIRED, description="Waits for the test's gate.")
    async def gated(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await gate.wait()
        return "done"

    return McpApp.for_server(server)


async def test_a_burst_of_completions_reaches_a_listen_whole() -> None:
    """presa-defined (subscriptions.py; SEP-2663 §Task Status Notifications; T-51, T-54):
    100 tasks completing together (no checkpoint between their changes, so the stream's
    task sees them all at once) reach a listen on all of them: the final state of every
    one, once each."""
    gate = trio.Event()
    async with running(gated_tasks_app(gate)) as client:
        with trio.fail_after(10):
            task_ids = []
            for _ in range(100):
                created = await client.call("tools/call", {"name": "gated"}, capabilities=TASKS)
                task_ids.append(result_of(created)["taskId"])
            listened = request(
                "subscriptions/listen",
                {"notifications": {"taskIds": task_ids}},
                capabilities=TASKS,
            )
            async with client.stream(listened) as stream:
                ack = await stream.next_message()
                assert ack["params"]["notifications"] == {"taskIds": task_ids}
                gate.set()
                finals = [(await stream.next_message())["params"] for _ in task_ids]
    assert sorted(final["taskId"] for final in finals) == sorted(task_ids)
    assert {final["status"] for final in finals} == {"completed"}
    assert {final["result"]["content"][0]["text"] for final in finals} == {"done"}


async def test_a_listen_with_too_many_topics_waiting_is_ended_with_its_result(
    client: McpClient, app: McpApp
) -> None:
    """Spec-mandated (basic/patterns/subscriptions §Graceful Closure: a server ending a
    stream SHOULD first send the listen result with the subscription id): presa ends
    a stream whose reader has more than MAX_PENDING_TOPICS distinct changes waiting
    (here, all published before its task could send one) rather than let it miss
    changes silently."""
    server = app.dispatcher.server
    uris = [f"test://burst/{n}" for n in range(MAX_PENDING_TOPICS + 1)]
    with trio.fail_after(5):
        async with client.stream(listen({"resourceSubscriptions": uris}, 9)) as stream:
            await stream.next_message()
            for uri in uris:
                server.notify_resource_updated(uri)
            response = await stream.read_to_end()
    ack, final = response.events()
    assert ack["method"] == ACK
    assert final["id"] == 9
    assert final["result"]["resultType"] == "complete"
    assert final["result"]["_meta"][META_SUBSCRIPTION_ID] == 9


async def test_a_quiet_stream_is_kept_alive_with_comments(
    tools_listen: Stream, autojump_clock: MockClock
) -> None:
    """Spec-mandated (streamable-http §Receiving Messages: keep-alive comment lines on
    long-lived streams): after PING_INTERVAL_S of silence, ``: ping``."""
    with trio.fail_after(3 * PING_INTERVAL_S):
        await tools_listen.next_message()
        start = trio.current_time()
        assert await tools_listen.next_event() == Comment("ping")
        assert trio.current_time() - start == pytest.approx(PING_INTERVAL_S)
        assert await tools_listen.next_event() == Comment("ping")


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"notifications": True},
        {"notifications": {"toolsListChanged": "yes"}},
        {"notifications": {"resourceSubscriptions": "test://static-text"}},
        {"notifications": {"resourceSubscriptions": [1]}},
        {"notifications": {"toolsListChanged": None}},
        {"notifications": {"resourceSubscriptions": None}},
    ],
    ids=[
        "no-filter",
        "filter-not-object",
        "flag-not-boolean",
        "uris-not-list",
        "uri-not-string",
        "flag-null",
        "uris-null",
    ],
)
async def test_a_malformed_filter_is_invalid_params(
    client: McpClient, params: dict[str, Any]
) -> None:
    """Spec-mandated (schema $defs.SubscriptionsListenRequestParams: notifications is a
    required SubscriptionFilter, whose fields are optional but typed: a null is neither
    a boolean nor a list of URIs, for the flags and the URIs alike)."""
    error_of(await client.call("subscriptions/listen", params), 400, INVALID_PARAMS)


async def test_past_a_clients_cap_one_more_listen_is_429_and_other_clients_listen() -> None:
    """presa-defined (spec-notes §62: subscriptions §Multiple Concurrent Subscriptions lets
    a client hold several, and sets no number): one client's open listen streams are
    bounded, as its task event streams are, with the same answer: past the cap (2 here)
    one more, from any of its connections, is 429 with Retry-After and a retryable
    -32603 naming the limit, checked after the filter; a client at another address
    listens, and once one of the first client's streams ends it listens again."""
    app = tools_only_app(Server("tools-only", "1.0.0", max_listen_streams_per_client=2))
    wanted = {"toolsListChanged": True}
    async with running(app) as client:
        with trio.fail_after(5):
            async with client.stream(listen(wanted, 1), client=("127.0.0.1", 50001)) as first:
                async with client.stream(listen(wanted, 2), client=("127.0.0.1", 50002)) as second:
                    for stream in (first, second):
                        await stream.next_message()
                    refused = await client.post(listen(wanted, 3), client=("127.0.0.1", 50003))
                    assert refused.headers["retry-after"] == "5"
                    assert error_of(refused, 429, INTERNAL_ERROR, 3)["data"] == {
                        "retryable": True,
                        "limit": "max_listen_streams_per_client",
                        "reason": "too_many_streams",
                    }
                    malformed = await client.call("subscriptions/listen", {"notifications": 1})
                    error_of(malformed, 400, INVALID_PARAMS)
                    async with client.stream(
                        listen(wanted, 4), client=("127.0.0.2", 50004)
                    ) as other:
                        assert (await other.next_message())["method"] == ACK
                async with client.stream(listen(wanted, 5), client=("127.0.0.1", 50005)) as again:
                    assert (await again.next_message())["method"] == ACK
