"""End to end: ``notifications/tasks`` on a ``subscriptions/listen`` stream.

Rules of this file: a real hypercorn on port 0 and httpx over loopback; the
task tools are the test's own, registered with the public API, and gated by
``trio.Event`` so that every status change happens after the subscription
exists (no sleeps, no races to win).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import attrs
import httpx
import pytest
import trio

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TasksExtension
from presa_trio.testing import request
from presa_trio.wire.meta import META_SUBSCRIPTION_ID
from presa_trio.wire.mrtr import Elicitation
from tests.e2e.harness import Served, headers, start
from tests.streams import sse_messages

TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
CONFIRM = Elicitation("Go ahead?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})


@attrs.define
class Gates:
    """What the test's task tools wait for before they move."""

    ask: trio.Event = attrs.field(factory=trio.Event)


def build(gates: Gates) -> McpApp:
    server = Server("notifications-test", "1.0.0")
    tasks = TasksExtension()
    server.add_extension(tasks)

    @tasks.tool(Policy.REQUIRED, description="Waits for the test, asks to confirm, answers.")
    async def staged(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await gates.ask.wait()
        answers = await ctx.ask({"go": CONFIRM})
        return f"confirmed: {(answers.elicitation('go').content or {})['ok']}"

    @tasks.tool(Policy.REQUIRED, description="Sleeps a minute.")
    async def sleeper(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await trio.sleep(60)
        return "slept"

    return McpApp.for_server(server)


@pytest.fixture
def gates() -> Gates:
    return Gates()


@pytest.fixture
async def served(nursery: trio.Nursery, gates: Gates) -> AsyncIterator[Served]:
    server, shutdown = await start(build(gates), nursery)
    yield server
    shutdown.set()


async def call(http: httpx.AsyncClient, served: Served, method: str, **params: Any) -> Any:
    message = request(method, params, capabilities=TASKS)
    extra = {"mcp-name": params["taskId"]} if "taskId" in params else {}
    response = await http.post(served.url, json=message, headers=headers(message, **extra))
    return response.json()["result"]


async def create(http: httpx.AsyncClient, served: Served, tool: str) -> str:
    result = await call(http, served, "tools/call", name=tool, arguments={})
    assert result["resultType"] == "task"
    task_id: str = result["taskId"]
    return task_id


def listen(served: Served, http: httpx.AsyncClient, task_ids: list[str]) -> Any:
    message = request(
        "subscriptions/listen",
        {"notifications": {"taskIds": task_ids}},
        request_id=7,
        capabilities=TASKS,
    )
    return http.stream("POST", served.url, json=message, headers=headers(message))


async def until(
    incoming: AsyncIterator[dict[str, Any]], task_id: str, status: str
) -> list[dict[str, Any]]:
    """The notifications read up to and including ``task_id`` reaching ``status``."""
    seen = []
    while True:
        seen.append(await anext(incoming))
        if (seen[-1]["params"]["taskId"], seen[-1]["params"]["status"]) == (task_id, status):
            return seen


async def test_subscribed_tasks_report_their_newest_status_in_order(
    served: Served, http: httpx.AsyncClient, gates: Gates
) -> None:
    """Spec-mandated (SEP-2663 §Task Status Notifications; T-51, T-52, T-54, T-79): the
    ack echoes the accepted ids (an unknown one is dropped silently); each change of a
    subscribed task arrives as notifications/tasks carrying the DetailedTask that
    tasks/get returns, tagged with the subscription id, in order; a state superseded
    before the stream sent it may be left out (docs/spec-notes.md entry 19); terminal
    ones inline their result."""
    with trio.fail_after(10):
        first = await create(http, served, "staged")
        second = await create(http, served, "sleeper")
        async with listen(served, http, [first, "no-such-task", second]) as stream:
            incoming = sse_messages(stream)
            ack = await anext(incoming)
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["notifications"] == {"taskIds": [first, second]}

            gates.ask.set()
            seen = [await anext(incoming)]
            await call(
                http,
                served,
                "tasks/update",
                taskId=first,
                inputResponses={"go": {"action": "accept", "content": {"ok": True}}},
            )
            seen += await until(incoming, first, "completed")
            await call(http, served, "tasks/cancel", taskId=second)
            seen += await until(incoming, second, "cancelled")
        final_get = await call(http, served, "tasks/get", taskId=first)

    assert {m["method"] for m in seen} == {"notifications/tasks"}
    assert all(m["params"]["_meta"] == {META_SUBSCRIPTION_ID: 7} for m in seen)
    statuses = [(m["params"]["taskId"], m["params"]["status"]) for m in seen]
    assert statuses[0] == (first, "input_required")
    assert statuses[1:-2] in ([(first, "working")], [])
    assert statuses[-2:] == [(first, "completed"), (second, "cancelled")]
    assert seen[0]["params"]["inputRequests"] == {"go": CONFIRM.to_wire()}
    completed = {k: v for k, v in seen[-2]["params"].items() if k != "_meta"}
    assert "resultType" not in completed
    assert completed == {k: v for k, v in final_get.items() if k not in ("_meta", "resultType")}
    assert completed["result"]["content"] == [{"type": "text", "text": "confirmed: True"}]


async def test_a_closed_task_stream_leaves_no_subscriber_or_worker(
    served: Served, http: httpx.AsyncClient
) -> None:
    """presa-defined (subscriptions §Cancellation): when the client closes a listen stream, the
    handler is cancelled and the ASGI call returns, leaving the subscription's block."""
    with trio.fail_after(10):
        task_id = await create(http, served, "sleeper")
        async with listen(served, http, [task_id]) as stream:
            ack = await anext(sse_messages(stream))
            assert ack["params"]["notifications"] == {"taskIds": [task_id]}
        await served.tracked.wait_idle()
