"""Concurrent task requests in any order, spread over two processes on one PostgreSQL.

The property of ``tests/tasks/test_interleavings.py``, with two servers, each
with its own connections to one database (as two ``presa-trio serve``
processes would be): each request goes to either, so a cancel, an update
or a read meets the worker through the store and its announcements. A
short lease keeps both recoveries running throughout, and a draw may let
go of one server's leases in the middle of the batch (as a process that
stops does), so the other claims its tasks and runs them again while the
requests go on. Whatever the order:

- each request gets a result or a spec'd error, and nothing is logged as an
  incident but the failure of a tool that fails on purpose;
- a task whose cancellation was acknowledged is terminal at once, on both;
- a terminal task reads the same on both, on every later ``tasks/get``,
  as its terminal notification on the listen stream showed it, and no
  notification follows a terminal one;
- every task left unfinished still ends, cancelled.

The examples are derandomized, so a run is repeatable; set
``PRESA_FUZZ_EXAMPLES`` (default 8 here: each opens two stores) for a longer search.
"""

from __future__ import annotations

import logging
import os
from contextlib import AsyncExitStack
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.server import Server
from presa_trio.tasks.extension import TasksExtension
from presa_trio.tasks.stores import open_store
from presa_trio.testing import TASKS_CAPABILITIES, running
from tests.expect import assert_still_serving
from tests.fuzz_inputs import unexpected_incidents
from tests.tasks.interleaving import ANSWERS, STARTS, TERMINAL, collect, send, without_meta

#: A lease short enough that renewal and recovery run throughout an example (ms).
LEASE_MS = 300

FUZZ = settings(
    max_examples=int(os.environ.get("PRESA_FUZZ_EXAMPLES", "8")),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def runner_owner(server: Server) -> str:
    """The name of the server's task runner on the leases it holds."""
    [tasks] = [e for e in server.extensions if isinstance(e, TasksExtension)]
    return tasks.runner.owner


@FUZZ
@given(data=st.data())
async def test_requests_over_two_processes_keep_every_task_legal(
    postgres_url: str, caplog: pytest.LogCaptureFixture, data: st.DataObject
) -> None:
    """Spec-mandated (SEP-2663 §Task Status, §Task Update Requests, §Task Cancellation,
    §Task Status Notifications; spec-notes §28), property: gets, updates and cancels
    sent to either of two processes, in any order, while one process's leases may be
    let go, leave every task legal, its outcome set once and the same on both."""
    caplog.clear()
    with caplog.at_level(logging.ERROR), trio.fail_after(30):  # a hang guard only
        async with AsyncExitStack() as stack:
            clients, stores, owners = [], [], []
            for _ in range(2):
                store = await stack.enter_async_context(open_store(postgres_url))
                server = build_server(store=store, lease_ms=LEASE_MS)
                stores.append(store)
                owners.append(runner_owner(server))
                app = McpApp.for_server(server)
                clients.append(await stack.enter_async_context(running(app)))
            task_ids = []
            for name, arguments in data.draw(
                st.lists(st.sampled_from(STARTS), min_size=1, max_size=3), label="tools"
            ):
                creator = clients[data.draw(st.integers(0, 1), label="created on")]
                result = await creator.call_tool(name, arguments, capabilities=TASKS_CAPABILITIES)
                task_ids.append(result["taskId"])
            requests = data.draw(
                st.lists(
                    st.tuples(
                        st.sampled_from(["tasks/get", "tasks/update", "tasks/cancel"]),
                        st.sampled_from(task_ids),
                        ANSWERS,
                        st.integers(0, 3),
                        st.integers(0, 1),
                    ),
                    min_size=1,
                    max_size=8,
                ),
                label="requests",
            )
            released = data.draw(st.sampled_from([None, 0, 1]), label="leases let go by")
            seen: dict[str, list[dict[str, Any]]] = {task_id: [] for task_id in task_ids}
            ended = {task_id: trio.Event() for task_id in task_ids}
            acknowledged: list[tuple[str, str]] = []
            listener = clients[0]
            async with listener.listen(
                {"taskIds": task_ids}, capabilities=TASKS_CAPABILITIES
            ) as changes:
                await changes.next_message()  # the acknowledgement
                for task_id in task_ids:
                    if (await listener.get_task(task_id))["status"] in TERMINAL:
                        ended[task_id].set()
                async with trio.open_nursery() as watching:
                    watching.start_soon(collect, changes, seen, ended)

                    async def one(request_id: int, request: Any) -> None:
                        method, task_id, answers, checkpoints, to = request
                        params: dict[str, Any] = {"taskId": task_id}
                        if method == "tasks/update":
                            params["inputResponses"] = answers
                        final = await send(clients[to], request_id, method, params, checkpoints)
                        if final is not None and "result" in final:
                            acknowledged.append((method, task_id))

                    async with trio.open_nursery() as sending:
                        for request_id, request in enumerate(requests):
                            sending.start_soon(one, request_id, request)
                        if released is not None:
                            await stores[released].release(owners[released])
                    for method, task_id in acknowledged:
                        if method == "tasks/cancel":
                            for client in clients:
                                task = await client.get_task(task_id)
                                assert task["status"] in TERMINAL, task
                    for task_id in task_ids:
                        await clients[1].cancel_task(task_id)
                        task = await clients[0].get_task(task_id)
                        assert task["status"] in TERMINAL, task
                        await ended[task_id].wait()
                        if seen[task_id]:
                            assert without_meta(task) == without_meta(seen[task_id][-1])
                        for client in clients:
                            assert await client.get_task(task_id) == task
                    watching.cancel_scope.cancel()
            for client in clients:
                await assert_still_serving(client)
    assert unexpected_incidents(caplog.records) == []
