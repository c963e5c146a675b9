"""One task, driven from a test: read it, wait for a status, answer it, cancel it, stream it.

:meth:`~presa_trio.testing.Client.start_task` makes a task of a task tool
and returns a :class:`TaskHandle`. Waiting watches the task on a
``subscriptions/listen`` stream rather than polling; answering is
``tasks/update``; cancelling ``tasks/cancel``; :meth:`TaskHandle.stream`
reads the task's event stream (``tasks/stream``), which a server serves
only with task event streams on (``--task-events``,
:meth:`~presa_trio.tasks.TasksExtension.enable_events`): elsewhere it is
-32601, raised as :class:`~presa_trio.testing.RequestFailed`.

Spec: SEP-2663 §Task Polling, §Task Status Notifications, §Task Update
Requests, §Task Cancellation; SEP-2694 (draft) §tasks/stream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import attrs
import trio

from presa_trio.testing.answers import MAX_ROUNDS, AnswerFunction, answer_all, still_asking
from presa_trio.testing.driver import TASKS_CAPABILITIES, McpClient, meta
from presa_trio.testing.results import ToolResult
from presa_trio.testing.streams import (
    WAIT,
    NotificationStream,
    open_listener,
    open_notification_stream,
    read_task_event,
)
from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import TERMINAL, Status, StreamedTaskEvent

#: The statuses, and the terminal ones, as they are spelt on the wire.
STATUSES = frozenset(status.value for status in Status)
TERMINAL_STATUSES = frozenset(status.value for status in TERMINAL)


@attrs.frozen
class TaskState:
    """A task as ``tasks/get`` (or a ``notifications/tasks``) shows it."""

    task_id: str
    status: str
    status_message: str | None
    input_requests: JSONObject
    result: ToolResult | None
    error: JSONObject | None

    @classmethod
    def read(cls, task: JSONObject) -> TaskState:
        result = task.get("result")
        return cls(
            task["taskId"],
            task["status"],
            task.get("statusMessage"),
            task.get("inputRequests") or {},
            None if result is None else ToolResult.read(result),
            task.get("error"),
        )


@attrs.define(eq=False)
class TaskHandle:
    """One task, driven: read it, wait for it, answer it, cancel it, stream its events."""

    client: McpClient
    task_id: str
    answer: AnswerFunction

    async def state(self) -> TaskState:
        return TaskState.read(await self.client.get_task(self.task_id))

    async def wait_for(self, *statuses: str) -> TaskState:
        """The task once it is in one of ``statuses``; fail the test after 10 s, or
        at once if it ends in another (a task that ended changes no more).

        It watches the task on a ``subscriptions/listen`` stream and reads it
        once the stream is acknowledged, so no change is missed and nothing
        polls (SEP-2663 §Task Status Notifications). A status misspelt, or
        none, is a ``ValueError`` at once: the task could never be in it.
        """
        unknown = [status for status in statuses if status not in STATUSES]
        if unknown or not statuses:
            named = ", ".join(map(repr, unknown)) or "no status"
            raise ValueError(f"{named} is no task status; wait for {', '.join(sorted(STATUSES))}")
        watch = {"taskIds": [self.task_id]}
        wanted = " or ".join(statuses)
        state: TaskState | None = None
        with trio.move_on_after(WAIT):
            async with open_listener(self.client, watch, meta(TASKS_CAPABILITIES)) as changes:
                state = await self.state()
                while state.status not in statuses:
                    if state.status in TERMINAL_STATUSES:
                        raise AssertionError(
                            f"task {self.task_id} ended {state.status}, never "
                            f"{wanted}: {state.error or state.result}"
                        )
                    state = TaskState.read((await changes.next()).params)
                return state
        now = "unread" if state is None else state.status
        raise trio.TooSlowError(f"task {self.task_id} not {wanted} within {WAIT:g} s; it is {now}")

    async def respond(self, responses: Mapping[str, JSONObject]) -> None:
        """``tasks/update`` with these answers."""
        await self.client.update_task(self.task_id, responses)

    async def cancel(self) -> TaskState:
        """``tasks/cancel``; the task as it is then (``cancelled`` unless it had ended)."""
        await self.client.cancel_task(self.task_id)
        return await self.state()

    async def result(self) -> ToolResult:
        """Answer each question the task asks, until it ends; its result.

        A task that ends ``failed`` or ``cancelled``, or still asks after
        :data:`~presa_trio.testing.answers.MAX_ROUNDS` rounds, fails the test.
        """
        terminal = TERMINAL_STATUSES
        for _ in range(MAX_ROUNDS):
            state = await self.wait_for("input_required", *terminal)
            if state.status in terminal:
                break
            await self.respond(await answer_all(self.answer, state.input_requests))
        else:
            raise still_asking(f"task {self.task_id}", state.input_requests)
        if state.result is None:
            raise AssertionError(f"task {self.task_id} ended {state.status}: {state.error}")
        return state.result

    @asynccontextmanager
    async def stream(
        self, after: int | None = None
    ) -> AsyncIterator[NotificationStream[StreamedTaskEvent]]:
        """``tasks/stream``: the task's events after ``after`` (all retained ones if ``None``).

        ``async for event in events`` reads them live, in ``seq`` order,
        until the server ends the stream once the task's terminal status
        was delivered; leaving the block closes the stream and leaves the
        task running (SEP-2694 §tasks/stream).
        """
        params: JSONObject = {"taskId": self.task_id, "_meta": meta(TASKS_CAPABILITIES)}
        if after is not None:
            params["after"] = after
        async with open_notification_stream(
            self.client, "tasks/stream", params, read_task_event
        ) as events:
            yield events
