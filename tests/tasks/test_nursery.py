"""The task's nursery, and the worker's status message, on the wire.

A tool here starts child tasks through ``ctx.nursery``; each child notes
that it started, then waits on an Event the test holds, and notes a cancel.
So the test sees every child's fate, and the recording store shows every
status write, so "nothing written after" is a list that stopped growing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from trio.testing import wait_all_tasks_blocked

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import TASKS_EXTENSION, Policy, TaskRunner, TasksExtension
from presa_trio.testing import McpClient, request, running
from presa_trio.wire.errors import INTERNAL_ERROR, INVALID_PARAMS, InvalidParams
from presa_trio.wire.tasks import Status
from tests.expect import error_of, result_of, without_incident
from tests.tasks.helpers import TRIO_CLOCK, RecordingStore

DECLARED: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}
UNDECLARED: dict[str, Any] = {}
CHILDREN = 3


@attrs.define(eq=False)
class Harness:
    """A server whose ``parts`` tool fans out; the test opens ``gate`` and reads ``fates``."""

    app: McpApp
    store: RecordingStore
    gate: trio.Event = attrs.field(factory=trio.Event)
    # child number -> "started", then "finished" or "cancelled".
    fates: dict[int, str] = attrs.field(factory=dict)


def build(**runner_options: Any) -> Harness:
    server = Server("nursery-test", "0")
    store = RecordingStore()
    options = {"ttl_ms": 60_000, **runner_options}
    tasks = TasksExtension(TaskRunner(store, **options))
    server.add_extension(tasks)
    harness = Harness(McpApp.for_server(server), store)

    async def child(n: int, results: trio.MemorySendChannel[int], fail: str) -> None:
        harness.fates[n] = "started"
        async with results:
            try:
                await harness.gate.wait()
            except trio.Cancelled:
                harness.fates[n] = "cancelled"
                raise
            if fail == "params" and n == 0:
                raise InvalidParams("part 0 is out of range")
            if fail == "crash" and n == 0:
                raise RuntimeError("secret=hunter2")
            harness.fates[n] = "finished"
            await results.send(n * 10)

    @tasks.tool(
        Policy.OPTIONAL, nursery=True, description="Fans out to child tasks in the call's nursery"
    )
    async def parts(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        send, receive = trio.open_memory_channel[int](CHILDREN)
        async with send:
            for n in range(CHILDREN):
                ctx.nursery.start_soon(child, n, send.clone(), arguments.get("fail", ""))
        await ctx.set_status_message(f"waiting for {CHILDREN} parts")
        async with receive:
            got = sorted([value async for value in receive])
        return " ".join(map(str, got))

    @tasks.tool(Policy.OPTIONAL, description="Says where it is, then waits")
    async def chatty(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        for message in arguments["messages"]:
            await ctx.set_status_message(message)
            await harness.gate.wait()
            harness.gate = trio.Event()
        return "done"

    return harness


@pytest.fixture
def harness() -> Harness:
    return build()


@pytest.fixture
async def client(harness: Harness) -> AsyncIterator[McpClient]:
    async with running(harness.app) as opened:
        yield opened


async def create(client: McpClient, name: str = "parts", **arguments: Any) -> str:
    params = {"name": name, "arguments": arguments}
    created = result_of(await client.call("tools/call", params, capabilities=DECLARED))
    assert created["resultType"] == "task"
    await wait_all_tasks_blocked()
    return str(created["taskId"])


async def get(client: McpClient, task_id: str) -> dict[str, Any]:
    return result_of(await client.call("tasks/get", {"taskId": task_id}, capabilities=DECLARED))


async def test_the_children_run_in_the_tasks_nursery_and_the_result_waits_for_them(
    client: McpClient, harness: Harness
) -> None:
    """presa-defined (spec-notes §47): every child starts at once, the task stays
    ``working`` while they run, and the result holds every child's part, written
    once they have all finished."""
    task_id = await create(client)
    assert harness.fates == dict.fromkeys(range(CHILDREN), "started")
    assert (await get(client, task_id))["status"] == "working"
    harness.gate.set()
    await wait_all_tasks_blocked()
    done = await get(client, task_id)
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "0 10 20"}]
    assert harness.fates == dict.fromkeys(range(CHILDREN), "finished")
    # The status message, then the outcome, once.
    assert harness.store.statuses(task_id) == [Status.WORKING, Status.COMPLETED]


async def test_the_same_tool_fans_out_on_the_plain_path(
    client: McpClient, harness: Harness
) -> None:
    """presa-defined (spec-notes §47): without the declaration the call's own
    nursery holds the children, and the answer comes once they have finished."""
    async with trio.open_nursery() as nursery:

        async def release() -> None:
            await wait_all_tasks_blocked()
            assert harness.fates == dict.fromkeys(range(CHILDREN), "started")
            harness.gate.set()

        nursery.start_soon(release)
        params = {"name": "parts", "arguments": {}}
        plain = result_of(await client.call("tools/call", params, capabilities=UNDECLARED))
    assert plain["content"] == [{"type": "text", "text": "0 10 20"}]
    assert harness.fates == dict.fromkeys(range(CHILDREN), "finished")


async def test_tasks_cancel_cancels_every_child_and_nothing_is_written_after(
    client: McpClient, harness: Harness
) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation; T-46, T-49): the cancel stops
    the task's whole nursery; every child sees ``Cancelled``, and a later release
    of the gate writes nothing."""
    task_id = await create(client)
    result_of(await client.call("tasks/cancel", {"taskId": task_id}, capabilities=DECLARED))
    await wait_all_tasks_blocked()
    assert harness.fates == dict.fromkeys(range(CHILDREN), "cancelled")
    harness.gate.set()
    await wait_all_tasks_blocked()
    assert (await get(client, task_id))["status"] == "cancelled"
    # The status message, then the cancel; nothing after it.
    assert harness.store.statuses(task_id) == [Status.WORKING, Status.CANCELLED]


