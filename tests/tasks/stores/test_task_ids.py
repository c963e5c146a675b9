"""Task ids that no task can have, asked for on every store: unknown, like any other.

The ASGI app is driven in-process on a real store of each kind
(``conftest.STORE_KINDS``). presa's own ids are base64url; an id holding
U+0000 (which PostgreSQL text cannot hold) or a lone surrogate (which UTF-8
cannot encode, though JSON can escape one) names no task, whatever the
store.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.tasks.extension import TasksExtension
from presa_trio.tasks.stores.base import TaskStore
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, request, running
from presa_trio.wire.errors import INVALID_PARAMS
from tests.stdio_lines import serve_lines

#: Ids no task can have, that the ``Mcp-Name`` header can carry (its base64 form).
NUL_IDS = ["\u0000", "a\u0000b"]
#: Ids no task can have, that no header can carry: asked for where no header names them.
SURROGATE_IDS = ["\ud800", "x\udfff"]


def task_requests(task_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("tasks/get", {"taskId": task_id}),
        ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
        ("tasks/cancel", {"taskId": task_id}),
    ]


async def answer(client: McpClient, method: str, params: dict[str, Any]) -> tuple[int, bytes]:
    message = request(method, params, capabilities=TASKS_CAPABILITIES)
    response = await client.post(message)
    return response.status, response.body


@pytest.mark.parametrize("odd", NUL_IDS)
async def test_an_id_no_task_can_have_is_answered_as_an_unknown_one(
    store: TaskStore, odd: str
) -> None:
    """Spec-mandated (SEP-2663 §Protocol Errors: an invalid or nonexistent taskId is
    -32602, which tasks/get MUST answer; T-65): tasks/get, tasks/update and
    tasks/cancel of an id holding U+0000 answer exactly as for an unknown id, on
    every store; PostgreSQL's refusal of the value was a 500, -32603 "Could not
    store the request"."""
    server = build_server()
    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.runner.store = store
    async with running(McpApp.for_server(server)) as client:
        for (method, params), (_, unknown) in zip(
            task_requests(odd), task_requests("unknown"), strict=True
        ):
            status, body = await answer(client, method, params)
            assert (status, body) == await answer(client, method, unknown), body
            assert status == 400
            assert f'"code":{INVALID_PARAMS}'.encode() in body


async def test_an_id_no_header_can_carry_is_an_unknown_one_on_stdio(store: TaskStore) -> None:
    """Spec-mandated (SEP-2663 §Protocol Errors: an invalid or nonexistent taskId is
    -32602; T-65): over stdio, where no ``Mcp-Name`` header stops a lone surrogate
    first, tasks/get, tasks/update and tasks/cancel of such an id answer -32602 as
    for an unknown one, on every store; SQLite would refuse to look it up (-32603)."""
    server = build_server()
    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.runner.store = store
    asked = [asking for odd in [*SURROGATE_IDS, *NUL_IDS] for asking in task_requests(odd)]
    lines = [
        json.dumps(request(method, params, request_id=n, capabilities=TASKS_CAPABILITIES)).encode()
        + b"\n"
        for n, (method, params) in enumerate(asked)
    ]
    answers = sorted(await serve_lines(server, lines), key=lambda answer: answer["id"])
    assert [answer["error"]["code"] for answer in answers] == [INVALID_PARAMS] * len(asked)


async def test_a_listen_drops_ids_no_task_can_have(store: TaskStore) -> None:
    """presa-defined (spec-notes §37; T-65): a listen's ``taskIds`` holding U+0000 or a
    lone surrogate are dropped as unknown ids are, on every store; SQLite and
    PostgreSQL refused to look them up, and the listen was a 500, -32603."""
    server = build_server()
    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.runner.store = store
    async with running(McpApp.for_server(server)) as client:
        wanted = {
            "notifications": {"taskIds": [*NUL_IDS, *SURROGATE_IDS], "toolsListChanged": True}
        }
        message = request("subscriptions/listen", wanted, capabilities=TASKS_CAPABILITIES)
        async with client.stream(message) as stream:
            acknowledged = await stream.next_message()
    assert acknowledged["params"]["notifications"] == {"toolsListChanged": True}
