"""A task's life from the client's side: watch it, answer it, cancel it.

When ``tools/call`` answers with a task (``resultType: "task"``, SEP-2663
§Task Creation), :meth:`TaskFollower.follow` stays with it until it ends:

- **watching**: the task's event stream when ``server/discover`` lists
  ``eventStreams`` in the Tasks extension's settings (SEP-2694, a draft:
  :class:`~presa_trio.client.events.TaskEvents`), its status read from
  presa's status events; else ``subscriptions/listen`` with
  ``notifications.taskIds`` when the server's acknowledgement lists the
  task (§Task Status Notifications), after one ``tasks/get`` for the state
  it is already in; else, or when the stream ends or is refused,
  ``tasks/get`` every ``pollIntervalMs`` (§Task Polling). Each feeds one
  channel of snapshots, read by one loop;
- **answering**: a snapshot that is ``input_required`` has its
  ``inputRequests`` answered (:class:`~presa_trio.client.answers.Answerer`,
  each key once: §Task Update Requests asks clients to deduplicate) and
  sent with ``tasks/update``; a status event names no requests, so its
  snapshot is completed by ``tasks/get`` first;
- **the status line** shows each snapshot's status and ``statusMessage``;
- **the outcome**: a terminal snapshot that does not carry its outcome
  (``result`` when ``completed``, ``error`` when ``failed``) is followed by
  one ``tasks/get``, whose DetailedTask must (:func:`carries_outcome`).

The watcher and the status ticker are children of the follower's nursery;
the first error of either (or of the loop) cancels the others and ends the
follow. :meth:`TaskFollower.cancel` is ``tasks/cancel`` followed by
``tasks/get`` until the task reads ``cancelled``, for at most
:data:`CANCEL_WAIT_S` (§Task Cancellation: cancelling may be eventual).

Spec: SEP-2663 §Task Creation, §Task Polling, §Task Update Requests, §Task
Cancellation, §Task Status Notifications, §Tasks (the DetailedTask shapes);
SEP-2694 (draft) §Specification (the ``eventStreams`` sub-capability).
"""

from __future__ import annotations

import sys

import attrs
import trio

from presa_trio.client.answers import Answerer, input_requests
from presa_trio.client.connection import Connection
from presa_trio.client.errors import (
    EXIT_CANCELLED,
    EXIT_RESULT,
    EXIT_TOOL_ERROR,
    ProtocolFailure,
    RefusedForNow,
    RequestError,
    TaskFailed,
    UsageProblem,
)
from presa_trio.client.events import Lost, TaskEvents, status_of, status_snapshot
from presa_trio.client.output import Console
from presa_trio.client.transport import is_response, list_at, object_at
from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import (
    EVENT_STREAMS,
    TASK_NOTIFICATION,
    TASKS_EXTENSION,
    TERMINAL,
    Status,
)

#: Seconds to wait for ``cancelled`` after ``tasks/cancel`` was acknowledged.
CANCEL_WAIT_S = 5.0
#: Polling interval when the task names none, and the shortest one honoured.
DEFAULT_POLL_MS = 1000
SHORTEST_POLL_MS = 20


def carries_outcome(task: JSONObject) -> bool:
    """Whether a terminal snapshot holds the task's outcome, or it needs a ``tasks/get``.

    Only ``tasks/get`` must carry it: its DetailedTask has ``result`` when
    ``completed`` and ``error`` when ``failed``. A ``CreateTaskResult`` has
    neither, even for a task that is already ``completed`` when it is
    created, and a terminal ``notifications/tasks`` MAY inline them or not.
    A ``cancelled`` task has no outcome to carry.

    Spec: SEP-2663 §Tasks (the derived shapes ``tasks/get`` answers), §Task
    Creation, §Task Polling, §Task Status Notifications.
    """
    needed = {Status.COMPLETED: "result", Status.FAILED: "error"}.get(status_of(task))
    return needed is None or isinstance(task.get(needed), dict)


def ended_status(task: JSONObject, console: Console) -> int:
    """The exit status of a task that ended, carrying its outcome (:func:`carries_outcome`).

    ``completed`` is its result's: 1 for ``isError: true``, else 0; a
    ``cancelled`` task is 130, said on stderr; a ``failed`` one raises
    :class:`~presa_trio.client.errors.TaskFailed` with its JSON-RPC error (3).
    """
    status, task_id = status_of(task), task.get("taskId")
    if status is Status.COMPLETED:
        return EXIT_TOOL_ERROR if object_at(task, "result").get("isError") is True else EXIT_RESULT
    if status is Status.CANCELLED:
        console.note(f"task {task_id} was cancelled")
        return EXIT_CANCELLED
    raise TaskFailed(task)


