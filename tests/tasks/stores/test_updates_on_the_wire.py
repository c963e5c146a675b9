"""tasks/update and tasks/cancel on the wire, on every store: what counts, what does not.

The ASGI app is driven in-process on a real store of each kind
(``conftest.STORE_KINDS``). Waiting for a status watches the task on a
listen stream (:meth:`~presa_trio.testing.tasks.TaskHandle.wait_for`), never
a sleep. Every result and every ``notifications/tasks`` is checked against
the schema (:mod:`tests.wire_schema`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from presa_trio.server import RequestContext, Server, ToolError
from presa_trio.tasks import Policy, TaskRunner, TasksExtension
from presa_trio.tasks.stores.base import TaskStore
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, connect
from presa_trio.testing.tasks import TaskHandle
from presa_trio.wire.errors import InvalidParams
from presa_trio.wire.mrtr import Elicitation, ListRoots, Sampling
from tests import wire_schema
from tests.expect import result_of

CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
ACCEPT = {"action": "accept", "content": {"ok": True}}
DECLINE = {"action": "decline"}
ANSWERS: dict[str, Any] = {
    "e": ACCEPT,
    "s": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "t"}},
    "r": {"roots": [{"uri": "file:///w"}]},
}


def unanswerable(key: str, request: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError(f"the test answers {key} itself")


@asynccontextmanager
async def served(store: TaskStore) -> AsyncIterator[McpClient]:
    """A server whose task tools keep their tasks in ``store``."""
    server = Server("updates", "1")
    tasks = TasksExtension(TaskRunner(store, ttl_ms=60_000, poll_interval_ms=100))
    server.add_extension(tasks)

    @tasks.tool(Policy.REQUIRED, description="Asks two questions at once; says the answers")
    async def two(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        answers = await ctx.ask({"a": Elicitation("A?", CONFIRM), "b": Elicitation("B?", CONFIRM)})
        return " ".join(answers.elicitation(key).action for key in "ab")

    @tasks.tool(Policy.REQUIRED, description="Asks all three kinds, then ends as told")
    async def life(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        await ctx.ask(
            {"e": Elicitation("E?", CONFIRM), "s": Sampling("S?", max_tokens=3), "r": ListRoots()}
        )
        end = arguments["end"]
        if end == "tool-error":
            raise ToolError("the widget is broken")
        if end == "failed":
            raise InvalidParams("widget must be blue", {"ratio": 0.5, "hint": None})
        if end == "crash":
            raise RuntimeError("token=hunter2")
        if end == "wait":
            await trio.sleep_forever()
        return {"ratio": 0.5, "hint": None}

    async with connect(server) as client:
        yield client


async def call(client: McpClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """``method`` with the extension declared; its result, checked against the schema."""
    result = result_of(await client.call(method, params, capabilities=TASKS_CAPABILITIES))
    assert wire_schema.result_problems(method, result, tasks_declared=True) == []
    return result


async def start(client: McpClient, name: str, **arguments: Any) -> TaskHandle:
    created = await call(client, "tools/call", {"name": name, "arguments": arguments})
    assert created["resultType"] == "task"
    return TaskHandle(client, created["taskId"], unanswerable)


async def update(client: McpClient, task: TaskHandle, answers: dict[str, Any]) -> None:
    ack = await call(client, "tasks/update", {"taskId": task.task_id, "inputResponses": answers})
    assert set(ack) == {"resultType", "_meta"}


async def get(client: McpClient, task: TaskHandle) -> dict[str, Any]:
    return await call(client, "tasks/get", {"taskId": task.task_id})


async def test_a_second_answer_and_an_answer_never_asked_are_acked_and_ignored(
    store: TaskStore,
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests (Response): a server SHOULD
    ignore responses under a key not outstanding, never issued or already
    answered, and MAY accept a partial set; T-44, T-45; spec-notes §29): each such
    update is acknowledged; an answer under a key never asked changes nothing, a
    second answer to a key, even one no ElicitResult, is not read, and the tool
    gets the first."""
    async with served(store) as client:
        task = await start(client, "two")
        await task.wait_for("input_required")
        before = await get(client, task)
        await update(client, task, {"never-asked": {"anything": 1}})
        assert await get(client, task) == before
        await update(client, task, {"a": ACCEPT})
        assert list((await get(client, task))["inputRequests"]) == ["b"]
        await update(client, task, {"a": {"action": "not an action"}})
        await update(client, task, {"a": DECLINE})
        assert list((await get(client, task))["inputRequests"]) == ["b"]
        await update(client, task, {"b": DECLINE, "a": DECLINE})
        done = await task.wait_for("completed")
        assert done.result is not None
        assert done.result.text == "accept decline"


async def test_an_update_racing_a_cancel_ends_the_task_once(store: TaskStore) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation: a cancel is acknowledged, and
    may end in another terminal status; §Task Update Requests; overview §Task
    lifecycle: a terminal status never changes; T-46, T-49, T-66): an answer and
    a cancel sent together are both acknowledged; the task ends ``cancelled`` or
    ``completed`` with that answer, and later updates and cancels are acknowledged
    and change nothing."""
    async with served(store) as client:
        task = await start(client, "two")
        await task.wait_for("input_required")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(update, client, task, {"a": DECLINE, "b": ACCEPT})
            nursery.start_soon(call, client, "tasks/cancel", {"taskId": task.task_id})
        ended = await task.wait_for("cancelled", "completed")
        if ended.status == "completed":
            assert ended.result is not None
            assert ended.result.text == "decline accept"
        else:
            assert ended.result is None
        final = await get(client, task)
        await update(client, task, {"a": ACCEPT, "b": ACCEPT})
        await call(client, "tasks/cancel", {"taskId": task.task_id})
        assert await get(client, task) == final


async def test_every_status_reads_and_notifies_alike_and_valid(store: TaskStore) -> None:
    """Spec-mandated (SEP-2663 §Task Polling (Response) items 1-5, §Task Status
    Notifications: each notification carries the DetailedTask tasks/get returns;
    §Task Execution Errors; T-27–T-31, T-54, T-61): each way a task can end, after
    input of all three kinds, reads back valid (a structured result and an
    error's data holding a fraction and a null, spec-notes §65), and the last
    ``notifications/tasks`` is the ``tasks/get`` that follows, ``resultType`` and
    ``_meta`` aside."""
    ends = {
        "complete": "completed",
        "tool-error": "completed",
        "failed": "failed",
        "crash": "failed",
        "wait": "cancelled",
    }
    async with served(store) as client:
        for end, status in ends.items():
            task = await start(client, "life", end=end)
            watch = {"taskIds": [task.task_id]}
            async with client.listen(watch, capabilities=TASKS_CAPABILITIES) as stream:
                assert wire_schema.notification_problems(await stream.next_message()) == []
                await task.wait_for("input_required")
                await update(client, task, ANSWERS)
                if end == "wait":
                    await task.wait_for("working")
                    await call(client, "tasks/cancel", {"taskId": task.task_id})
                polled = (await task.wait_for(status)).status
                assert polled == status
                final = await get(client, task)
                while True:
                    notification = await stream.next_message()
                    assert wire_schema.notification_problems(notification) == []
                    params = dict(notification["params"])
                    params.pop("_meta")
                    if params["status"] == status:
                        break
            assert params == {k: v for k, v in final.items() if k not in ("resultType", "_meta")}
