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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presa_trio.demo import build_app
from presa_trio.testing import TASKS_CAPABILITIES, running
from tests.expect import assert_still_serving
from tests.fuzz_inputs import unexpected_incidents
from tests.tasks.interleaving import ANSWERS, STARTS, TERMINAL, collect, send, without_meta

FUZZ = settings(
    max_examples=int(os.environ.get("PRESA_FUZZ_EXAMPLES", "30")),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


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
