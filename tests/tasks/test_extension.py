"""The extension on the wire: negotiation, policies, the three methods, errors, headers.

Every test drives the ASGI app in-process (presa_trio/testing/) against a
small server whose tools wait on an Event the test sets, so a task's status
is always the one the test chose. Errors are compared by code constant.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from trio.testing import wait_all_tasks_blocked

from presa_trio.auth.guard import ResourceGuard, Verifiers
from presa_trio.auth.static import StaticTokens
from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server, ToolError
from presa_trio.tasks import TASKS_EXTENSION, Limits, Policy, TaskRunner, TasksExtension
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.tasks.stores.sqlite.store import SqliteStore
from presa_trio.testing import McpClient, Response, headers_for, meta, request, running
from presa_trio.wire.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    InvalidParams,
)
from presa_trio.wire.meta import META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_SERVER_INFO
from presa_trio.wire.mrtr import Elicitation, InputRequired
from tests.expect import error_of, result_of, without_incident
from tests.nesting import DEEP, answers_at_every_depth
from tests.tasks.helpers import TRIO_CLOCK

DECLARED: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
UNDECLARED: dict[str, Any] = {"elicitation": {}}
REQUIRES_TASKS: dict[str, Any] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
TASK_KEYS = {
    "taskId",
    "status",
    "statusMessage",
    "createdAt",
    "lastUpdatedAt",
    "ttlMs",
    "pollIntervalMs",
}


@attrs.define(eq=False)
class Harness:
    """A test server with task tools; ``gate`` releases every waiting tool."""

    app: McpApp
    tasks: TasksExtension
    gate: trio.Event
    entered: list[str]


def principal(ctx: RequestContext) -> str:
    """A stand-in for authentication: the scope is the clientInfo name."""
    return str((ctx.meta.client_info or {}).get("name", "anonymous"))


def build(**runner_options: Any) -> Harness:
    server = Server("tasks-test", "0.0.1")
    options = {"ttl_ms": 60_000, "poll_interval_ms": 100, **runner_options}
    tasks = TasksExtension(TaskRunner(**options), scope_of=principal)
    server.add_extension(tasks)
    gate = trio.Event()
    entered: list[str] = []

    async def wait(name: str, arguments: dict[str, Any]) -> None:
        entered.append(name)
        if arguments.get("wait"):
            await gate.wait()

    @server.tool(description="Answers at once; never a task.")
    async def plain(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await wait("plain", arguments)
        return "plain done"

    @tasks.tool(Policy.OPTIONAL, description="A task when the request allows it.")
    async def maybe(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await wait("maybe", arguments)
        return f"maybe done {arguments.get('label', '')}".strip()

    @tasks.tool(Policy.REQUIRED, description="Only ever a task.")
    async def always(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await wait("always", arguments)
        return "always done"

    @tasks.tool(Policy.OPTIONAL, description="Reports a tool error.")
    async def tool_error(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await wait("tool_error", arguments)
        raise ToolError("the widget is broken")

    @tasks.tool(Policy.OPTIONAL, description="Raises a spec error.")
    async def spec_error(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await wait("spec_error", arguments)
        raise InvalidParams("widget must be blue", {"field": "widget"})

    @tasks.tool(Policy.OPTIONAL, description="Crashes.")
    async def crash(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await wait("crash", arguments)
        raise RuntimeError("token=hunter2")

    @tasks.tool(Policy.OPTIONAL, description="Exits, as sys.exit() inside it would.")
    async def exits(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await wait("exits", arguments)
        raise SystemExit("token=hunter2")

    @tasks.tool(Policy.OPTIONAL, description="Reports progress and logs.")
    async def chatty(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.report_progress(1, 2)
        await ctx.log("error", "visible only on a plain call")
        return "chatty done"

    @tasks.tool(Policy.OPTIONAL, description="Asks one question inside its task.")
    async def asks(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        answers = await ctx.ask({"k": Elicitation("Sure?", {"type": "object", "properties": {}})})
        return answers.elicitation("k").action

    @tasks.tool(Policy.OPTIONAL, description="Asks from two child tasks, each its own key.")
    async def asks_apart(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        actions: dict[str, str] = {}

        async def ask(key: str) -> None:
            question = Elicitation(f"{key}?", {"type": "object", "properties": {}})
            actions[key] = (await ctx.ask({key: question})).elicitation(key).action

        async with trio.open_nursery() as nursery:
            for key in ("a", "b"):
                nursery.start_soon(ask, key)
        return " ".join(f"{key}={action}" for key, action in sorted(actions.items()))

    @tasks.tool(Policy.OPTIONAL, description="Asks by returning a multi round-trip round.")
    async def mrtr_only(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        return InputRequired({"k": Elicitation("Sure?", {"type": "object", "properties": {}})})

    # Built last: the method table reflects the tools registered by now.
    return Harness(McpApp.for_server(server), tasks, gate, entered)


@pytest.fixture
def harness() -> Harness:
    return build()


@pytest.fixture
async def client(harness: Harness) -> AsyncIterator[McpClient]:
    async with running(harness.app) as opened:
        yield opened


async def call_tool(
    client: McpClient,
    name: str,
    arguments: dict[str, Any] | None = None,
    capabilities: dict[str, Any] = DECLARED,
    **extra: Any,
) -> Response:
    params = {"name": name, "arguments": arguments or {}, **extra}
    return await client.call("tools/call", params, capabilities=capabilities)


async def create(client: McpClient, name: str = "maybe", **arguments: Any) -> str:
    created = result_of(await call_tool(client, name, arguments))
    assert created["resultType"] == "task"
    task_id: str = created["taskId"]
    return task_id


async def get(client: McpClient, task_id: str, capabilities: Any = DECLARED) -> Response:
    return await client.call("tasks/get", {"taskId": task_id}, capabilities=capabilities)


async def stored(harness: Harness) -> int:
    return (await harness.tasks.runner.store.counts()).active


async def test_discover_advertises_the_extension_with_empty_settings(client: McpClient) -> None:
    """Spec-mandated (SEP-2663 §Capability Negotiation; §Backward Compatibility;
    T-01, T-02; runner tasks-extension-advertised)."""
    capabilities = result_of(await client.call("server/discover"))["capabilities"]
    assert capabilities["extensions"] == {TASKS_EXTENSION: {}}
    assert "tasks" not in capabilities


@pytest.mark.parametrize(
    ("tool", "capabilities", "expected"),
    [
        ("plain", DECLARED, "result"),
        ("plain", UNDECLARED, "result"),
        ("maybe", DECLARED, "task"),
        ("maybe", UNDECLARED, "result"),
        ("always", DECLARED, "task"),
        ("always", UNDECLARED, "-32021"),
    ],
)
async def test_each_policy_answers_as_its_table_says(
    client: McpClient, harness: Harness, tool: str, capabilities: Any, expected: str
) -> None:
    """Spec-mandated (SEP-2663 §Capability Negotiation: MAY create for a declaring
    request, MUST NOT otherwise, -32021 if only a task will do; T-04, T-05, T-06,
    T-14, T-69; runner sep-2663-server-returns-missing-capability-*)."""
    response = await call_tool(client, tool, capabilities=capabilities)
    if expected == "-32021":
        error = error_of(response, 400, MISSING_REQUIRED_CLIENT_CAPABILITY)
        assert error["data"] == REQUIRES_TASKS
        assert (harness.entered, (await stored(harness))) == ([], 0)
        return
    result = result_of(response)
    if expected == "task":
        assert (result["resultType"], result["status"]) == ("task", "working")
    else:
        assert result["resultType"] == "complete"
        assert "taskId" not in result
        assert result["content"][0]["text"] == f"{tool} done"


async def test_the_declaration_counts_per_request_on_one_client(client: McpClient) -> None:
    """Spec-mandated (SEP-2663 §Capability Negotiation, "regardless of prior
    declarations"; T-03, T-70; runner tasks-per-request-meta-opt-in)."""
    kinds = []
    for capabilities in (DECLARED, UNDECLARED, DECLARED):
        kinds.append(
            result_of(await call_tool(client, "maybe", capabilities=capabilities))["resultType"]
        )
    assert kinds == ["task", "complete", "task"]


async def test_a_legacy_tasks_capability_is_not_a_declaration(client: McpClient) -> None:
    """Spec-mandated (SEP-2663 §Backward Compatibility: legacy-only clients are
    non-declaring; T-07; spec-notes §17)."""
    legacy: dict[str, Any] = {
        "tasks": {"requests": {"tools": {"call": {}}}, "cancel": {}, "list": {}}
    }
    assert (
        result_of(await call_tool(client, "maybe", capabilities=legacy))["resultType"] == "complete"
    )
    error_of(
        await call_tool(client, "always", capabilities=legacy),
        400,
        MISSING_REQUIRED_CLIENT_CAPABILITY,
    )
    error_of(await get(client, "any", capabilities=legacy), 400, MISSING_REQUIRED_CLIENT_CAPABILITY)


async def test_any_object_under_the_extension_key_is_a_declaration(client: McpClient) -> None:
    """presa-defined (SEP-2663 §Capability Negotiation defines no settings; spec-notes §16):
    unknown settings are ignored, not refused."""
    capabilities = {"extensions": {TASKS_EXTENSION: {"future-setting": True}}}
    assert (
        result_of(await call_tool(client, "maybe", capabilities=capabilities))["resultType"]
        == "task"
    )


async def test_a_legacy_task_param_is_ignored(client: McpClient) -> None:
    """Spec-mandated (SEP-2663 §Backward Compatibility: params.task is unknown, MUST
    be ignored; T-08; runner sep-2663-legacy-task-param-ignored)."""
    hint = {"ttl": 1234, "pollInterval": 5}
    plain = result_of(await call_tool(client, "plain", task=hint))
    assert (plain["resultType"], plain["content"][0]["text"]) == ("complete", "plain done")
    undeclared = result_of(await call_tool(client, "maybe", capabilities=UNDECLARED, task=hint))
    assert undeclared["resultType"] == "complete"
    declared = result_of(await call_tool(client, "maybe", task=hint))
    assert (declared["ttlMs"], declared["pollIntervalMs"]) == (60_000, 100)


async def test_an_old_protocol_version_never_reaches_the_extension(
    client: McpClient, harness: Harness
) -> None:
    """Spec-mandated (SEP-2663 §Backward Compatibility, 2025-11-25 row; T-09)."""
    message = request(
        "tools/call",
        {
            "name": "always",
            "_meta": meta(DECLARED, **{"io.modelcontextprotocol/protocolVersion": "2025-11-25"}),
        },
    )
    headers = {**headers_for(message), "mcp-protocol-version": "2025-11-25", "mcp-name": "always"}
    error_of(await client.post(message, headers), 400, UNSUPPORTED_PROTOCOL_VERSION)
    assert (harness.entered, (await stored(harness))) == ([], 0)


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list", "tasks/other"])
async def test_only_the_three_task_methods_exist(client: McpClient, method: str) -> None:
    """Spec-mandated (SEP-2663 §Backward Compatibility: tasks/result is -32601;
    §Reservations; T-15, T-16, T-75): 404 before any params or Mcp-Name check."""
    response = await client.call(method, {"taskId": "probe"}, capabilities=DECLARED)
    error_of(response, 404, METHOD_NOT_FOUND)


async def test_the_create_result_is_a_flat_task_with_server_info(client: McpClient) -> None:
    """Spec-mandated (SEP-2663 §Task Creation, §Polymorphic Results; T-13, T-17, T-21,
    T-22, T-80): plain JSON, no wrapper, no payload, no requestState."""
    response = await call_tool(client, "maybe", {"wait": True})
    assert response.headers["content-type"] == "application/json"
    created = result_of(response)
    assert set(created) == TASK_KEYS | {"resultType", "_meta"}
    assert created["resultType"] == "task"
    assert created["_meta"][META_SERVER_INFO] == {"name": "tasks-test", "version": "0.0.1"}
    assert created["createdAt"] == created["lastUpdatedAt"]
    assert created["createdAt"].endswith("Z")


async def test_tasks_get_reads_each_status_with_result_type_complete(
    client: McpClient, harness: Harness
) -> None:
    """Spec-mandated (SEP-2663 §Task Polling (Response); §Rationale, Splitting Reads;
    T-27, T-29, T-32, T-36, T-62, T-80): a get is a pure read; the completed task
    holds exactly the result the plain call returns (``_meta`` aside)."""
    task_id = await create(client, label="x", wait=True)
    first, second = result_of(await get(client, task_id)), result_of(await get(client, task_id))
    assert first == second
    assert (first["resultType"], first["status"]) == ("complete", "working")
    assert set(first) == TASK_KEYS | {"resultType", "_meta"}

    harness.gate.set()
    await wait_all_tasks_blocked()
    done = result_of(await get(client, task_id))
    assert (done["resultType"], done["status"]) == ("complete", "completed")
    assert done["lastUpdatedAt"] >= done["createdAt"]
    plain = result_of(await call_tool(client, "maybe", {"label": "x"}, capabilities=UNDECLARED))
    assert {k: v for k, v in done["result"].items() if k != "_meta"} == {
        k: v for k, v in plain.items() if k != "_meta"
    }
    assert "io.modelcontextprotocol/related-task" not in done["result"].get("_meta", {})


async def test_update_and_cancel_are_acknowledged_with_an_empty_result(
    client: McpClient, harness: Harness
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests (Response), §Task Cancellation
    (Response); T-30, T-40, T-41, T-46, T-47): the acks carry only resultType and
    _meta; a cancelled task reads back with no payload; a cancel of a terminal task
    is acked and changes nothing."""
    task_id = await create(client, wait=True)
    ack = result_of(
        await client.call(
            "tasks/update", {"taskId": task_id, "inputResponses": {}}, capabilities=DECLARED
        )
    )
    assert (set(ack), ack["resultType"]) == ({"resultType", "_meta"}, "complete")
    ack = result_of(await client.call("tasks/cancel", {"taskId": task_id}, capabilities=DECLARED))
    assert (set(ack), ack["resultType"]) == ({"resultType", "_meta"}, "complete")
    cancelled = result_of(await get(client, task_id))
    assert cancelled["status"] == "cancelled"
    assert not {"result", "error", "inputRequests"} & set(cancelled)
    again = result_of(await client.call("tasks/cancel", {"taskId": task_id}, capabilities=DECLARED))
    assert set(again) == {"resultType", "_meta"}
    assert result_of(await get(client, task_id)) == cancelled


@pytest.mark.parametrize(
    ("method", "extra"),
    [("tasks/get", {}), ("tasks/update", {"inputResponses": {}}), ("tasks/cancel", {})],
)
async def test_an_unknown_or_foreign_task_id_is_invalid_params(
    client: McpClient, method: str, extra: dict[str, Any]
) -> None:
    """Spec-mandated (SEP-2663 §Protocol Errors; §Security Implications, auth
    binding; T-43, T-48, T-57, T-65): another principal's task gives exactly the
    error of an unknown id, and is left as it was."""
    alice = meta(DECLARED, **{META_CLIENT_INFO: {"name": "alice", "version": "1"}})
    bob = meta(DECLARED, **{META_CLIENT_INFO: {"name": "bob", "version": "1"}})
    created = result_of(
        await client.call(
            "tools/call", {"name": "maybe", "arguments": {"wait": True}, "_meta": alice}
        )
    )
    task_id = created["taskId"]
    foreign = error_of(
        await client.call(method, {"taskId": task_id, **extra, "_meta": bob}), 400, INVALID_PARAMS
    )
    unknown = error_of(
        await client.call(method, {"taskId": "nope", **extra, "_meta": bob}), 400, INVALID_PARAMS
    )
    assert foreign == unknown
    owned = result_of(await client.call("tasks/get", {"taskId": task_id, "_meta": alice}))
    assert owned["status"] == "working"


async def test_an_expired_task_says_expired_to_its_owner_only(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Spec-mandated (SEP-2663 §Protocol Errors, -32602 for an expired task;
    §Security Implications; T-35, T-60): informative to the owner, not-found to
    anyone else."""
    harness = build(ttl_ms=1000, clock=TRIO_CLOCK)
    async with running(harness.app) as client:
        task_id = await create(client, wait=True)
        autojump_clock.jump(1)
        owner = error_of(await get(client, task_id), 400, INVALID_PARAMS)
        other = meta(DECLARED, **{META_CLIENT_INFO: {"name": "mallory", "version": "1"}})
        stranger = error_of(
            await client.call("tasks/get", {"taskId": task_id, "_meta": other}), 400, INVALID_PARAMS
        )
        assert "expired" in owner["message"]
        assert "expired" not in stranger["message"]


async def test_a_task_past_its_ttl_changes_no_more(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (spec-notes §18: once its TTL has passed a task reads as expired,
    and the reaper later deletes it): a worker that finishes after its task's TTL
    elapsed, before the reaper came round, writes nothing, so a listen stream hears
    no change of the expired task; the next thing it hears is the server's own."""
    harness = build(ttl_ms=1000, clock=TRIO_CLOCK, reap_every=3600.0)
    async with running(harness.app) as client:
        task_id = await create(client, wait=True)
        wanted = {"notifications": {"taskIds": [task_id], "toolsListChanged": True}}
        async with client.stream(
            request("subscriptions/listen", wanted, capabilities=DECLARED)
        ) as stream:
            await stream.next_message()  # the acknowledgement
            autojump_clock.jump(1)
            harness.gate.set()
            await wait_all_tasks_blocked()
            harness.app.dispatcher.server.notify_tools_list_changed()
            heard = await stream.next_message()
        assert heard["method"] == "notifications/tools/list_changed"
        error = error_of(await get(client, task_id), 400, INVALID_PARAMS)
        assert "expired" in error["message"]


@pytest.mark.parametrize(
    ("method", "params", "capabilities", "code"),
    [
        ("tasks/get", {"taskId": "gate-test"}, UNDECLARED, MISSING_REQUIRED_CLIENT_CAPABILITY),
        (
            "tasks/update",
            {"taskId": "gate-test", "inputResponses": {}},
            UNDECLARED,
            MISSING_REQUIRED_CLIENT_CAPABILITY,
        ),
        ("tasks/cancel", {"taskId": "gate-test"}, UNDECLARED, MISSING_REQUIRED_CLIENT_CAPABILITY),
        ("tasks/get", {"taskId": 5}, UNDECLARED, MISSING_REQUIRED_CLIENT_CAPABILITY),
        ("tasks/get", {}, DECLARED, INVALID_PARAMS),
        ("tasks/get", {"taskId": ""}, DECLARED, INVALID_PARAMS),
        ("tasks/get", {"taskId": "x" * 257}, DECLARED, INVALID_PARAMS),
        ("tasks/update", {"taskId": "t"}, DECLARED, INVALID_PARAMS),
        ("tasks/update", {"taskId": "t", "inputResponses": []}, DECLARED, INVALID_PARAMS),
        ("tasks/update", {"taskId": "t", "inputResponses": {"k": 5}}, DECLARED, INVALID_PARAMS),
        ("tasks/update", {"taskId": "t", "inputResponses": {"": {}}}, DECLARED, INVALID_PARAMS),
    ],
)
async def test_task_methods_check_the_declaration_then_the_params(
    client: McpClient, method: str, params: dict[str, Any], capabilities: Any, code: int
) -> None:
    """Spec-mandated (SEP-2663 §Protocol Errors: -32021 for undeclared tasks/*;
    T-59, T-72, T-78). presa-defined order (spec-notes §33): -32021 before
    any params check; then shape errors are -32602."""
    error = error_of(await client.call(method, params, capabilities=capabilities), 400, code)
    if code == MISSING_REQUIRED_CLIENT_CAPABILITY:
        assert error["data"] == REQUIRES_TASKS


@pytest.mark.parametrize("task_id", [5, 1.5, True, None, ["t"], {"taskId": "t"}])
@pytest.mark.parametrize(
    ("method", "extra"),
    [("tasks/get", {}), ("tasks/update", {"inputResponses": {}}), ("tasks/cancel", {})],
)
async def test_a_task_id_that_is_no_string_is_invalid_params(
    client: McpClient, method: str, extra: dict[str, Any], task_id: Any
) -> None:
    """Spec-mandated (SEP-2663 §Protocol Errors: an invalid taskId is -32602, a MUST
    on tasks/get and a SHOULD on tasks/update and tasks/cancel; T-43, T-48, T-57).
    presa-defined (spec-notes §33; H-33): no Mcp-Name can mirror such an id, so the
    header is not asked for, and the answer is HTTP 400, never a crash."""
    message = request(method, {"taskId": task_id, **extra}, capabilities=DECLARED)
    headers = client.headers_for(message)
    assert "mcp-name" not in headers
    error_of(await client.post(message, headers), 400, INVALID_PARAMS)


@pytest.mark.parametrize(
    "answers",
    [None, [], "k", {"k": 5}, {"": {"action": "accept"}}],
    ids=["null", "list", "str", "value", "empty key"],
)
async def test_an_update_of_a_live_task_without_an_answers_object_is_invalid_params(
    client: McpClient, answers: Any
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests (Request): ``inputResponses``
    is a required ``InputResponses`` object; spec-notes §29): ``null`` is refused
    like any other non-object, and so is an empty key, on a task that exists, and
    the task is unchanged."""
    task_id = await create(client, wait=True)
    before = result_of(await get(client, task_id))
    params = {"taskId": task_id, "inputResponses": answers}
    error_of(await client.call("tasks/update", params, capabilities=DECLARED), 400, INVALID_PARAMS)
    assert result_of(await get(client, task_id)) == before


async def test_a_task_method_without_meta_is_invalid_params(client: McpClient) -> None:
    """Spec-mandated (2026-07-28 basic/index §_meta; T-82)."""
    message = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "t"}}
    error_of(
        await client.post(message, headers_for(message, {"tasks/get": "taskId"})),
        400,
        INVALID_PARAMS,
    )


@pytest.mark.parametrize(
    ("header", "served"),
    [
        (None, False),
        ("someone-else", False),
        ("=?base64?{}?=", True),
    ],
    ids=["missing", "mismatched", "base64-sentinel"],
)
async def test_mcp_name_must_mirror_the_task_id(
    client: McpClient, header: str | None, served: bool
) -> None:
    """Spec-mandated (SEP-2663 §Streamable HTTP: Routing Headers; streamable-http
    §Server Validation; T-56, T-74): checked before the capability (-32020 wins)."""
    task_id = await create(client, wait=True)
    for capabilities in (DECLARED, UNDECLARED):
        message = request("tasks/get", {"taskId": task_id}, capabilities=capabilities)
        headers = headers_for(message, {})
        if header is not None:
            encoded = base64.b64encode(task_id.encode()).decode()
            headers["mcp-name"] = header.format(encoded)
        response = await client.post(message, headers)
        if not served:
            error_of(response, 400, HEADER_MISMATCH)
        elif capabilities is DECLARED:
            assert result_of(response)["taskId"] == task_id
        else:
            error = error_of(response, 400, MISSING_REQUIRED_CLIENT_CAPABILITY)
            assert error["data"] == REQUIRES_TASKS


@pytest.mark.parametrize("header", [None, "someone-else"], ids=["missing", "mismatched"])
async def test_an_update_or_cancel_whose_mcp_name_does_not_mirror_the_task_id_changes_nothing(
    client: McpClient, header: str | None
) -> None:
    """Spec-mandated (SEP-2663 §Streamable HTTP: Routing Headers: Mcp-Name is
    ``params.taskId`` on tasks/update and tasks/cancel too; streamable-http §Server
    Validation; T-56, T-74): either is 400 -32020 before its handler runs, so the
    answer is not recorded and the task not cancelled."""
    task_id = await create(client, "asks")
    await wait_all_tasks_blocked()
    before = result_of(await get(client, task_id))
    assert list(before["inputRequests"]) == ["k"]
    for method, extra in (
        ("tasks/update", {"inputResponses": {"k": {"action": "decline"}}}),
        ("tasks/cancel", {}),
    ):
        message = request(method, {"taskId": task_id, **extra}, capabilities=DECLARED)
        headers = client.headers_for(message)
        assert headers.pop("mcp-name") == task_id
        if header is not None:
            headers["mcp-name"] = header
        error_of(await client.post(message, headers), 400, HEADER_MISMATCH)
        await wait_all_tasks_blocked()
        assert result_of(await get(client, task_id)) == before


async def test_listen_with_task_ids_needs_the_declaration_and_a_valid_list(
    client: McpClient,
) -> None:
    """Spec-mandated (SEP-2663 §Task Status Notifications: -32021 without the
    declaration; T-52, T-53). presa-defined (spec-notes §19): asking counts, even
    for an empty list; taskIds is a list of at most 100 non-empty strings of at
    most 256 bytes, else -32602, and no stream opens."""
    for task_ids in (["t-1"], []):
        wanted = {"notifications": {"taskIds": task_ids, "toolsListChanged": True}}
        error = error_of(
            await client.call("subscriptions/listen", wanted, capabilities=UNDECLARED),
            400,
            MISSING_REQUIRED_CLIENT_CAPABILITY,
        )
        assert error["data"] == REQUIRES_TASKS
    for bad in ("t-1", [""], ["x" * 257], [7], ["t"] * 101):
        params = {"notifications": {"taskIds": bad}}
        error_of(
            await client.call("subscriptions/listen", params, capabilities=DECLARED),
            400,
            INVALID_PARAMS,
        )


async def test_listen_acknowledges_only_the_callers_live_task_ids(client: McpClient) -> None:
    """Spec-mandated (SEP-2663 §Task Status Notifications: the ack lists the ids the
    server agreed to serve; T-52, T-65): unknown and other-scope ids are dropped
    silently, alike, and duplicates collapse; with none left, the key is omitted.
    presa-defined (spec-notes §19): a list at its bounds (100 ids, 256 bytes) is valid."""
    alice = meta(DECLARED, **{META_CLIENT_INFO: {"name": "alice", "version": "1"}})
    bob = meta(DECLARED, **{META_CLIENT_INFO: {"name": "bob", "version": "1"}})
    mine = result_of(
        await client.call(
            "tools/call", {"name": "maybe", "arguments": {"wait": True}, "_meta": alice}
        )
    )["taskId"]
    theirs = result_of(
        await client.call(
            "tools/call", {"name": "maybe", "arguments": {"wait": True}, "_meta": bob}
        )
    )["taskId"]

    async def acknowledged(task_ids: list[str], who: dict[str, Any]) -> dict[str, Any]:
        params = {"notifications": {"taskIds": task_ids, "toolsListChanged": True}, "_meta": who}
        async with client.stream(request("subscriptions/listen", params)) as stream:
            ack = await stream.next_message()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        notifications: dict[str, Any] = ack["params"]["notifications"]
        return notifications

    assert await acknowledged([mine, "unknown", theirs, mine], alice) == {
        "toolsListChanged": True,
        "taskIds": [mine],
    }
    assert await acknowledged(["unknown", theirs], alice) == {"toolsListChanged": True}
    # At the bounds: 100 ids, one of 256 bytes, is a valid list; unknown ids drop alike.
    at_the_bounds = ["x" * 256, *(f"unknown-{n}" for n in range(99))]
    assert await acknowledged(at_the_bounds, alice) == {"toolsListChanged": True}


@pytest.mark.parametrize(
    ("tool", "status", "outcome"),
    [
        (
            "tool_error",
            "completed",
            {
                "content": [{"type": "text", "text": "the widget is broken"}],
                "isError": True,
                "resultType": "complete",
            },
        ),
        (
            "spec_error",
            "failed",
            {"code": INVALID_PARAMS, "message": "widget must be blue", "data": {"field": "widget"}},
        ),
        ("crash", "failed", {"code": INTERNAL_ERROR, "message": "Internal error"}),
        ("exits", "failed", {"code": INTERNAL_ERROR, "message": "Internal error"}),
    ],
)
async def test_a_task_ends_as_the_plain_call_would_have(
    client: McpClient, harness: Harness, tool: str, status: str, outcome: dict[str, Any]
) -> None:
    """Spec-mandated (SEP-2663 §Task Execution Errors: tasks/get returns exactly what
    the request would have; isError is completed, a JSON-RPC error is failed; T-20,
    T-29, T-31, T-33, T-61, T-62). presa-defined (spec-notes §25): one outcome mapping for both
    paths; a crash is a generic -32603 with no detail anywhere, and a ``SystemExit``
    is a crash of the task's, not the server's."""
    harness.gate.set()
    task_id = await create(client, tool)
    await wait_all_tasks_blocked()
    ended = result_of(await get(client, task_id))
    plain = await call_tool(client, tool, capabilities=UNDECLARED)
    assert ended["status"] == status
    if status == "completed":
        assert {k: v for k, v in ended["result"].items() if k != "_meta"} == outcome
        assert {k: v for k, v in result_of(plain).items() if k != "_meta"} == outcome
    else:
        assert "result" not in ended
        assert without_incident(ended["error"]) == outcome
        assert ended["statusMessage"] == outcome["message"]
        status_code = 400 if outcome["code"] == INVALID_PARAMS else 500
        assert without_incident(error_of(plain, status_code, outcome["code"])) == outcome
    assert "hunter2" not in str(ended)


async def test_a_tool_returning_a_round_inside_a_task_fails_cleanly(client: McpClient) -> None:
    """presa-defined (spec-notes §25; SEP-2663 §Task Creation: MRTR rounds resolve
    before the task): inside a task, input is asked with ``tasks.ask``; a returned
    InputRequired is a programming error, -32603, while the plain call still
    answers with the round."""
    task_id = await create(client, "mrtr_only")
    await wait_all_tasks_blocked()
    failed = result_of(await get(client, task_id))
    assert (failed["status"], failed["error"]) == (
        "failed",
        {"code": INTERNAL_ERROR, "message": "Task worker returned a continuation"},
    )
    plain = result_of(await call_tool(client, "mrtr_only", capabilities=UNDECLARED))
    assert plain["resultType"] == "input_required"


async def test_a_second_ask_while_input_is_required_adds_its_keys(client: McpClient) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests: a partial update leaves the
    other keys outstanding; T-42, T-45): a task already ``input_required`` may ask
    more, here from a second child task; both keys show, each answer wakes only
    its own wait, and the task completes once both are answered."""
    task_id = await create(client, "asks_apart")
    await wait_all_tasks_blocked()
    asked = result_of(await get(client, task_id))
    assert (asked["status"], sorted(asked["inputRequests"])) == ("input_required", ["a", "b"])

    async def answer(key: str, action: str) -> dict[str, Any]:
        update = {"taskId": task_id, "inputResponses": {key: {"action": action}}}
        result_of(await client.call("tasks/update", update, capabilities=DECLARED))
        await wait_all_tasks_blocked()
        return result_of(await get(client, task_id))

    half = await answer("b", "decline")
    assert (half["status"], list(half["inputRequests"])) == ("input_required", ["a"])
    done = await answer("a", "cancel")
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "a=cancel b=decline"}]