def for_now(failure: ProtocolFailure) -> float | None:
    """The seconds after which a poll refused for now may be sent again (0 when the
    server names none); None for a failure that is not a refusal for now.

    A refusal for now is HTTP 429 or 503 (``Retry-After`` in seconds, RFC 9110
    §10.2.3; a date is not waited for) or a JSON-RPC error marked ``retryable``
    (presa's task store out of reach, spec-notes §31). The task goes on meanwhile:
    clients SHOULD poll until it ends (SEP-2663 §Task Polling), and servers MAY
    rate-limit polls.
    """
    if isinstance(failure, RefusedForNow):
        after = failure.retry_after or ""
        return float(after) if after.isdecimal() else 0.0
    if isinstance(failure, RequestError) and failure.retryable:
        return 0.0
    return None


@attrs.define
class Refusals:
    """Refusals for now (:func:`for_now`) in a row, with nothing gained between them:
    they end what they refuse once they have gone on for ``timeout_s`` (the
    connection's ``--timeout``)."""

    timeout_s: float
    # When the first refusal of the row came (trio's clock); None outside a row.
    since: float | None = None

    def wait(self, failure: ProtocolFailure) -> float:
        """The seconds the server asks to wait before the next try (0 when it names none).

        Raises ``failure`` when it is not a refusal for now, or when the row has
        gone on for ``timeout_s``.
        """
        later = for_now(failure)
        now = trio.current_time()
        if self.since is None:
            self.since = now
        if later is None or now - self.since >= self.timeout_s:
            raise failure
        return later

    def progressed(self) -> None:
        """Something was gained (a poll answered, an event received): the row ends."""
        self.since = None


def poll_seconds(task: JSONObject) -> float:
    interval = task.get("pollIntervalMs")
    if isinstance(interval, bool) or not isinstance(interval, int | float):
        interval = DEFAULT_POLL_MS
    # A JSON number may be an integer no float holds: waited as the longest float wait.
    return max(float(min(interval, sys.float_info.max)), SHORTEST_POLL_MS) / 1000


