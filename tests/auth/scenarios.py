"""The rules every way of verifying tokens must keep, as steps on a running presa.

Each function drives a real ``presa-trio serve`` through HTTP with tokens of
two principals, alice and bob; the JWT, introspection and development-token
tests call them with their own tokens.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import trio
from joserfc import jws

from presa_trio.testing import DEFAULT_CAPABILITIES, headers_for, request
from tests.auth.harness import ALL_NAME_PARAMS, Presa
from tests.streams import sse_messages

TASKS = {**DEFAULT_CAPABILITIES, "extensions": {"io.modelcontextprotocol/tasks": {}}}
WELL_KNOWN = "/.well-known/oauth-protected-resource"


def challenge_params(response: httpx.Response) -> dict[str, str]:
    """The parameters of a ``WWW-Authenticate: Bearer`` challenge."""
    header = response.headers["www-authenticate"]
    scheme, _, rest = header.partition(" ")
    assert scheme == "Bearer"
    params = {}
    for part in rest.split(", "):
        name, _, value = part.partition("=")
        params[name] = value.strip('"')
    return params


def claims(token: str) -> dict[str, Any]:
    """The claims of a JWT, unverified (the test minted it)."""
    payload: dict[str, Any] = json.loads(jws.extract_compact(token.encode()).payload)
    return payload


def metadata_url(presa: Presa) -> str:
    return presa.url.replace("/mcp", WELL_KNOWN + "/mcp")


async def refuses_without_token(presa: Presa, scope: str | None = None) -> None:
    """No token: 401, a challenge naming the metadata, no ``error`` (RFC 6750 §3.1)."""
    response = await presa.call("tools/list")
    assert response.status_code == 401
    params = challenge_params(response)
    assert params["resource_metadata"] == metadata_url(presa)
    assert "error" not in params
    assert params.get("scope") == scope


async def serves_metadata(presa: Presa, authorization_servers: list[str]) -> dict[str, Any]:
    """The metadata document answers at both well-known URIs, without a token."""
    path_form = await presa.http.get(metadata_url(presa))
    root_form = await presa.http.get(presa.url.replace("/mcp", WELL_KNOWN))
    assert path_form.status_code == root_form.status_code == 200
    assert path_form.json() == root_form.json()
    document: dict[str, Any] = path_form.json()
    assert document["resource"] == presa.resource
    assert document["authorization_servers"] == authorization_servers
    assert document["bearer_methods_supported"] == ["header"]
    return document


async def refuses_invalid_token(presa: Presa, token: str) -> str:
    """A token that does not verify: 401 ``invalid_token``; returns the description."""
    response = await presa.call("tools/list", token=token)
    assert response.status_code == 401, response.text
    params = challenge_params(response)
    assert params["error"] == "invalid_token"
    assert params["resource_metadata"] == metadata_url(presa)
    return params["error_description"]


async def calls_a_tool(presa: Presa, token: str) -> None:
    response = await presa.call("tools/call", {"name": "greet", "arguments": {"name": "A"}}, token)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["content"][0]["text"] == "Hello, A!"


async def calls_a_tool_once_keys_refresh(presa: Presa, token: str, within_s: float) -> float:
    """Call a tool with a token of a new key: 503 with ``Retry-After`` while presa may
    not fetch the key set yet, never 401; it works within ``within_s``. Returns the wait."""
    started = trio.current_time()
    while True:
        params = {"name": "greet", "arguments": {"name": "A"}}
        response = await presa.call("tools/call", params, token)
        if response.status_code != 503:
            break
        assert int(response.headers["retry-after"]) >= 1
        await trio.sleep(0.2)
    waited = trio.current_time() - started
    assert response.status_code == 200, response.text
    assert waited <= within_s, waited
    return waited


async def create_task(presa: Presa, token: str) -> str:
    """A task that waits for input (so it can be read, answered and cancelled)."""
    params = {"name": "confirm_delete", "arguments": {"filename": "a.txt"}}
    response = await presa.call("tools/call", params, token, capabilities=TASKS)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["resultType"] == "task"
    task_id: str = result["taskId"]
    return task_id


def task_requests(task_id: str) -> list[tuple[str, dict[str, Any]]]:
    answer = {"confirm-delete": {"action": "accept", "content": {"confirm": True}}}
    return [
        ("tasks/get", {"taskId": task_id}),
        ("tasks/update", {"taskId": task_id, "inputResponses": answer}),
        ("tasks/cancel", {"taskId": task_id}),
    ]


async def isolates_tasks(presa: Presa, alice: str, bob: str) -> None:
    """Bob's requests for alice's task get exactly what an unknown id gets; alice's work.

    SEP-2663 §Security Implications (auth binding): checked on every task
    request, and another principal's task is indistinguishable from an
    unknown one, byte for byte.
    """
    task_id = await create_task(presa, alice)
    unknown = secrets.token_hex(len(task_id) // 2)
    for (method, params), (_, unknown_params) in zip(
        task_requests(task_id), task_requests(unknown), strict=True
    ):
        as_bob = await presa.call(method, params, bob, capabilities=TASKS)
        as_nobody = await presa.call(method, unknown_params, bob, capabilities=TASKS)
        assert as_bob.status_code == as_nobody.status_code == 400
        assert as_bob.content == as_nobody.content
        assert as_bob.json()["error"]["code"] == -32602, as_bob.text
    get, update, _ = task_requests(task_id)
    _, _, cancel = task_requests(await create_task(presa, alice))
    for method, params in (get, update, cancel):
        as_alice = await presa.call(method, params, alice, capabilities=TASKS)
        assert as_alice.status_code == 200, (method, as_alice.text)


async def binds_request_state(presa: Presa, alice: str, bob: str) -> None:
    """A ``requestState`` issued to alice is refused when bob presents it (-32602)."""
    name = "test_input_required_result_request_state"
    first = await presa.call("tools/call", {"name": name, "arguments": {}}, alice)
    state = first.json()["result"]["requestState"]
    retry = {
        "name": name,
        "arguments": {},
        "requestState": state,
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
    }
    as_bob = await presa.call("tools/call", retry, bob)
    assert as_bob.status_code == 400
    assert as_bob.json()["error"]["code"] == -32602
    as_alice = await presa.call("tools/call", retry, alice)
    assert as_alice.status_code == 200, as_alice.text
    assert as_alice.json()["result"]["content"][0]["text"].startswith("state-ok")


async def keeps_two_users_apart(presa: Presa, alice: str, bob: str) -> None:
    """Both tokens work; each user has their own tasks and their own requestState."""
    await calls_a_tool(presa, alice)
    await calls_a_tool(presa, bob)
    await isolates_tasks(presa, alice, bob)
    await binds_request_state(presa, alice, bob)


@asynccontextmanager
async def listening(
    presa: Presa, token: str, task_ids: list[str]
) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
    """A ``subscriptions/listen`` for ``task_ids`` (and tool list changes): its
    messages as they arrive, the acknowledgement first, the listen result last."""
    params = {"notifications": {"taskIds": task_ids, "toolsListChanged": True}}
    message = request("subscriptions/listen", params, capabilities=TASKS)
    headers = {k: v for k, v in headers_for(message, ALL_NAME_PARAMS).items() if k != "host"}
    headers["authorization"] = f"Bearer {token}"
    async with presa.http.stream("POST", presa.url, json=message, headers=headers) as response:
        assert response.status_code == 200, await response.aread()

        yield sse_messages(response)
