"""A task keeps the scopes its tool required, in every store and every process.

``confirm_delete`` needs ``files:delete`` (``--auth-tool-scope``). alice
creates a task with a token holding it; a token of the same user and client
holding only ``mcp`` gets, on ``tasks/get``, ``tasks/update`` and
``tasks/cancel``, the very 403 a ``tools/call`` of the tool gets, and its
listen drops the task's id. bob's requests stay indistinguishable from ones
for an unknown id. The scopes live in the task's storage record: a new
process on the same SQLite file enforces them too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import trio

from tests.auth import scenarios
from tests.auth.authorization_server import AuthorizationServer
from tests.auth.harness import Presa, start_presa
from tests.auth.scenarios import TASKS

WIDE = "mcp files:delete"


def flags(issuer: AuthorizationServer, *more: str) -> list[str]:
    return [
        "--auth-issuer",
        issuer.issuer,
        "--auth-scope",
        "mcp",
        "--auth-tool-scope",
        "confirm_delete=files:delete",
        *more,
    ]


def challenge_of(response: httpx.Response) -> tuple[int, dict[str, str]]:
    return response.status_code, scenarios.challenge_params(response)


async def narrow_token_is_refused(presa: Presa, issuer: AuthorizationServer, task: str) -> None:
    narrow = issuer.mint_jwt("alice-app", presa.resource, scope="mcp")
    call = {"name": "confirm_delete", "arguments": {"filename": "b.txt"}}
    as_tool = await presa.call("tools/call", call, narrow, capabilities=TASKS)
    status, tool_challenge = challenge_of(as_tool)
    assert status == 403
    assert tool_challenge["error"] == "insufficient_scope"
    assert tool_challenge["scope"] == "files:delete mcp"
    for method, params in scenarios.task_requests(task):
        response = await presa.call(method, params, narrow, capabilities=TASKS)
        status, challenge = challenge_of(response)
        assert status == 403, (method, response.text)
        assert challenge["error"] == "insufficient_scope"
        assert challenge["scope"] == tool_challenge["scope"]
        assert challenge["resource_metadata"] == tool_challenge["resource_metadata"]
        assert "result" not in response.text


async def test_a_narrow_token_cannot_read_update_or_cancel(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-15, A-10, T-65: the task's scopes are required on every task request; the
    task is untouched by the refusals; bob still sees an unknown id."""
    presa = await start_presa(nursery, http, flags(issuer))
    wide = issuer.mint_jwt("alice-app", presa.resource, scope=WIDE)
    task = await scenarios.create_task(presa, wide)
    await narrow_token_is_refused(presa, issuer, task)
    get, _, _ = scenarios.task_requests(task)
    still = await presa.call(*get, wide, capabilities=TASKS)
    assert still.json()["result"]["status"] == "input_required"
    bob = issuer.mint_jwt("bob-app", presa.resource, scope=WIDE)
    await scenarios.isolates_tasks(presa, wide, bob)


async def test_a_narrow_listen_drops_the_task(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-15: a listen with the narrow token is acknowledged without the task's id."""
    presa = await start_presa(nursery, http, flags(issuer))
    wide = issuer.mint_jwt("alice-app", presa.resource, scope=WIDE)
    narrow = issuer.mint_jwt("alice-app", presa.resource, scope="mcp")
    task = await scenarios.create_task(presa, wide)

    async def acknowledged(token: str) -> dict[str, Any]:
        async with scenarios.listening(presa, token, [task]) as events:
            ack = await anext(events)
        notifications: dict[str, Any] = ack["params"]["notifications"]
        return notifications

    assert await acknowledged(narrow) == {"toolsListChanged": True}
    assert await acknowledged(wide) == {"toolsListChanged": True, "taskIds": [task]}


async def test_the_scopes_survive_a_restart(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer, tmp_path: Path
) -> None:
    """A-15: the scopes are in the storage record: another process on the same
    SQLite file refuses the narrow token too."""
    store = ["--store", f"sqlite:///{tmp_path / 'tasks.db'}"]
    first = await start_presa(nursery, http, flags(issuer, *store))
    wide = issuer.mint_jwt("alice-app", first.resource, scope=WIDE)
    task = await scenarios.create_task(first, wide)
    first.process.terminate()
    await first.process.wait()
    second = await start_presa(nursery, http, flags(issuer, *store))
    wide = issuer.mint_jwt("alice-app", second.resource, scope=WIDE)
    get, _, _ = scenarios.task_requests(task)
    found = await second.call(*get, wide, capabilities=TASKS)
    assert found.status_code == 200, found.text
    await narrow_token_is_refused(second, issuer, task)
