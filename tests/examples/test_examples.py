"""The README's examples work as the README says."""

from __future__ import annotations

from typing import Any

from trio.testing import wait_all_tasks_blocked

from examples import hello_server, task_tool, two_rounds, typed_server
from presa_trio.http.app import McpApp
from presa_trio.testing import running

ELICIT_ACCEPT = {"action": "accept", "content": {"city": "Lisbon"}}
SAMPLED = {
    "role": "assistant",
    "content": {"type": "text", "text": "It has seven hills."},
    "model": "test-model",
}


async def test_hello_server_greets() -> None:
    """presa-defined: the ten-line server of the README answers its tool."""
    async with running(McpApp.for_server(hello_server.server)) as client:
        response = await client.call("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
    assert response.json()["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]


async def test_hello_server_refuses_a_count_it_cannot_afford() -> None:
    """presa-defined (server/tools §Security Considerations: servers MUST validate all
    tool inputs): the README's server bounds ``times``, so a client asking for a
    billion greetings gets a tool error naming the bound, not a server that builds
    gigabytes of text."""
    async with running(McpApp.for_server(hello_server.server)) as client:
        arguments = {"name": "Ada", "times": 10**9}
        response = await client.call("tools/call", {"name": "greet", "arguments": arguments})
    result = response.json()["result"]
    assert result["isError"] is True
    assert "/times" in result["content"][0]["text"]


async def test_two_round_tool_asks_the_user_then_the_model() -> None:
    """Spec-mandated (basic/patterns/mrtr §Basic Workflow): each retry carries only the
    answers of the previous round, and the signed state carries the rest; a form
    accepted without its city is asked again (§Error Handling), never a -32603."""
    async with running(McpApp.for_server(two_rounds.server)) as client:

        async def call(**extra: Any) -> dict[str, Any]:
            params = {"name": "city_fact", "arguments": {}, **extra}
            result: dict[str, Any] = (await client.call("tools/call", params)).json()["result"]
            return result

        first = await call()
        assert first["resultType"] == "input_required"
        assert first["inputRequests"]["city"]["method"] == "elicitation/create"
        unfilled = await call(inputResponses={"city": {"action": "accept", "content": {}}})
        assert list(unfilled["inputRequests"]) == ["city"]
        second = await call(inputResponses={"city": ELICIT_ACCEPT})
        assert second["inputRequests"]["fact"]["method"] == "sampling/createMessage"
        third = await call(inputResponses={"fact": SAMPLED}, requestState=second["requestState"])
    assert third["resultType"] == "complete"
    assert third["content"][0]["text"] == "Lisbon: It has seven hills."


async def test_task_tool_parks_on_input_then_completes() -> None:
    """Spec-mandated (SEP-2663 §Task Creation, §Task Update Requests; T-13, T-40):
    the README's task tool becomes a task, asks, and completes once answered."""
    declared: dict[str, Any] = {
        "elicitation": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    }
    async with running(McpApp.for_server(task_tool.server)) as client:
        created = (
            await client.call(
                "tools/call", {"name": "delete", "arguments": {"path": "a"}}, capabilities=declared
            )
        ).json()["result"]
        task = {"taskId": created["taskId"]}
        await wait_all_tasks_blocked()
        parked = (await client.call("tasks/get", task, capabilities=declared)).json()["result"]
        answer = {"ok": {"action": "accept", "content": {"ok": True}}}
        await client.call("tasks/update", {**task, "inputResponses": answer}, capabilities=declared)
        await wait_all_tasks_blocked()
        done = (await client.call("tasks/get", task, capabilities=declared)).json()["result"]
    assert created["resultType"] == "task"
    assert parked["status"] == "input_required"
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "deleted"}]


async def test_task_tool_works_unchanged_for_a_client_without_the_extension() -> None:
    """Spec-mandated (basic/patterns/mrtr §Server Requirements; SEP-2663 §Capability
    Negotiation: an OPTIONAL tool answers plainly when the request does not declare
    Tasks): the README's task tool, written with ``ask``, asks through a multi
    round-trip round and completes on the retry, with no Tasks extension declared."""
    plain: dict[str, Any] = {"elicitation": {}}
    answer = {"ok": {"action": "accept", "content": {"ok": True}}}
    async with running(McpApp.for_server(task_tool.server)) as client:
        path = {"path": "a"}
        asked = (
            await client.call(
                "tools/call", {"name": "delete", "arguments": path}, capabilities=plain
            )
        ).json()["result"]
        params = {
            "name": "delete",
            "arguments": path,
            "inputResponses": answer,
            "requestState": asked["requestState"],
        }
        done = (await client.call("tools/call", params, capabilities=plain)).json()["result"]
        declined = (
            await client.call(
                "tools/call",
                {
                    "name": "delete",
                    "arguments": path,
                    "inputResponses": {"ok": {"action": "decline"}},
                },
                capabilities=plain,
            )
        ).json()["result"]
        no_elicitation = (
            await client.call("tools/call", {"name": "delete", "arguments": path}, capabilities={})
        ).json()["error"]
    assert asked["resultType"] == "input_required"
    assert asked["inputRequests"]["ok"]["method"] == "elicitation/create"
    assert done["resultType"] == "complete"
    assert done["content"] == [{"type": "text", "text": "deleted"}]
    assert declined["content"] == [{"type": "text", "text": "kept"}]
    assert no_elicitation["code"] == -32021


async def test_typed_server_books_once_the_user_confirms() -> None:
    """presa-defined (docs/api.md, typed values and typed elicitation): the typed
    example reads a dataclass with a datetime and a Decimal, asks with a typed
    form, and answers a structured receipt; a declined form is its ``isError``."""
    booking = {"room": "Blue", "starts": "2026-07-28T15:00:00+02:00", "price": "80.50"}
    params: dict[str, Any] = {"name": "book", "arguments": {"booking": booking, "nights": 2}}
    async with running(McpApp.for_server(typed_server.server)) as client:
        asked = (await client.call("tools/call", params)).json()["result"]
        confirmed = {
            "inputResponses": {"elicit-1": {"action": "accept", "content": {"sure": True}}}
        }
        done = (await client.call("tools/call", {**params, **confirmed})).json()["result"]
        declined = {"inputResponses": {"elicit-1": {"action": "decline"}}}
        refused = (await client.call("tools/call", {**params, **declined})).json()["result"]
    form = asked["inputRequests"]["elicit-1"]["params"]
    assert form["message"] == "Book Blue for 161.00?"
    assert form["requestedSchema"]["required"] == ["sure"]
    assert done["structuredContent"]["booking"] == booking
    assert done["structuredContent"]["total"] == "161.00"
    assert refused["isError"] is True
