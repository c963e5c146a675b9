"""A task's events from the client's side: ``tasks/stream``, resumed after every cut.

SEP-2694 (a draft, served by presa with ``--task-events``) gives a task an
append-only log of events, each with a ``seq`` counted from 0, and one
request that replays what the server keeps after a cursor and then follows
what comes next. :class:`TaskEvents` reads that log for one task and hands
each event on once, in ``seq`` order, until the log closes, however often
the stream is cut:

- **the cursor** is the ``seq`` of the last event handed on, moved only
  once the handler returned, and a resumed stream sends it as ``after``;
  an event at or before it is one the server replayed again and is dropped
  (§Resume and Replay Semantics: clients de-duplicate by ``(taskId, seq)``);
- **a cut** (the connection broke, the stream ended before its response)
  is resumed at once from the cursor when it had brought anything, else
  after the retry interval; a server that cannot be reached at all is tried
  until it has been unreachable for the connection's ``--timeout``;
- **loss is never silent**: ``events_gone`` (-32010) is handed on as
  :class:`Lost` with its ``earliestSeq``, and the stream goes on from there
  (``after: earliestSeq - 1``, as the proposal suggests); a ``seq`` that
  skips ahead without it is handed on as :class:`Lost` too;
- **the end**: the log closes with presa's terminal status event
  (:data:`~presa_trio.wire.tasks.STATUS_EVENT`). A stream that ends with
  ``{}`` before it may have been closed early (a server's shutdown, a lapsed
  token: "Receivers MAY close a stream before a task reaches a terminal
  state"), so ``tasks/get`` decides: a task that reads terminal gets one
  more stream, which delivers whatever is left and ends, and that is the end.

Every exchange is :meth:`Connection.request
<presa_trio.client.connection.Connection.request>` with no time limit, so a
``tasks/stream`` is signed in, retried and explained as any request is.

Spec: SEP-2694 (draft) §tasks/stream, §notifications/tasks/event, §Resume
and Replay Semantics, §events_gone error.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import attrs
import trio

from presa_trio.client.connection import Connection
from presa_trio.client.errors import BrokenOff, ProtocolFailure, RequestError, Unreachable
from presa_trio.client.transport import object_at
from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import (
    EVENT_NOTIFICATION,
    EVENTS_GONE,
    STATUS_EVENT,
    TASK_STREAM,
    TERMINAL,
    Status,
)


@attrs.frozen
class Lost:
    """Events ``first`` to ``last`` of a task that the client will never see."""

    task_id: str
    first: int
    last: int
    # The oldest event the server keeps, when it said so (events_gone, or a
    # stream that started there); None when it skipped them without a word.
    earliest_seq: int | None

    def line(self) -> str:
        """What was lost, as one line for a person."""
        if self.first == self.last:
            which = f"event {self.first} of task {self.task_id} is"
        else:
            which = f"events {self.first}–{self.last} of task {self.task_id} are"
        if self.earliest_seq is None:
            return f"{which} missing: the server skipped them without events_gone"
        return (
            f"{which} gone: the server keeps the task's events from seq "
            f"{self.earliest_seq} on; going on from there"
        )


#: What a follower hands each event (the ``params`` of ``notifications/tasks/event``)
#: or loss to; it returns once the item is taken, and the stream is read on after that.
Handler = Callable[[JSONObject | Lost], Awaitable[None]]


def status_of(task: JSONObject) -> Status:
    """The snapshot's status; a status SEP-2663 does not define is a protocol failure."""
    try:
        return Status(task.get("status"))
    except ValueError:
        raise ProtocolFailure(
            f"task {task.get('taskId')} has no known status: {task.get('status')!r}"
        ) from None


def status_snapshot(event: JSONObject) -> JSONObject | None:
    """The task as presa's status event shows it (its status and message), else None.

    A status event says the status ``tasks/get`` shows from its revision on
    (SEP-2694 §Relationship to Task Status Notifications), but not the input
    requests or the outcome: a snapshot made of it is completed by
    ``tasks/get`` where those are needed.
    """
    payload = object_at(event, "payload")
    status = payload.get("status")
    known = isinstance(status, str) and status in {s.value for s in Status}
    if event.get("type") != STATUS_EVENT or not known:
        return None
    snapshot: JSONObject = {"taskId": event.get("taskId"), "status": status}
    if isinstance(payload.get("statusMessage"), str):
        snapshot["statusMessage"] = payload["statusMessage"]
    return snapshot


def is_terminal(task: JSONObject) -> bool:
    """Whether the task has ended; a status SEP-2663 does not define is a protocol failure."""
    return status_of(task) in TERMINAL