@attrs.define(eq=False)
class TaskFollower:
    """Follows one task at a time on one connection."""

    connection: Connection
    answerer: Answerer
    console: Console
    listen: bool = True
    #: The task being followed: what Ctrl-C cancels.
    task_id: str | None = None
    #: Whether the server serves ``tasks/stream``; None until ``server/discover`` said.
    streams: bool | None = None

    async def get(self, task_id: str) -> JSONObject:
        return await self.connection.request("tasks/get", {"taskId": task_id})

    async def follow(self, task: JSONObject) -> JSONObject:
        """Stay with ``task`` (a ``CreateTaskResult`` or a snapshot) until it ends.

        Failure policy of the nursery: a failure of the watcher (the server
        unreachable too long) or of the ticker ends the follow, and the
        command, with it; the loop cancels both once the task has ended.
        """
        task_id = task.get("taskId")
        if not isinstance(task_id, str):
            raise ProtocolFailure(f"{self.connection.where} created a task without a taskId")
        self.task_id = task_id
        started = trio.current_time()
        # Unbuffered: a watcher waits while the loop answers input, rather than piling up.
        send, snapshots = trio.open_memory_channel[JSONObject](0)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.watch, task, send)
            nursery.start_soon(self.console.tick, started)
            current = task
            while True:
                self.console.status(current, trio.current_time() - started)
                status = status_of(current)
                if status in TERMINAL:
                    break
                if status is Status.INPUT_REQUIRED:
                    if not isinstance(current.get("inputRequests"), dict):
                        current = await self.get(task_id)  # a status event's snapshot
                    await self.answer(task_id, current)
                current = await snapshots.receive()
            nursery.cancel_scope.cancel()
        self.console.end_status()
        return await self.outcome(task_id, current)

    async def outcome(self, task_id: str, ended: JSONObject) -> JSONObject:
        """The ended task with its outcome: ``ended`` if it carries it, else ``tasks/get``'s."""
        if carries_outcome(ended):
            return ended
        detailed = await self.get(task_id)
        if status_of(detailed) not in TERMINAL or not carries_outcome(detailed):
            raise ProtocolFailure(
                f"task {task_id} ended {ended.get('status')}, but tasks/get answers "
                f"{detailed.get('status')} without its outcome"
            )
        return detailed

    async def answer(self, task_id: str, task: JSONObject) -> None:
        requests = input_requests(task, self.connection.where)
        fresh = {k: v for k, v in requests.items() if k not in self.answerer.answered}
        if not fresh:
            return
        self.console.pause()
        try:
            answers = await self.answerer.answer_all(fresh)
        except UsageProblem as problem:
            later = self.connection.transport.later("task update", f"{task_id} --answer …")
            raise UsageProblem(f"{problem}; the task waits: {later}") from None
        await self.connection.request(
            "tasks/update", {"taskId": task_id, "inputResponses": answers}
        )
        self.console.note(f"answered {', '.join(answers)}")

    async def watch(self, task: JSONObject, send: trio.MemorySendChannel[JSONObject]) -> None:
        """Feed snapshots of the task: from its events or notifications where offered, else
        by polling."""
        task_id = str(task["taskId"])
        if self.listen and await self.offers_streams():
            await self.streamed(task, send)
        elif self.listen:
            await self.listened(task_id, send)
        refusals = Refusals(self.connection.timeout_s)
        wait = poll_seconds(task)
        while True:
            await trio.sleep(wait)
            try:
                polled = await self.get(task_id)
            except ProtocolFailure as failure:
                later = refusals.wait(failure)
                wait = min(max(poll_seconds(task), later), self.connection.timeout_s)
                self.console.note(f"{failure}; polling again in {wait:g} s")
                continue
            refusals.progressed()
            task = polled
            wait = poll_seconds(task)
            await send.send(task)

    async def listened(self, task_id: str, send: trio.MemorySendChannel[JSONObject]) -> None:
        """Pass on ``notifications/tasks`` for the task while the server sends them.

        Returns (to polling) when the server does not list the task in its
        acknowledgement, does not send one within the request timeout, refuses
        the listen, or ends the stream.
        """
        params = {"notifications": {"taskIds": [task_id]}}
        try:
            async with self.connection.open("subscriptions/listen", params) as (_, replies):
                ack = await self.connection.first_reply("subscriptions/listen", replies)
                agreed = list_at(object_at(object_at(ack, "params"), "notifications"), "taskIds")
                if is_response(ack) or task_id not in agreed:
                    return
                await send.send(await self.get(task_id))
                while not is_response(message := await replies.next()):
                    changed = object_at(message, "params")
                    if (
                        message.get("method") == TASK_NOTIFICATION
                        and changed.get("taskId") == task_id
                    ):
                        await send.send(changed)
        except ProtocolFailure:
            return

    async def offers_streams(self) -> bool:
        """Whether ``server/discover`` lists ``eventStreams`` in the Tasks extension's settings.

        Spec: SEP-2694 §Specification ("implementations MAY advertise this
        support as an eventStreams sub-capability of Tasks").
        """
        if self.streams is None:
            try:
                discovered = await self.connection.request("server/discover", {})
            except RequestError:
                discovered = {}
            extensions = object_at(object_at(discovered, "capabilities"), "extensions")
            self.streams = isinstance(
                object_at(extensions, TASKS_EXTENSION).get(EVENT_STREAMS), dict
            )
        return self.streams

    async def streamed(self, task: JSONObject, send: trio.MemorySendChannel[JSONObject]) -> None:
        """Pass on the task's status from its event stream, and its end once the log closes.

        The events are read by :class:`~presa_trio.client.events.TaskEvents`
        and turned into snapshots by :meth:`snapshots_from`, both in one
        nursery: an error of either ends both, and the follow with it; but a
        JSON-RPC error (a refused stream, -32601 or a limit) returns to the
        caller, which polls, and meets any lasting error there again.
        """
        task_id = str(task["taskId"])
        events = TaskEvents(self.connection, task_id, retry_s=poll_seconds(task))
        found, items = trio.open_memory_channel[JSONObject | Lost](0)
        ended: JSONObject | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.snapshots_from, task_id, items, send)
                with found:
                    ended = await events.follow(found.send)
        except* (RequestError, RefusedForNow):
            pass  # the stream refused, or refused for now: the caller polls
        if ended is not None:
            await send.send(ended)

    async def snapshots_from(
        self,
        task_id: str,
        items: trio.MemoryReceiveChannel[JSONObject | Lost],
        send: trio.MemorySendChannel[JSONObject],
    ) -> None:
        """A snapshot for each status event; after a loss, ``tasks/get``'s (it may have asked)."""
        async for item in items:
            if isinstance(item, Lost):
                await send.send(await self.get(task_id))
            elif (snapshot := status_snapshot(item)) is not None:
                await send.send(snapshot)

    async def cancel(self, task_id: str) -> JSONObject | None:
        """``tasks/cancel``, then the task once it reads terminal (None if it did not in time)."""
        await self.connection.request("tasks/cancel", {"taskId": task_id})
        with trio.move_on_after(CANCEL_WAIT_S):
            while status_of(task := await self.get(task_id)) not in TERMINAL:  # noqa: ASYNC110
                await trio.sleep(0.05)  # the server's state: only a poll can read it
            return task
        return None
