"""``tasks/stream`` with any cursor, any task id, any value anywhere (hypothesis).

Each example serves a memory store with task event streams on, runs a few
``rounds`` tasks (no questions, a few steps each) to their end, reads each
task's whole log once, then sends ``tasks/stream`` requests whose ``after``
is any JSON value and whose other members may be replaced by one or dropped.
The tasks have ended, so every stream ends by itself. What must hold:

- every answer is a result or a spec'd error (:func:`~tests.fuzz_inputs.check_answer`);
- an ``after`` that is no integer from 0 to the task's last event, or a task
  id no task has, is -32602 (SEP-2694 §Resume and Replay Semantics; spec-notes §50);
- a valid ``after`` gets exactly the events past it, in order, with no gap
  and none twice; no ``after``, the whole log;
- nothing is logged as an incident, and the server still serves.

The examples are derandomized, so a run is repeatable; set
``PRESA_FUZZ_EXAMPLES`` (default 40) for a longer search.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presa_trio.http.app import McpApp
from presa_trio.server import Server
from presa_trio.tasks import TaskRunner, TasksExtension
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.events import MAX_SEQ, Retention
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, meta, running
from presa_trio.wire.errors import INVALID_PARAMS
from presa_trio.wire.tasks import EVENT_NOTIFICATION
from tests.e2e.events_server import add_tools
from tests.expect import assert_still_serving
from tests.fuzz_inputs import (
    EDGE_NUMBERS,
    JSON_VALUES,
    check_answer,
    headers_of,
    paths,
    removed,
    replaced,
    unexpected_incidents,
)

STREAM = "tasks/stream"
#: Cursors near the edges: before the first event, inside, past the last, past a store's range.
AFTERS = st.one_of(
    st.integers(-3, 12),
    st.sampled_from([MAX_SEQ, MAX_SEQ + 1, 1.0, 0.5, -0.0, True, False, "1", None]),
    EDGE_NUMBERS,
    JSON_VALUES,
)
FUZZ = settings(
    max_examples=int(os.environ.get("PRESA_FUZZ_EXAMPLES", "40")),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def events_app() -> McpApp:
    """A server whose task tools emit events, with task event streams on, tasks in memory."""
    server = Server("stream-inputs", "0")
    tasks = TasksExtension(TaskRunner(MemoryStore()))
    server.add_extension(tasks)
    tasks.enable_events(TaskEventLog(Retention()))
    add_tools(tasks)
    return McpApp.for_server(server)


def stream_request(request_id: int, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": STREAM,
        "params": {**params, "_meta": meta(TASKS_CAPABILITIES)},
    }


async def streamed(
    client: McpClient, message: Any
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The checked final message of a ``tasks/stream``, and the events before it."""
    response = await client.post(message, headers_of(client, message))
    messages = response.messages() if response.body else []
    final = check_answer(response.status, response.headers.get("content-type"), messages, message)
    events = [note["params"] for note in messages[:-1]]
    assert all(note["method"] == EVENT_NOTIFICATION for note in messages[:-1]), messages
    return final, events


def is_cursor(after: Any, last_seq: int) -> bool:
    """Whether ``after`` names a place in a log whose last event is ``last_seq``."""
    return isinstance(after, int) and not isinstance(after, bool) and 0 <= after <= last_seq


@FUZZ
@given(data=st.data())
async def test_any_stream_request_gets_the_events_past_its_cursor_or_32602(
    caplog: pytest.LogCaptureFixture, data: st.DataObject
) -> None:
    """Spec-mandated (SEP-2694 §tasks/stream, §Resume and Replay Semantics; basic/index
    §Error Codes; spec-notes §50), property: any ``after`` and task id, and any value
    at any place, get the events past a valid cursor, whole and in order, or -32602,
    or another spec'd error for a mangled request; never an incident."""
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        async with running(events_app()) as client:
            logs: dict[str, list[dict[str, Any]]] = {}
            for steps in data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=2)):
                arguments = {"rounds": 0, "steps": steps}
                task = await client.call_tool("rounds", arguments, capabilities=TASKS_CAPABILITIES)
                whole = stream_request(0, {"taskId": task["taskId"]})
                final, events = await streamed(client, whole)  # to the task's end
                assert final is not None
                assert "result" in final, final
                assert [event["seq"] for event in events] == list(range(len(events)))
                logs[task["taskId"]] = events
            task_ids = st.one_of(st.sampled_from(sorted(logs)), st.text(max_size=8))
            for request_id in range(1, data.draw(st.integers(1, 4)) + 1):
                params: dict[str, Any] = {"taskId": data.draw(task_ids, label="taskId")}
                if data.draw(st.booleans()):
                    params["after"] = data.draw(AFTERS, label="after")
                message: Any = stream_request(request_id, params)
                mangled = data.draw(st.integers(0, 2), label="mangled")
                for _ in range(mangled):
                    path = data.draw(st.sampled_from(paths(message)), label="path")
                    if data.draw(st.booleans()):
                        message = replaced(message, path, data.draw(JSON_VALUES, label="value"))
                    elif path:
                        message = removed(message, path)
                if not isinstance(message, dict):
                    continue
                final, events = await streamed(client, message)
                if mangled or final is None:
                    continue
                log = logs.get(params["taskId"])
                after = params.get("after")
                if log is None or ("after" in params and not is_cursor(after, len(log) - 1)):
                    assert final["error"]["code"] == INVALID_PARAMS, (params, final)
                    continue
                assert "result" in final, (params, final)
                start = 0 if after is None else after + 1
                assert events == log[start:], (params, events, log)
            await assert_still_serving(client)
    assert unexpected_incidents(caplog.records) == []
