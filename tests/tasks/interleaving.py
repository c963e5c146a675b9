"""What the interleaving properties share: the tasks they start, the answers and
requests they send, and how they read a listen stream (``tests/tasks/test_interleavings.py``
on one server, ``tests/tasks/stores/test_interleavings_across_processes.py`` on two)."""

from __future__ import annotations

from typing import Any

import trio
import trio.lowlevel
from hypothesis import strategies as st

from presa_trio.testing import TASKS_CAPABILITIES, McpClient, Stream, meta
from tests.fuzz_inputs import JSON_VALUES, check_answer, headers_of

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
