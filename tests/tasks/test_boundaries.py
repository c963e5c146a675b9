"""Where the extension stops, on the wire: which answers may be tasks, and what a task never does.

Every test drives the conformance fixture (or a server without Tasks)
in-process through the ASGI app (presa_trio/testing/). A task's status moves
only when the test answers or cancels it, and the test waits for the worker
to settle (``wait_all_tasks_blocked``) before it looks.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import trio
from trio.testing import wait_all_tasks_blocked

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import TASKS_EXTENSION, Policy, TasksExtension
from presa_trio.tasks.context import DECLARATIONS_KEPT, LONGEST_SHARED_DECLARATION
from presa_trio.testing import McpClient, request, running
from presa_trio.wire.errors import METHOD_NOT_FOUND
from presa_trio.wire.meta import META_SUBSCRIPTION_ID
from tests.expect import error_of, result_of

DECLARED: dict[str, Any] = {"elicitation": {}, "sampling": {}, "extensions": {TASKS_EXTENSION: {}}}
ACCEPT = {"action": "accept", "content": {"confirm": True}}
TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")


async def declared(client: McpClient, method: str, **params: Any) -> dict[str, Any]:
    """The result of a declaring request (asserted to be a 200 result)."""
    return result_of(await client.call(method, params, capabilities=DECLARED))


async def create(client: McpClient, tool: str, **arguments: Any) -> dict[str, Any]:
    created = await declared(client, "tools/call", name=tool, arguments=arguments)
    assert created["resultType"] == "task"
    return created


async def test_prompts_and_resources_are_never_answered_with_a_task(
    client: McpClient, app: McpApp
) -> None:
    """Spec-mandated (SEP-2663 §Supported Methods: only tools/call may be augmented;
    T-11): with the declaration, prompts/get and resources/read answer as they always
    do, a multi round-trip round included, never with resultType "task" or a taskId.
    A task policy filed under a prompt's name changes nothing: policies name tools."""
    extension = next(e for e in app.dispatcher.server.extensions if e.id == TASKS_EXTENSION)
    assert isinstance(extension, TasksExtension)
    extension.set_policy("test_simple_prompt", Policy.REQUIRED)

    answers = [
        await declared(client, "prompts/get", name="test_simple_prompt"),
        await declared(client, "prompts/get", name="test_input_required_result_prompt"),
        await declared(client, "resources/read", uri="test://static-text"),
        await declared(client, "resources/read", uri="test://template/7/data"),
    ]
    assert [a["resultType"] for a in answers] == [
        "complete",
        "input_required",
        "complete",
        "complete",
    ]
    assert not any("taskId" in a for a in answers)


async def test_ttl_and_poll_interval_stay_as_created_on_every_poll(client: McpClient) -> None:
    """presa-defined (SEP-2663 §Tasks, §Task Polling: ttlMs and pollIntervalMs MAY
    change; T-19): presa never changes them, whatever the status, so the client's
    createdAt + ttlMs backstop and its polling pace hold for the task's whole life."""
    asking = await create(client, "confirm_delete", filename="a.txt")
    sleeping = await create(client, "slow_compute", seconds=60)
    await wait_all_tasks_blocked()
    polls = [await declared(client, "tasks/get", taskId=asking["taskId"])]
    await declared(
        client,
        "tasks/update",
        taskId=asking["taskId"],
        inputResponses={"confirm-delete": ACCEPT},
    )
    await wait_all_tasks_blocked()
    polls.append(await declared(client, "tasks/get", taskId=asking["taskId"]))
    polls.append(await declared(client, "tasks/get", taskId=sleeping["taskId"]))
    await declared(client, "tasks/cancel", taskId=sleeping["taskId"])
    polls.append(await declared(client, "tasks/get", taskId=sleeping["taskId"]))

    assert [p["status"] for p in polls] == ["input_required", "completed", "working", "cancelled"]
    created = {asking["taskId"]: asking, sleeping["taskId"]: sleeping}
    for poll in polls:
        first = created[poll["taskId"]]
        assert (poll["ttlMs"], poll["pollIntervalMs"]) == (first["ttlMs"], first["pollIntervalMs"])


async def test_task_methods_never_answer_input_required(client: McpClient) -> None:
    """Spec-mandated (2026-07-28 basic/patterns/mrtr §Supported Requests: only
    tools/call, prompts/get and resources/read; T-77): a task waiting for input says
    so in its status, inside a "complete" result; update and cancel are acknowledged
    as "complete" too, even when the update answers only part of what was asked and
    carries an MRTR requestState that tasks/* does not use."""
    task_id = (await create(client, "multi_input"))["taskId"]
    await wait_all_tasks_blocked()
    answers = [await declared(client, "tasks/get", taskId=task_id)]
    answers.append(
        await declared(
            client,
            "tasks/update",
            taskId=task_id,
            inputResponses={"first-input": ACCEPT},
            requestState="v1.not-for-tasks",
        )
    )
    await wait_all_tasks_blocked()
    answers.append(await declared(client, "tasks/get", taskId=task_id))
    answers.append(await declared(client, "tasks/cancel", taskId=task_id))

    assert [a["resultType"] for a in answers] == ["complete"] * 4
    assert (answers[0]["status"], answers[2]["status"]) == ("input_required", "input_required")
    assert set(answers[0]["inputRequests"]) == {"first-input", "second-input"}
    assert set(answers[2]["inputRequests"]) == {"second-input"}
    assert not any("requestState" in a for a in answers)