async def test_the_ttl_cancels_every_child_and_writes_nothing(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """presa-defined (spec-notes §18, §47): the reaper deletes an expired task and
    its children are cancelled with it; nothing is written for it."""
    harness = build(clock=TRIO_CLOCK, reap_every=1.0, ttl_ms=5_000)
    async with running(harness.app) as client:
        task_id = await create(client)
        writes = list(harness.store.writes)
        autojump_clock.jump(6)
        await wait_all_tasks_blocked()
        assert harness.fates == dict.fromkeys(range(CHILDREN), "cancelled")
        gone = await client.call("tasks/get", {"taskId": task_id}, capabilities=DECLARED)
        error_of(gone, 400, INVALID_PARAMS)
    assert harness.store.writes == writes


async def test_shutdown_cancels_every_child_and_writes_nothing() -> None:
    """presa-defined (spec-notes §41, §47): closing the server cancels each task's
    nursery; the task keeps its last stored state."""
    harness = build()
    async with running(harness.app) as client:
        task_id = await create(client)
        writes = list(harness.store.writes)
    assert harness.fates == dict.fromkeys(range(CHILDREN), "cancelled")
    assert harness.store.writes == writes
    assert harness.store.entries[task_id].task.status is Status.WORKING


async def test_a_task_whose_child_crashes_ends_alone(
    client: McpClient, harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """presa-defined (the failure policy: a failure inside a task ends that task
    only): one task's child raises; that task ends ``failed``, while another task
    runs on to its result and the server answers throughout."""
    caplog.set_level(logging.CRITICAL)  # the crash's incident is expected
    steady = await create(client, "chatty", messages=["one", "two"])
    crashing = await create(client, fail="crash")
    harness.gate.set()
    await wait_all_tasks_blocked()
    assert (await get(client, crashing))["status"] == "failed"
    running_on = await get(client, steady)
    assert (running_on["status"], running_on["statusMessage"]) == ("working", "two")
    listed = result_of(await client.call("tools/list", {}, capabilities=DECLARED))
    assert {tool["name"] for tool in listed["tools"]} == {"parts", "chatty"}
    harness.gate.set()
    await wait_all_tasks_blocked()
    done = await get(client, steady)
    assert (done["status"], done["result"]["content"]) == (
        "completed",
        [{"type": "text", "text": "done"}],
    )


@pytest.mark.parametrize(
    ("fail", "code", "message"),
    [("params", INVALID_PARAMS, "part 0 is out of range"), ("crash", INTERNAL_ERROR, None)],
)
async def test_a_childs_exception_cancels_its_siblings_and_fails_the_task(
    client: McpClient, harness: Harness, fail: str, code: int, message: str | None
) -> None:
    """Spec-mandated (SEP-2663 §Task Execution Errors; T-62; spec-notes §25, §47):
    the child's own JSON-RPC error, else -32603 with no detail, as the plain call
    answers; the other children are cancelled."""
    task_id = await create(client, fail=fail)
    harness.gate.set()
    await wait_all_tasks_blocked()
    failed = await get(client, task_id)
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == code
    assert "hunter2" not in str(failed)
    if message is not None:
        assert failed["error"]["message"] == message
    assert harness.fates[0] == "started"
    harness.gate = trio.Event()
    harness.fates.clear()
    params = {"name": "parts", "arguments": {"fail": fail}}
    async with trio.open_nursery() as nursery:

        async def release() -> None:
            await wait_all_tasks_blocked()
            harness.gate.set()

        nursery.start_soon(release)
        plain = await client.call("tools/call", params, capabilities=UNDECLARED)
    status = 500 if code == INTERNAL_ERROR else 400
    assert without_incident(error_of(plain, status, code)) == without_incident(failed["error"])


async def test_a_status_message_shows_in_tasks_get_and_keeps_the_status(
    client: McpClient, harness: Harness
) -> None:
    """Spec-mandated (SEP-2663 §Tasks ``statusMessage``: "progress descriptions for
    working"; spec-notes §46): the worker's message is the task's until the status
    changes; ``lastUpdatedAt`` moves with it."""
    task_id = await create(client, "chatty", messages=["step 1 of 2", "step 2 of 2"])
    first = await get(client, task_id)
    assert (first["status"], first["statusMessage"]) == ("working", "step 1 of 2")
    harness.gate.set()
    await wait_all_tasks_blocked()
    second = await get(client, task_id)
    assert (second["status"], second["statusMessage"]) == ("working", "step 2 of 2")
    harness.gate.set()
    await wait_all_tasks_blocked()
    done = await get(client, task_id)
    assert done["status"] == "completed"
    assert "statusMessage" not in done


async def test_a_status_message_reaches_a_listen_stream(
    client: McpClient, harness: Harness
) -> None:
    """Spec-mandated (SEP-2663 §Task Status Notifications; T-51): each message is a
    stored change, sent as ``notifications/tasks`` with the DetailedTask."""
    task_id = await create(client, "chatty", messages=["step 1 of 2", "step 2 of 2"])
    listen = request(
        "subscriptions/listen", {"notifications": {"taskIds": [task_id]}}, capabilities=DECLARED
    )
    with trio.fail_after(5):
        async with client.stream(listen) as stream:
            await stream.next_message()  # the acknowledgement
            harness.gate.set()
            seen = await stream.next_message()
    assert seen["method"] == "notifications/tasks"
    assert (seen["params"]["status"], seen["params"]["statusMessage"]) == (
        "working",
        "step 2 of 2",
    )
    assert seen["params"]["taskId"] == task_id


async def test_a_status_message_on_the_plain_path_changes_nothing(
    client: McpClient, harness: Harness
) -> None:
    """presa-defined (spec-notes §46): a plain call has no status to show; the
    call answers as if the tool had not said it, with no notification."""
    harness.gate.set()
    params = {"name": "chatty", "arguments": {"messages": ["only step"]}}
    reply = await client.call("tools/call", params, capabilities=UNDECLARED)
    assert result_of(reply)["content"] == [{"type": "text", "text": "done"}]
    assert len(reply.messages()) == 1


def plain_server(finished: list[int]) -> McpApp:
    """A server without the Tasks extension: one tool declares its children, one does not."""
    server = Server("plain-nursery-test", "0")

    async def child(n: int) -> None:
        await trio.lowlevel.checkpoint()
        finished.append(n)

    @server.tool(nursery=True, description="Starts two children and returns at once")
    async def declared(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        for n in range(2):
            ctx.nursery.start_soon(child, n)
        return "started"

    @server.tool(description="Starts a child without saying so at registration")
    async def undeclared(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        ctx.nursery.start_soon(child, 9)
        return "started"

    return McpApp.for_server(server)


async def test_a_plain_call_waits_for_the_children_of_a_tool_registered_with_a_nursery() -> None:
    """presa-defined (spec-notes §47): ``nursery=True`` gives the plain call a
    nursery around the handler, and the answer comes once every child has ended."""
    finished: list[int] = []
    async with running(plain_server(finished)) as client:
        reply = await client.call("tools/call", {"name": "declared", "arguments": {}})
    assert result_of(reply)["content"] == [{"type": "text", "text": "started"}]
    assert sorted(finished) == [0, 1]


async def test_a_tool_without_a_nursery_that_starts_a_child_is_a_server_fault(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """presa-defined (spec-notes §47): a plain call opens no nursery for a tool not
    registered with ``nursery=True``; reaching for one is a bug, -32603 with the
    detail in the log only, and no child runs."""
    finished: list[int] = []
    async with running(plain_server(finished)) as client:
        with caplog.at_level(logging.ERROR):
            reply = await client.call("tools/call", {"name": "undeclared", "arguments": {}})
    error = error_of(reply, 500, INTERNAL_ERROR)
    assert "nursery" not in str(error)
    assert "registered with nursery=True" in caplog.text
    assert finished == []
