"""Concurrent task requests in any order, on the memory store (hypothesis).

Each example starts a few tasks of the demo's task tools and watches them
on one ``subscriptions/listen`` stream, then sends a batch of
``tasks/get``, ``tasks/update`` (answers right, wrong, or any JSON value)
and ``tasks/cancel`` all at once, each after its own few checkpoints, so
they interleave with each other and with the workers. Whatever the order:

- each request gets a result or a spec'd error (:func:`~tests.fuzz_inputs.check_answer`),
  and nothing is logged as an incident but the failure of a tool that fails on purpose;
- a task's status notifications follow its legal moves: none after a
  terminal one (SEP-2663 §Task Status);
- a task whose cancellation was acknowledged is terminal at once (spec-notes §28);
- a terminal task reads the same on every later ``tasks/get``, as its
  terminal notification showed it: one outcome, never replaced;
- every task left unfinished still ends, cancelled, and its terminal
  notification shows what ``tasks/get`` shows.

The examples are derandomized, so a run is repeatable; set
``PRESA_FUZZ_EXAMPLES`` (default 30) for a longer search.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import pytest
import trio
import trio.lowlevel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presa_trio.demo import build_app
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, Stream, meta, running
from tests.expect import assert_still_serving
from tests.fuzz_inputs import JSON_VALUES, check_answer, headers_of, unexpected_incidents

TERMINAL = {"completed", "failed", "cancelled"}
STATUS_NOTIFICATION = "notifications/tasks"
#: Task tools of the demo, with arguments that make them quick: one that asks
#: once, one that asks twice, one that works in steps, two that fail, one
#: with child tasks.
STARTS: list[tuple[str, dict[str, Any]]] = [
    ("confirm_delete", {"filename": "f"}),
    ("multi_input", {}),
    ("slow_compute", {"seconds": 0.01}),
    ("failing_job", {}),
    ("protocol_error_job", {}),
    ("fan_out", {"parts": 3, "seconds": 0}),
]
ANSWERS = st.dictionaries(
    st.sampled_from(["confirm-delete", "first-input", "second-input", "x"]),
    st.one_of(
        st.just({"action": "accept", "content": {"confirm": True, "name": "A"}}),
        st.just({"action": "accept", "content": {"confirm": "yes"}}),
        st.sampled_from([{"action": "decline"}, {"action": "cancel"}]),
        JSON_VALUES,
    ),
    max_size=2,
)
FUZZ = settings(
    max_examples=int(os.environ.get("PRESA_FUZZ_EXAMPLES", "30")),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


async def send(
    client: McpClient, request_id: int, method: str, params: dict[str, Any], checkpoints: int
) -> dict[str, Any] | None:
    """``method`` after ``checkpoints`` scheduling points; its checked final message."""
    for _ in range(checkpoints):
        await trio.lowlevel.checkpoint()
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**params, "_meta": meta(TASKS_CAPABILITIES)},
    }
    response = await client.post(message, headers_of(client, message))
    messages = response.messages() if response.body else []
    return check_answer(response.status, response.headers.get("content-type"), messages, message)


async def collect(
    changes: Stream, seen: dict[str, list[dict[str, Any]]], ended: dict[str, trio.Event]
) -> None:
    """Every task status notification of the listen stream, by task, until cancelled;
    ``ended[task_id]`` is set at the task's terminal one."""
    while True:
        message = await changes.next_message()
        assert message["method"] == STATUS_NOTIFICATION, message
        task = message["params"]
        assert task["taskId"] in seen, task
        assert not any(earlier["status"] in TERMINAL for earlier in seen[task["taskId"]]), (
            "a notification after a terminal one",
            seen[task["taskId"]],
            task,
        )
        seen[task["taskId"]].append(task)
        if task["status"] in TERMINAL:
            ended[task["taskId"]].set()


def without_meta(task: dict[str, Any]) -> dict[str, Any]:
    """A task as both ``tasks/get`` and a notification carry it (not their envelopes)."""
    return {key: value for key, value in task.items() if key not in ("_meta", "resultType")}


@FUZZ
@given(data=st.data())
async def test_concurrent_task_requests_keep_every_task_legal(
    caplog: pytest.LogCaptureFixture, data: st.DataObject
) -> None:
    """Spec-mandated (SEP-2663 §Task Status, §Task Polling, §Task Update Requests,
    §Task Cancellation, §Task Status Notifications; spec-notes §28), property:
    concurrent gets, updates and cancels in any order leave every task in a legal
    state, its outcome set once, and the server serving."""
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        async with running(build_app()) as client:
            task_ids = []
            for name, arguments in data.draw(
                st.lists(st.sampled_from(STARTS), min_size=1, max_size=3), label="tools"
            ):
                result = await client.call_tool(name, arguments, capabilities=TASKS_CAPABILITIES)
                assert result["taskId"] not in task_ids, "a task id was issued twice"
                task_ids.append(result["taskId"])
            requests = data.draw(
                st.lists(
                    st.tuples(
                        st.sampled_from(["tasks/get", "tasks/update", "tasks/cancel"]),
                        st.sampled_from(task_ids),
                        ANSWERS,
                        st.integers(0, 3),
                    ),
                    min_size=1,
                    max_size=8,
                ),
                label="requests",
            )
            seen: dict[str, list[dict[str, Any]]] = {task_id: [] for task_id in task_ids}
            ended = {task_id: trio.Event() for task_id in task_ids}
            acknowledged: list[tuple[str, str]] = []
            wanted = {"taskIds": task_ids}
            with trio.fail_after(10):  # a hang guard, never a timed assertion
                async with client.listen(wanted, capabilities=TASKS_CAPABILITIES) as changes:
                    await changes.next_message()  # the acknowledgement
                    # A task that ended before the stream was open has no notification to come.
                    for task_id in task_ids:
                        if (await client.get_task(task_id))["status"] in TERMINAL:
                            ended[task_id].set()
                    async with trio.open_nursery() as watching:
                        watching.start_soon(collect, changes, seen, ended)

                        async def one(request_id: int, request: Any) -> None:
                            method, task_id, answers, checkpoints = request
                            params: dict[str, Any] = {"taskId": task_id}
                            if method == "tasks/update":
                                params["inputResponses"] = answers
                            final = await send(client, request_id, method, params, checkpoints)
                            if final is not None and "result" in final:
                                acknowledged.append((method, task_id))

                        async with trio.open_nursery() as sending:
                            for request_id, request in enumerate(requests):
                                sending.start_soon(one, request_id, request)
                        for method, task_id in acknowledged:
                            if method == "tasks/cancel":
                                task = await client.get_task(task_id)
                                assert task["status"] in TERMINAL, task
                        for task_id in task_ids:
                            await client.cancel_task(task_id)
                            task = await client.get_task(task_id)
                            assert task["status"] in TERMINAL, task
                            await ended[task_id].wait()
                            if seen[task_id]:
                                assert without_meta(task) == without_meta(seen[task_id][-1])
                            assert await client.get_task(task_id) == task
                        watching.cancel_scope.cancel()
            await assert_still_serving(client)
    assert unexpected_incidents(caplog.records) == []
