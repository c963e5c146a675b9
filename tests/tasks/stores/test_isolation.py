"""One principal's task, as another sees it on the wire, on every store: an unknown id.

The ASGI app is driven in-process on a real store of each kind
(``conftest.STORE_KINDS``), with development tokens for alice and bob and
task event streams on; the runner's wall clock is the test's, so a task
expires when the test says.
"""

from __future__ import annotations

import json
from typing import Any

from presa_trio.auth.guard import ResourceGuard, Verifiers
from presa_trio.auth.static import StaticTokens
from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.extension import TasksExtension
from presa_trio.tasks.stores.base import TaskStore
from presa_trio.tasks.writes import Clock
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, request, running
from presa_trio.wire.errors import INVALID_PARAMS

T0 = 1_800_000_000_000
TTL_MS = 60_000
ANSWER = {"confirm-delete": {"action": "accept", "content": {"confirm": True}}}


def task_requests(task_id: str) -> list[tuple[str, dict[str, Any]]]:
    """Every request that names a task, with params an owner could send."""
    return [
        ("tasks/get", {"taskId": task_id}),
        ("tasks/update", {"taskId": task_id, "inputResponses": ANSWER}),
        ("tasks/update", {"taskId": task_id, "inputResponses": {"confirm-delete": {}}}),
        ("tasks/cancel", {"taskId": task_id}),
        ("tasks/stream", {"taskId": task_id}),
        ("tasks/stream", {"taskId": task_id, "after": 0}),
    ]


async def as_user(
    client: McpClient, user: str, method: str, params: dict[str, Any]
) -> tuple[int, dict[str, str], bytes]:
    """The status, headers and body of ``user``'s request."""
    message = request(method, params, capabilities=TASKS_CAPABILITIES)
    headers = [*client.headers_for(message).items(), ("authorization", f"Bearer {user}")]
    response = await client.post(message, headers)
    return response.status, response.headers, response.body


async def listened(client: McpClient, user: str, task_ids: list[str]) -> Any:
    """The notifications a listen for ``task_ids`` was acknowledged with."""
    params = {"notifications": {"taskIds": task_ids}}
    message = request("subscriptions/listen", params, capabilities=TASKS_CAPABILITIES)
    headers = [*client.headers_for(message).items(), ("authorization", f"Bearer {user}")]
    async with client.stream(message, headers) as stream:
        return (await stream.next_message())["params"]["notifications"]


async def test_another_principals_task_live_or_expired_answers_as_an_unknown_one(
    store: TaskStore,
) -> None:
    """Spec-mandated (SEP-2663 §Security Implications, auth binding; SEP-2694 §Security
    Implications; T-65, S-19): bob's tasks/get, tasks/update, tasks/cancel and
    tasks/stream of alice's task answer as for an unknown id (status, headers and
    body, byte for byte), and his listen drops it as it drops one, whether the
    task is live or its ttlMs has elapsed; only alice hears that it expired."""
    now = [T0]
    server = build_server()
    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.runner.store = store
            extension.runner.clock = Clock(lambda: now[0])
            extension.runner.ttl_ms = TTL_MS
            extension.enable_events(TaskEventLog())
    guard = ResourceGuard(
        "http://localhost:3000/mcp",
        Verifiers(static=StaticTokens({"a": "alice", "b": "bob"})),
        authorization_servers=["https://auth.example.com"],
    )
    async with running(McpApp.for_server(server, auth=guard)) as client:
        call = {"name": "confirm_delete", "arguments": {"filename": "a.txt"}}
        _, _, body = await as_user(client, "a", "tools/call", call)
        task_id = json.loads(body)["result"]["taskId"]
        unknown = "u" * len(task_id)
        for live in (True, False):
            for (method, params), (_, unknown_params) in zip(
                task_requests(task_id), task_requests(unknown), strict=True
            ):
                answer = await as_user(client, "b", method, params)
                assert answer == await as_user(client, "b", method, unknown_params), method
                assert answer[0] == 400
                assert json.loads(answer[2])["error"]["code"] == INVALID_PARAMS
            assert await listened(client, "b", [task_id]) == {}
            kept = {"taskIds": [task_id]} if live else {}
            assert await listened(client, "a", [task_id]) == kept
            now[0] += TTL_MS
        expired = await as_user(client, "a", "tasks/get", {"taskId": task_id})
        assert "expired" in json.loads(expired[2])["error"]["message"]