async def test_a_server_without_tasks_has_no_task_results_or_methods() -> None:
    """Spec-mandated (2026-07-28 basic/index §ResultType: result types come from the
    core and the extensions the server advertises; T-68): a server that does not add
    the extension does not advertise it, answers a declaring tools/call with a plain
    result, and knows no tasks/* method (404, -32601)."""
    server = Server("no-tasks", "1.0.0")

    @server.tool(description="Answers at once.")
    async def echo(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return "echo"

    async with running(McpApp.for_server(server)) as client:
        discovered = await declared(client, "server/discover")
        assert TASKS_EXTENSION not in discovered["capabilities"].get("extensions", {})
        called = await declared(client, "tools/call", name="echo", arguments={})
        assert called["resultType"] == "complete"
        assert called["content"] == [{"type": "text", "text": "echo"}]
        for method in TASK_METHODS:
            params = {"taskId": "t-1", "inputResponses": {}}
            response = await client.call(method, params, capabilities=DECLARED)
            error_of(response, 404, METHOD_NOT_FOUND)


async def test_task_notifications_go_only_to_acknowledged_ids_and_are_tagged(
    client: McpClient,
) -> None:
    """Spec-mandated (2026-07-28 basic/patterns/subscriptions §Acknowledgment,
    §Receiving Notifications; SEP-2663 §Task Status Notifications; T-79): the stream
    opens with the acknowledgement; a task that was not listed changes first and
    sends nothing; the listed task's changes follow, in order, each tagged with the
    listen id."""
    listed = (await create(client, "confirm_delete", filename="listed.txt"))["taskId"]
    unlisted = (await create(client, "confirm_delete", filename="other.txt"))["taskId"]
    await wait_all_tasks_blocked()
    listen = request(
        "subscriptions/listen",
        {"notifications": {"taskIds": [listed]}},
        request_id=4242,
        capabilities=DECLARED,
    )
    with trio.fail_after(5):
        async with client.stream(listen) as stream:
            ack = await stream.next_message()
            for task_id in (unlisted, listed):
                await declared(
                    client,
                    "tasks/update",
                    taskId=task_id,
                    inputResponses={"confirm-delete": ACCEPT},
                )
                await wait_all_tasks_blocked()
            seen = [await stream.next_message()]
            while seen[-1]["params"]["status"] != "completed":
                seen.append(await stream.next_message())
    unlisted_now = await declared(client, "tasks/get", taskId=unlisted)

    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"] == {
        "_meta": {META_SUBSCRIPTION_ID: 4242},
        "notifications": {"taskIds": [listed]},
    }
    assert {(m["method"], m["params"]["taskId"]) for m in seen} == {("notifications/tasks", listed)}
    # "working" may be superseded by "completed" before it is sent (docs/spec-notes.md entry 19).
    assert [m["params"]["status"] for m in seen] in (["working", "completed"], ["completed"])
    assert all(m["params"]["_meta"] == {META_SUBSCRIPTION_ID: 4242} for m in seen)
    assert unlisted_now["status"] == "completed"


async def test_a_listen_says_nothing_of_the_state_a_task_reached_before_it(
    client: McpClient,
) -> None:
    """presa-defined (SEP-2663 §Task Status Notifications: the server MAY push changes,
    and a client "need not" poll; T-51; docs/spec-notes.md entry 72): a listen hears
    the changes made after its acknowledgement, never the state a task had reached
    before. A task that ended before the listen is acknowledged all the same and
    sends nothing: the next message is the other listed task's change. One
    ``tasks/get`` after the acknowledgement reads the state the listen starts from."""
    ended = (await create(client, "failing_job"))["taskId"]
    parked = (await create(client, "confirm_delete", filename="a.txt"))["taskId"]
    await wait_all_tasks_blocked()
    listen = request(
        "subscriptions/listen",
        {"notifications": {"taskIds": [ended, parked]}},
        request_id=72,
        capabilities=DECLARED,
    )
    with trio.fail_after(5):
        async with client.stream(listen) as stream:
            ack = await stream.next_message()
            before = await declared(client, "tasks/get", taskId=ended)
            await declared(
                client, "tasks/update", taskId=parked, inputResponses={"confirm-delete": ACCEPT}
            )
            await wait_all_tasks_blocked()
            first = await stream.next_message()

    assert ack["params"]["notifications"] == {"taskIds": [ended, parked]}
    assert (before["status"], before["result"]["isError"]) == ("completed", True)
    assert (first["method"], first["params"]["taskId"]) == ("notifications/tasks", parked)


async def test_tasks_of_large_declarations_leave_nothing_held_once_they_end(
    client: McpClient,
) -> None:
    """presa-defined (tasks/context.py, ``detached_meta``): a task shares its creating
    request's declaration through a cache of ``DECLARATIONS_KEPT`` entries; one longer
    than ``LONGEST_SHARED_DECLARATION`` is kept by its task alone, so tasks made with
    as many distinct large declarations hold nothing once they have ended (the cache
    held each, about a MiB apiece here, until others displaced them)."""
    call = {"name": "slow_compute", "arguments": {"seconds": 0}}
    await client.send_request("tools/call", call, capabilities=DECLARED)  # warmed up
    await wait_all_tasks_blocked()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(DECLARATIONS_KEPT):
            pad = [f"{n}-{i}" for i in range(LONGEST_SHARED_DECLARATION // 2)]
            declared = {**DECLARED, "experimental": {"pad": pad}}
            await client.send_request("tools/call", call, capabilities=declared)
        await wait_all_tasks_blocked()
        del pad, declared
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 4 * 1024 * 1024
