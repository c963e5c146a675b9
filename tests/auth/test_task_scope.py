"""The principal as the task access scope, for listen streams and capacity limits.

In process, with development tokens for alice and bob; the task requests
themselves (get, update, cancel) are shown end to end in the verifier tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import attrs
import httpx
import pytest
import trio
from trio.testing import MockClock

from presa_trio.auth.guard import ResourceGuard, ScopeRules, Verifiers
from presa_trio.auth.principal import Principal
from presa_trio.auth.static import StaticTokens
from presa_trio.auth.verifier import InvalidToken, Verified
from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TasksExtension
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.runner import Limits
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, headers_for, request, running
from tests.auth.harness import ALL_NAME_PARAMS
from tests.auth.scenarios import TASKS

TOKENS = {"alice-secret": "alice", "bob-secret": "bob"}


def dev_guard() -> ResourceGuard:
    return ResourceGuard(
        "http://localhost:3000/mcp",
        Verifiers(static=StaticTokens(TOKENS)),
        authorization_servers=["https://auth.example.com"],
    )


@pytest.fixture
async def client() -> AsyncIterator[McpClient]:
    server = build_server()
    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.runner.limits = Limits(max_active_per_scope=1)
    guard = dev_guard()
    async with running(McpApp.for_server(server, auth=guard)) as started:
        yield started


def as_user(message: dict[str, Any], user: str) -> list[tuple[str, str]]:
    name_params = {"tools/call": "name"}
    headers = list(headers_for(message, name_params).items())
    return [*headers, ("authorization", f"Bearer {user}-secret")]


async def start_task(client: McpClient, user: str, tool: str = "confirm_delete") -> Any:
    params = {"name": tool, "arguments": {}}
    message = request("tools/call", params, capabilities=TASKS)
    return await client.post(message, as_user(message, user))


async def test_listen_keeps_only_the_callers_task_ids(client: McpClient) -> None:
    """A-10, T-65: bob's listen drops alice's task id as it drops an unknown one."""
    task_id = (await start_task(client, "alice")).json()["result"]["taskId"]

    async def acknowledged(user: str) -> dict[str, Any]:
        params = {"notifications": {"taskIds": [task_id, "unknown"], "toolsListChanged": True}}
        message = request("subscriptions/listen", params, capabilities=TASKS)
        async with client.stream(message, as_user(message, user)) as stream:
            ack = await stream.next_message()
        notifications: dict[str, Any] = ack["params"]["notifications"]
        return notifications

    assert await acknowledged("bob") == {"toolsListChanged": True}
    assert await acknowledged("alice") == {"toolsListChanged": True, "taskIds": [task_id]}


async def test_the_task_limit_is_per_principal(client: McpClient) -> None:
    """A-10, A-19: alice at her limit of active tasks leaves bob his own; her
    task-required call is 429 with Retry-After, her task-optional one a plain call."""
    assert (await start_task(client, "alice")).json()["result"]["resultType"] == "task"
    refused = await start_task(client, "alice", "failing_job")
    assert refused.status == 429
    assert refused.headers["retry-after"] == "5"
    error = refused.json()["error"]
    assert error["data"] == {"retryable": True, "limit": "max_active_tasks_per_scope"}
    assert "shares" not in error["message"]  # alice's limit is hers alone
    plain = (await start_task(client, "alice")).json()["result"]
    assert plain["resultType"] == "input_required"
    assert (await start_task(client, "bob")).json()["result"]["resultType"] == "task"


async def test_a_development_tokens_task_stream_does_not_lapse(
    autojump_clock: MockClock,
) -> None:
    """A-16: a development token has no expiry and no issuer to ask again, so it
    never lapses: alice's ``tasks/stream`` stays open past any keep-alive and carries
    her task's events to its result."""
    server = Server("dev-stream", "1.0.0")
    tasks = TasksExtension()
    server.add_extension(tasks)
    tasks.enable_events(TaskEventLog())
    go_on = trio.Event()

    @tasks.tool(Policy.REQUIRED, description="Waits until told, silently")
    async def parked(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await go_on.wait()
        return "done"

    async with running(McpApp.for_server(server, auth=dev_guard())) as client:
        call = request(
            "tools/call", {"name": "parked", "arguments": {}}, capabilities=TASKS_CAPABILITIES
        )
        task_id = (await client.post(call, as_user(call, "alice"))).json()["result"]["taskId"]
        message = request(
            "tasks/stream", {"taskId": task_id, "after": 0}, capabilities=TASKS_CAPABILITIES
        )
        async with client.stream(message, as_user(message, "alice")) as stream:
            await trio.sleep(3600)
            go_on.set()
            status = await stream.next_message()
            assert status["params"]["payload"]["status"] == "completed"
            assert (await stream.next_message())["result"]["resultType"] == "complete"


@attrs.frozen
class Principals:
    """A verifier whose tokens stand for the principals given: token -> principal."""

    by_token: dict[str, Principal]

    async def prepare(self, http: httpx.AsyncClient) -> None:
        """Nothing to fetch."""

    async def verify(self, token: str, http: httpx.AsyncClient) -> Verified:
        if token not in self.by_token:
            raise InvalidToken("Unknown token")
        return Verified(self.by_token[token], until=None)


async def test_a_task_is_its_issuers_subjects_and_clients_alone() -> None:
    """A-10, T-65: the caller a task is bound to (SEP-2663 §Security Implications: auth
    binding) is the issuer, the subject and the client together: the same subject
    through another client, or named by another issuer, gets for alice's task exactly
    what an unknown id gets; alice's own token gets it."""
    issuer, other = "https://auth.example.com", "https://other.example.com"
    verifier = Principals(
        {
            "alice": Principal(issuer, "alice", "app"),
            "other-client": Principal(issuer, "alice", "other-app"),
            "other-issuer": Principal(other, "alice", "app"),
        }
    )
    guard = ResourceGuard(
        "http://localhost:3000/mcp", verifier, authorization_servers=[issuer, other]
    )

    def as_token(message: dict[str, Any], token: str) -> list[tuple[str, str]]:
        sent = headers_for(message, ALL_NAME_PARAMS)
        return [*sent.items(), ("authorization", f"Bearer {token}")]

    async def get(client: McpClient, task_id: str, token: str) -> Any:
        message = request("tasks/get", {"taskId": task_id}, capabilities=TASKS)
        return await client.post(message, as_token(message, token))

    async with running(McpApp.for_server(build_server(), auth=guard)) as client:
        call = request(
            "tools/call", {"name": "confirm_delete", "arguments": {}}, capabilities=TASKS
        )
        created = await client.post(call, as_token(call, "alice"))
        task_id = created.json()["result"]["taskId"]
        unknown = await get(client, "0" * len(task_id), "alice")
        assert unknown.json()["error"]["code"] == -32602
        for token in ("other-client", "other-issuer"):
            refused = await get(client, task_id, token)
            assert (refused.status, refused.body) == (unknown.status, unknown.body), token
        assert (await get(client, task_id, "alice")).status == 200


async def test_a_task_request_without_the_tasks_scopes_names_all_it_needs() -> None:
    """A-15, A-04: a task request by a token holding its method's scopes but not the
    task's is 403 ``insufficient_scope`` naming every scope the request needs in one
    challenge: the method's, and the task's (authorization §Runtime Insufficient Scope
    Errors)."""
    rules = ScopeRules(
        every_request=frozenset({"mcp"}),
        methods={"tasks/get": frozenset({"tasks:read"})},
        tools={"confirm_delete": frozenset({"files:delete"})},
    )
    guard = ResourceGuard(
        "http://localhost:3000/mcp",
        Verifiers(static=StaticTokens({"wide": "alice"}, scopes=rules.all())),
        authorization_servers=["https://auth.example.com"],
        scopes=rules,
    )

    def as_token(message: dict[str, Any], token: str) -> list[tuple[str, str]]:
        sent = headers_for(message, ALL_NAME_PARAMS)
        return [*sent.items(), ("authorization", f"Bearer {token}")]

    async with running(McpApp.for_server(build_server(), auth=guard)) as client:
        call = request(
            "tools/call", {"name": "confirm_delete", "arguments": {}}, capabilities=TASKS
        )
        task_id = (await client.post(call, as_token(call, "wide"))).json()["result"]["taskId"]
        narrow = frozenset({"mcp", "tasks:read"})
        guard.verifier = Verifiers(static=StaticTokens({"narrow": "alice"}, scopes=narrow))
        get = request("tasks/get", {"taskId": task_id}, capabilities=TASKS)
        refused = await client.post(get, as_token(get, "narrow"))
    assert refused.status == 403
    challenge = refused.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="files:delete mcp tasks:read"' in challenge