async def test_cancelling_the_creating_request_leaves_the_task_running(
    client: McpClient, harness: Harness
) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation: notifications/cancelled MUST NOT be
    used for tasks; T-50): neither that notification nor the creating stream's
    close (every call here closes it) stops the task."""
    task_id = await create(client, wait=True)
    notice = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "changed my mind"},
    }
    assert (await client.post(notice)).status == 202
    await wait_all_tasks_blocked()
    assert result_of(await get(client, task_id))["status"] == "working"
    harness.gate.set()
    await wait_all_tasks_blocked()
    assert result_of(await get(client, task_id))["status"] == "completed"


async def test_a_task_sends_no_progress_or_logs_on_the_creating_stream(
    client: McpClient,
) -> None:
    """Spec-mandated (SEP-2663 §Task Status Notifications, progress and logging not
    supported on tasks; T-55; spec-notes §41): the same tool streams them on a plain call."""
    params = {"name": "chatty", "arguments": {}}
    extra = {"progressToken": "p", "io.modelcontextprotocol/logLevel": "debug"}
    as_task = await client.call("tools/call", {**params, "_meta": meta(DECLARED, **extra)})
    assert as_task.headers["content-type"] == "application/json"
    assert result_of(as_task)["resultType"] == "task"
    plain = await client.call("tools/call", {**params, "_meta": meta(UNDECLARED, **extra)})
    assert plain.headers["content-type"] == "text/event-stream"
    assert [e.get("method") for e in plain.events()[:2]] == [
        "notifications/progress",
        "notifications/message",
    ]


async def test_an_unknown_tool_is_refused_before_any_task_exists(
    client: McpClient, harness: Harness
) -> None:
    """Spec-mandated (server/tools §Error Handling; T-81): -32602, nothing stored,
    even when a policy names the missing tool."""
    harness.tasks.set_policy("ghost", Policy.REQUIRED)
    for name in ("ghost", "never-registered"):
        error_of(await call_tool(client, name), 400, INVALID_PARAMS)
    assert (await stored(harness)) == 0


async def test_a_policy_function_decides_per_call_and_its_failure_is_internal(
    client: McpClient, harness: Harness
) -> None:
    """presa-defined (spec-notes §36: a policy may be a function of the request)."""

    def by_label(ctx: RequestContext, params: dict[str, Any]) -> Policy:
        label = params["arguments"]["label"]
        if label == "boom":
            raise KeyError(label)
        return Policy.REQUIRED if label == "task" else Policy.SYNC

    harness.tasks.set_policy("maybe", by_label)
    assert result_of(await call_tool(client, "maybe", {"label": "task"}))["resultType"] == "task"
    assert result_of(await call_tool(client, "maybe", {"label": "sync"}))["resultType"] == (
        "complete"
    )
    error_of(await call_tool(client, "maybe", {"label": "boom"}), 500, INTERNAL_ERROR)


async def test_a_policy_function_that_returns_no_policy_is_internal_and_makes_no_task(
    client: McpClient, harness: Harness
) -> None:
    """presa-defined (spec-notes §36): a policy function's answer that is no
    ``Policy`` (it forgot to return) is its bug, -32603, for a request that declares
    Tasks and one that does not; no task is made and the tool does not run."""

    def forgetful(ctx: RequestContext, params: dict[str, Any]) -> Policy:
        return "required"  # type: ignore[return-value]

    harness.tasks.set_policy("maybe", forgetful)
    for capabilities in (DECLARED, UNDECLARED):
        error_of(await call_tool(client, "maybe", capabilities=capabilities), 500, INTERNAL_ERROR)
    assert (harness.entered, await stored(harness)) == ([], 0)


async def test_polls_are_never_rate_limited_and_need_only_the_task_id(
    client: McpClient, harness: Harness
) -> None:
    """presa-defined (SEP-2663 §Task Polling, MAY rate-limit; T-34) and spec-mandated
    (basic/index §Statelessness; T-71; SEP-2663 §Security Implications, ids as
    bearer tokens; T-63): a fresh client with only the id polls back to back and
    cancels."""
    task_id = await create(client, wait=True)
    fresh = McpClient(harness.app)
    for _ in range(50):
        assert result_of(await get(fresh, task_id))["status"] == "working"
    result_of(await fresh.call("tasks/cancel", {"taskId": task_id}, capabilities=DECLARED))
    assert result_of(await get(client, task_id))["status"] == "cancelled"


async def test_a_full_runner_answers_a_retryable_32603() -> None:
    """presa-defined (spec-notes §31): a full limit is -32603 with ``data.retryable``,
    HTTP 429 for the caller's own limit (503 for the server's) with Retry-After,
    and a message that says what to do; an oversized input is not retryable, and
    its message says which limit it broke."""
    harness = build(limits=Limits(max_active_per_scope=1, max_input_bytes=64))
    async with running(harness.app) as client:
        await create(client, wait=True)
        refused = await call_tool(client, "always", {"wait": True})
        full = error_of(refused, 429, INTERNAL_ERROR)
        assert full["data"] == {"retryable": True, "limit": "max_active_tasks_per_scope"}
        assert "tasks/cancel" in full["message"]
        assert "without authorization every caller shares" in full["message"]
        assert refused.headers["retry-after"] == "5"
        big = error_of(await call_tool(client, "always", {"label": "x" * 100}), 500, INTERNAL_ERROR)
        assert big["data"] == {"retryable": False, "limit": "max_input_bytes"}
        assert big["message"] == "Task input is larger than max_input_bytes (64)"
        assert (await stored(harness)) == 1
    harness = build(limits=Limits(max_active=1))
    async with running(harness.app) as client:
        await create(client, wait=True)
        bob = meta(DECLARED, **{META_CLIENT_INFO: {"name": "bob", "version": "1"}})
        refused = await call_tool(client, "always", {"wait": True}, _meta=bob)
        assert error_of(refused, 503, INTERNAL_ERROR)["data"]["limit"] == "max_active_tasks"
        assert refused.headers["retry-after"] == "5"


async def test_the_answers_a_task_keeps_count_toward_its_input_limit() -> None:
    """presa-defined (spec-notes §31: an oversized input is refused, nothing stored):
    the multi round-trip answers and state a task is created with are kept with its
    input, so they count toward ``max_input_bytes`` as its arguments do; an answer
    under a key nobody asked (basic/patterns/mrtr §Error Handling: ignored) stored
    whatever its size."""
    harness = build(limits=Limits(max_input_bytes=64))
    async with running(harness.app) as client:
        answers = {"unasked": {"blob": "x" * 100}}
        big = await call_tool(client, "always", {}, inputResponses=answers)
        refused = error_of(big, 500, INTERNAL_ERROR)
        assert refused["data"] == {"retryable": False, "limit": "max_input_bytes"}
        assert (await harness.tasks.runner.store.counts()).stored == 0
        await create(client, "always")
        assert (await harness.tasks.runner.store.counts()).stored == 1


@pytest.mark.parametrize("where", ["arguments", "inputResponses"])
async def test_no_nesting_the_parser_accepts_fails_a_task_call(
    client: McpClient, where: str
) -> None:
    """presa-defined (spec-notes §31: an input that cannot be kept is -32603 with
    ``data.limit``, not retryable): whatever depth of arguments, or of an answer, the
    body's parser accepts, a task tool's call is a task or that refusal, never an
    incident from a RecursionError while its input is measured."""
    params = {"name": "always", "arguments": {}, "inputResponses": {}}
    body = request("tools/call", params, capabilities=DECLARED)
    body["params"][where]["deep"] = DEEP
    created = 0
    async for depth, response in answers_at_every_depth(client, body):
        message = response.json()
        if "error" in message:
            assert message["error"]["data"]["limit"] == "max_input_bytes", (depth, message)
        else:
            assert message["result"]["resultType"] == "task", (depth, message)
            created += 1
    assert created > 0  # the depths tried reached the task store, not only the parser


@pytest.mark.parametrize("where", [META_CLIENT_CAPABILITIES, META_CLIENT_INFO])
async def test_no_nesting_of_the_declaration_the_parser_accepts_fails_a_task_call(
    client: McpClient, where: str
) -> None:
    """presa-defined (spec-notes §31; SEP-2663 §Task Creation): a task keeps its
    creating request's declaration (capabilities, client info); whatever depth of it
    the body's parser accepts, a declaring call to a task tool is a task, as the
    plain call answers, never an incident from a RecursionError while the
    declaration is copied for the task."""
    body = request("tools/call", {"name": "always", "arguments": {}}, capabilities=DECLARED)
    body["params"]["_meta"].setdefault(META_CLIENT_INFO, {"name": "c", "version": "1"})
    body["params"]["_meta"][where] = {**body["params"]["_meta"][where], "deep": DEEP}
    created = 0
    async for depth, response in answers_at_every_depth(client, body):
        assert result_of(response)["resultType"] == "task", (depth, response.json())
        created += 1
    assert created > 0  # the depths tried reached the task runner, not only the parser


async def test_an_optional_tool_at_capacity_answers_as_a_plain_call() -> None:
    """presa-defined (SEP-2663 §Capability Negotiation: the server decides, per
    request, whether to make a task): with the shared scope full, a task-optional
    tool still answers, with its plain result, and stores nothing."""
    harness = build(limits=Limits(max_active_per_scope=1))
    async with running(harness.app) as client:
        await create(client, wait=True)
        answered = result_of(await call_tool(client, "maybe", {"label": "anyway"}))
        assert answered["resultType"] == "complete"
        assert answered["content"] == [{"type": "text", "text": "maybe done anyway"}]
        assert (await stored(harness)) == 1


def test_task_tools_register_only_once_the_extension_is_added() -> None:
    """presa-defined (registration API): the policy lives with the tool it names."""
    with pytest.raises(RuntimeError, match="add the extension"):
        TasksExtension().tool(Policy.OPTIONAL, description="x")


async def test_a_store_that_cannot_be_reached_answers_a_retryable_32603(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """presa-defined (a store made for I/O; spec-notes §45): when the store fails,
    tasks/* and task creation answer -32603 with data.retryable true and no
    detail; the detail is logged, and the server serves on."""
    async with open_store(f"sqlite:///{tmp_path / 'tasks.db'}") as store:
        harness = build(store=store)
        async with running(harness.app) as client:
            task_id = await create(client)
            assert isinstance(store, SqliteStore)
            await store.aclose()
            for response in (
                await get(client, task_id),
                await client.call("tasks/cancel", {"taskId": task_id}, capabilities=DECLARED),
                await call_tool(client, "maybe"),
            ):
                error = error_of(response, 500, INTERNAL_ERROR)
                assert error["data"] == {"retryable": True}
                assert "sqlite" not in error["message"].lower()
            assert "closed database" in caplog.text
            assert result_of(await call_tool(client, "plain"))["content"][0]["text"] == "plain done"


def mailer(store: MemoryStore, *, rerun: bool, ran: list[str]) -> McpApp:
    """A server whose ``send_mail`` tool (declared re-runnable or not) waits for ever."""
    server = Server("tasks-test", "0.0.1")
    tasks = TasksExtension(TaskRunner(store, TRIO_CLOCK))
    server.add_extension(tasks)

    @tasks.tool(Policy.REQUIRED, rerun=rerun, description="Sends a mail: once, if not rerun.")
    async def send_mail(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        ran.append(f"rerun={rerun}")
        await trio.sleep_forever()

    return McpApp.for_server(server)


async def run_once_in_a_first_process(store: MemoryStore, ran: list[str]) -> str:
    """A ``send_mail`` task created by a process whose tool is re-runnable, once its job
    has run there; that process is gone when this returns."""
    async with running(mailer(store, rerun=True, ran=ran)) as client:
        task_id = await create(client, "send_mail")
        with trio.fail_after(10):
            while ran != ["rerun=True"]:  # noqa: ASYNC110 - the job runs in the app's lifespan
                await trio.sleep(0.001)
    return task_id


def signed_in_mailer(store: MemoryStore, callers: list[str | None]) -> McpApp:
    """A server behind development tokens (``a`` is alice, ``b`` bob) whose re-runnable
    ``send_mail`` notes whom each run acts for, then waits for ever."""
    server = Server("tasks-test", "0.0.1")
    tasks = TasksExtension(TaskRunner(store, TRIO_CLOCK))
    server.add_extension(tasks)

    @tasks.tool(Policy.REQUIRED, rerun=True, description="Sends a mail as its caller.")
    async def send_mail(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        callers.append(None if ctx.principal is None else ctx.principal.subject)
        await trio.sleep_forever()

    guard = ResourceGuard(
        "http://localhost:3000/mcp",
        Verifiers(static=StaticTokens({"a": "alice", "b": "bob"})),
        authorization_servers=["https://auth.example.com"],
    )
    return McpApp.for_server(server, auth=guard)


async def as_user(client: McpClient, token: str, method: str, params: dict[str, Any]) -> Response:
    message = request(method, params, capabilities=DECLARED)
    return await client.post(
        message, {**client.headers_for(message), "authorization": f"Bearer {token}"}
    )


async def test_a_task_run_again_in_the_next_process_acts_for_its_creator() -> None:
    """presa-defined (recovery; docs/task-stores.md "Recovery"; SEP-2663 §Security
    Implications, auth binding): a re-runnable task that the next process runs again
    runs as the principal that created it, not as nobody, and stays that principal's
    task: alice reads it there, bob's read answers as for an unknown id."""
    store, callers = MemoryStore(), list[str | None]()
    async with running(signed_in_mailer(store, callers)) as client:
        created = await as_user(client, "a", "tools/call", {"name": "send_mail", "arguments": {}})
        task_id = result_of(created)["taskId"]
        with trio.fail_after(10):
            while callers != ["alice"]:  # noqa: ASYNC110 - the job runs in the app's lifespan
                await trio.sleep(0.001)
    async with running(signed_in_mailer(store, callers)) as client:
        with trio.fail_after(10):
            while len(callers) < 2:  # noqa: ASYNC110 - recovery runs in the app's lifespan
                await trio.sleep(0.001)
        assert callers == ["alice", "alice"]
        read = {"taskId": task_id}
        assert result_of(await as_user(client, "a", "tasks/get", read))["status"] == "working"
        error_of(await as_user(client, "b", "tasks/get", read), 400, INVALID_PARAMS)


async def test_a_task_runs_again_only_if_the_tool_is_still_declared_re_runnable() -> None:
    """presa-defined (recovery; docs/task-stores.md "Recovery"): the next process runs a
    task again only if its tool, as that process registers it, may run again. A tool
    re-registered without ``rerun`` (its code now has a side effect a second run would
    repeat) does not run again for a task created under the old declaration: the task
    is written failed as interrupted."""
    store, ran = MemoryStore(), list[str]()
    task_id = await run_once_in_a_first_process(store, ran)
    async with running(mailer(store, rerun=False, ran=ran)) as client:
        with trio.fail_after(10):
            task = result_of(await get(client, task_id))
            while task["status"] == "working":
                await trio.sleep(0.001)  # a poll, as a client's
                task = result_of(await get(client, task_id))
    assert task["status"] == "failed"
    assert task["error"] == {  # spec-notes §44
        "code": INTERNAL_ERROR,
        "message": (
            "Task interrupted: the server running it stopped, and the tool may not run again"
        ),
        "data": {"retryable": False},
    }
    assert ran == ["rerun=True"]


async def test_a_task_of_a_re_runnable_tool_runs_again_in_the_next_process() -> None:
    """presa-defined (recovery, at least once; docs/task-stores.md "Recovery"): a task
    created by a ``tools/call`` of a tool declared re-runnable is stored as such, and
    the next process, where the tool is still declared so, runs it again from the
    start instead of writing it failed as interrupted."""
    store, ran = MemoryStore(), list[str]()
    task_id = await run_once_in_a_first_process(store, ran)
    async with running(mailer(store, rerun=True, ran=ran)) as client:
        with trio.fail_after(10):
            task = result_of(await get(client, task_id))
            while len(ran) < 2 and task["status"] == "working":
                await trio.sleep(0.001)  # a poll, as a client's
                task = result_of(await get(client, task_id))
        assert (task["status"], ran) == ("working", ["rerun=True", "rerun=True"])
