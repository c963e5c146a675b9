"""``tasks/stream``: a task's events, replayed after a cursor, then followed live (SEP-2694, draft).

Served only with task event streams on (``--task-events``); without them
the method has no row and is -32601, as the proposal says of a receiver
that does not support it (SEP-2694 §Specification).

The request stays open while events flow on its own response stream as
``notifications/tasks/event`` (over HTTP: its SSE stream), and ends with
``{}`` once the task's terminal status event was delivered. Its order of
checks: the Tasks declaration (-32021), ``taskId`` and ``after`` (-32602),
then the task exactly as ``tasks/get`` looks it up (unknown, expired and
another caller's tasks are -32602 alike: SEP-2694 §Security Implications),
then the stream bounds (:meth:`~presa_trio.tasks.event_log.TaskEventLog.admit`),
then the cursor against what the log retains (:func:`~presa_trio.tasks.events.first_cursor`).

Theory of operation: the stream never holds more than one read of the log
(:attr:`~presa_trio.tasks.event_log.TaskEventLog.page` events), delivered
in ``seq`` order, each write awaited, so a slow reader is slowed by its
own transport and nothing else; the worker appends to the store and never
waits for it. When a read finds nothing new, the stream waits on its
follower, woken by appends (from any process, through the store's
announcements) and by the task's own changes (through the server's change
bus, so a terminal task whose closing event was never written is closed
here, and the stream ends; it ends as well if the store will not take that
event, and ``tasks/get`` has the outcome). A task deleted at its TTL wakes
its streams too, and they end. A reader so slow that retention dropped an
event before it was delivered gets ``events_gone``, never a gap. The
server's shutdown ends the stream normally, and the client resumes with
``after`` on another process. Cancelling the request (the client closing
the stream, or ``notifications/cancelled`` on stdio) cancels this handler
and nothing else: the task runs on (SEP-2694 §tasks/stream).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from presa_trio.server.context import RequestContext
from presa_trio.server.open_streams import stream_client
from presa_trio.server.subscriptions import ChangeBus, Subscription
from presa_trio.tasks.event_log import Follower, TaskEventLog
from presa_trio.tasks.events import (
    Deliver,
    End,
    EventWindow,
    first_cursor,
    next_step,
    read_cursor,
)
from presa_trio.tasks.model import Task
from presa_trio.tasks.runner import TaskRunner
from presa_trio.tasks.stores.base import StoreError, TaskNotFound
from presa_trio.wire.envelope import notification
from presa_trio.wire.errors import McpError
from presa_trio.wire.tasks import EVENT_NOTIFICATION


class StreamedTasks(Protocol):
    """What a stream needs of the Tasks extension that serves it."""

    @property
    def events(self) -> TaskEventLog | None: ...

    @property
    def runner(self) -> TaskRunner: ...

    @property
    def scope_of(self) -> Callable[[RequestContext], str]: ...

    async def scoped_task(self, ctx: RequestContext, scope: str, task_id: str) -> Task:
        """The task as ``tasks/get`` looks it up: scope first, then the scopes it needs."""


async def stream_events(
    extension: StreamedTasks,
    changes: ChangeBus,
    ctx: RequestContext,
    task_id: str,
    params: dict[str, Any],
) -> dict[str, Any]:
    """Stream the events of ``task_id`` after ``params.after``, live, then answer ``{}``.

    The extension has checked the declaration and ``taskId``. The task is
    looked up exactly as ``tasks/get`` looks it up, so a task the caller may
    not see is answered as there (SEP-2694 §Security Implications: "the same
    authorization checks … that they apply to tasks/get"), the scopes the
    task needs included; and, like a listen stream, the stream ends with
    ``{}`` once its access token lapses (spec-notes §49). The task's own
    changes come off the server's bus: theirs is the only topic about
    ``(scope, task_id)`` (:meth:`~presa_trio.tasks.extension.TasksExtension.publish`).

    Failure policy of the stream's nursery: its helpers (the wake-ups, the
    token's watch) only end the stream, normally; what the delivery raises
    ends the request and the helpers with it: a spec error or a store's as
    itself, anything else as -32603.
    """
    events, runner = extension.events, extension.runner
    assert events is not None
    after = read_cursor(params)
    scope = extension.scope_of(ctx)
    await extension.scoped_task(ctx, scope, task_id)
    topic = (scope, task_id)
    with (
        events.admit(stream_client(ctx, scope), ctx.connection, task_id),
        events.following(task_id) as follower,
        changes.subscribe(lambda change: change.about == topic) as subscription,
    ):
        start = -1 if after is None else after
        window, stamp = await events.read(runner.store, task_id, start, runner.clock.wall_ms())
        cursor = first_cursor(task_id, after, window)
        ended: McpError | StoreError | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wake_on_changes, events, subscription, follower)
            if ctx.access.lapses:
                nursery.start_soon(stop_when_lapsed, ctx.access.lapsed, follower)
            try:
                await follow(runner, events, ctx, follower, scope, cursor, window, stamp)
            except (McpError, StoreError) as error:
                # Raised below, after the nursery: as the request's own error
                # (events_gone, the store's), not inside an exception group.
                ended = error
            nursery.cancel_scope.cancel(reason="stream over")
        if ended is not None:
            raise ended
    return {}


async def stop_when_lapsed(lapsed: Callable[[], Awaitable[None]], follower: Follower) -> None:
    """End the stream normally once its access token stops being valid (spec-notes §49)."""
    await lapsed()
    follower.stop()


async def wake_on_changes(events: TaskEventLog, changes: Subscription, follower: Follower) -> None:
    """Every change of the task wakes its streams; the bus closing (shutdown) ends this one."""
    async for _ in changes:
        events.wake(follower.task_id)
    follower.stop()


async def follow(
    runner: TaskRunner,
    events: TaskEventLog,
    ctx: RequestContext,
    follower: Follower,
    scope: str,
    cursor: int,
    window: EventWindow,
    stamp: int,
) -> None:
    """Deliver from ``window`` on, reading the log again after each page or wake-up.

    A stop (the token lapsed, the server stops) is heeded before each event,
    not only between pages: a slow reader's page takes as long as its
    transport does, and a client whose token lapsed may read no more of the
    task (SEP-2694 §Security Implications); the client resumes after the last
    event it got.

    Spec: SEP-2694 §Resume and Replay Semantics, §Task Event ("Servers MUST
    deliver events in sequence order").
    """
    task_id = follower.task_id
    closing_tried = False
    while True:
        step = next_step(task_id, cursor, window)
        if isinstance(step, End):
            return
        if isinstance(step, Deliver):
            for event in step.events:
                if follower.stopping:
                    return  # the token lapsed, or the server stops: not one more event
                await ctx.send(notification(EVENT_NOTIFICATION, event.to_wire()))
                cursor = event.seq
        elif not window.closed:
            try:
                task = await runner.get(scope, task_id)
            except TaskNotFound:
                return  # expired meanwhile: nothing more will come
            if not task.terminal:
                await events.wait(follower, stamp)
            elif closing_tried:
                # The store did not take the closing event (read-only, say):
                # nothing more will come, and tasks/get has the outcome.
                return
            else:
                await events.close(runner.store, task, runner.clock.wall_ms())
                closing_tried = True
        if follower.stopping:
            return
        window, stamp = await events.read(runner.store, task_id, cursor, runner.clock.wall_ms())
