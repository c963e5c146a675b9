"""The principal as the task access scope, for listen streams and capacity limits.

In process, with development tokens for alice and bob; the task requests
themselves (get, update, cancel) are shown end to end in the verifier tests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from presa_trio.auth.guard import ResourceGuard, Verifiers
from presa_trio.auth.static import StaticTokens
from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.tasks.extension import TasksExtension
from presa_trio.tasks.runner import Limits
from presa_trio.testing import McpClient, headers_for, request, running
from tests.auth.scenarios import TASKS

TOKENS = {"alice-secret": "alice", "bob-secret": "bob"}


@pytest.fixture
async def client() -> AsyncIterator[McpClient]:
    server = build_server()
    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.runner.limits = Limits(max_active_per_scope=1)
    guard = ResourceGuard(
        "http://localhost:3000/mcp",
        Verifiers(static=StaticTokens(TOKENS)),
        authorization_servers=["https://auth.example.com"],
    )
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