def earliest_of(error: RequestError, task_id: str, first: int) -> int:
    """``events_gone``'s ``data.earliestSeq``: a ``seq`` past ``first``, or a protocol failure."""
    data = error.data if isinstance(error.data, dict) else {}
    earliest = data.get("earliestSeq")
    if isinstance(earliest, bool) or not isinstance(earliest, int) or earliest <= first:
        raise ProtocolFailure(
            f"tasks/stream of task {task_id}: events_gone with no earliestSeq past "
            f"{first}: {error.data!r}"
        )
    return earliest


@attrs.define(eq=False)
class TaskEvents:
    """One task's event log, followed across every cut until it closes."""

    connection: Connection
    task_id: str
    #: The ``seq`` of the last event handed on: what a resumed stream sends as ``after``.
    #: None until the first, and then the stream starts at the earliest event kept.
    cursor: int | None = None
    #: Seconds between tries after a try that brought nothing (the task's poll interval).
    retry_s: float = 1.0
    #: Whether ``tasks/get`` read the task terminal before the stream now open began.
    ended: bool = False
    #: The closing status event, once handed on: nothing follows it.
    closing: JSONObject | None = None
    #: The task as ``tasks/get`` last read it here, if it did.
    last_read: JSONObject | None = None

    async def follow(self, handle: Handler) -> JSONObject:
        """Hand every event on to ``handle``, once each and in order, until the log closes.

        Returns the task as its log ended: the closing event's snapshot, or
        the ``tasks/get`` that read it terminal. A JSON-RPC error other than
        ``events_gone`` (an unknown task, a refused stream) is raised, and so
        is a failure to reach the server for longer than its ``--timeout``.
        """
        unreachable_since: float | None = None
        while True:
            before = self.cursor
            try:
                if not await self.stream(handle):
                    continue  # events_gone: on from the earliest kept, at once
                unreachable_since = None
                if self.closing is not None or self.ended:
                    break
                self.last_read = await self.connection.request(
                    "tasks/get", {"taskId": self.task_id}
                )
                self.ended = is_terminal(self.last_read)
            except Unreachable:
                now = trio.current_time()
                if unreachable_since is None:
                    unreachable_since = now
                elif now - unreachable_since >= self.connection.timeout_s:
                    raise
            except BrokenOff:
                unreachable_since = None
            if self.closing is not None:
                break  # cut after the closing event: nothing is left to read
            if self.cursor == before and not self.ended:
                await trio.sleep(self.retry_s)
        if self.closing is not None:
            ended = status_snapshot(self.closing)
            assert ended is not None
            return ended
        assert self.last_read is not None
        return self.last_read

    async def stream(self, handle: Handler) -> bool:
        """One ``tasks/stream`` after the cursor: True when it ended ``{}``, False on events_gone.

        Spec: SEP-2694 §events_gone error ("call tasks/stream with after set
        to earliestSeq - 1 to resume from the earliest retained event").
        """
        params: JSONObject = {"taskId": self.task_id}
        if self.cursor is not None:
            params["after"] = self.cursor
        try:
            await self.connection.request(
                TASK_STREAM,
                params,
                on_notification=partial(self.receive, handle),
                timeout_s=math.inf,
            )
        except RequestError as error:
            if error.code != EVENTS_GONE:
                raise
            first = 0 if self.cursor is None else self.cursor + 1
            earliest = earliest_of(error, self.task_id, first)
            await handle(Lost(self.task_id, first, earliest - 1, earliest))
            self.cursor = earliest - 1
            return False
        return True

    async def receive(self, handle: Handler, message: JSONObject) -> None:
        """One message of the stream: an event of this task past the cursor is handed on.

        Spec: SEP-2694 §Task Event ("each subsequent event for that task MUST
        increment by exactly 1"), §Resume and Replay Semantics ("Clients MUST
        tolerate duplicate delivery after reconnect and SHOULD de-duplicate
        events by (taskId, seq)"; "If after is omitted, the receiver MUST
        start at the earliest event it still retains").
        """
        event = object_at(message, "params")
        if message.get("method") != EVENT_NOTIFICATION or event.get("taskId") != self.task_id:
            return
        seq: Any = event.get("seq")
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise ProtocolFailure(
                f"{self.connection.where} sent an event of task {self.task_id} "
                f"without a valid seq: {seq!r}"
            )
        expected = 0 if self.cursor is None else self.cursor + 1
        if seq < expected or self.closing is not None:
            return
        if seq > expected:
            kept = seq if self.cursor is None else None  # a stream from the earliest kept
            await handle(Lost(self.task_id, expected, seq - 1, kept))
        await handle(event)
        self.cursor = seq
        closed = status_snapshot(event)
        if closed is not None and is_terminal(closed):
            self.closing = event
