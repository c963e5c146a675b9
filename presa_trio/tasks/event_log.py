"""Task event streams, the runtime part: appending, waking the streams, retention, stream bounds.

One :class:`TaskEventLog` serves a runner when task event streams are on
(``--task-events``; SEP-2694, a draft). It never holds an event: the log is
in the store (rule 7 of :mod:`presa_trio.tasks.stores.base`), and this
object is what connects the store to the workers and to the streams:

- **Appending.** :meth:`started` appends a task's status as its worker's
  run begins (before anything the job writes), and every later stored
  write of the task carries presa's own events for it
  (:meth:`of_write`, :func:`~presa_trio.tasks.events.life_events`) into
  its compare-and-set, whichever process writes: the log's order is the
  order of the writes, and a terminal write's status event closes the log
  in the same transaction. :meth:`emit` is a tool's own event
  (``ctx.emit``). A worker's appends are fenced by its lease generation
  (rule 7 of :mod:`presa_trio.tasks.stores.base`): once its task is
  terminal, or run by another generation, they are refused, so nothing
  lands after ``cancelled``. The worker never waits for a reader: an
  append is one store write, and readers read the store at their own pace.
- **Waking.** A stream that has read everything waits on its
  :class:`Follower`, one per stream, keyed by task id in :attr:`_followers`;
  :meth:`wake` (called by the store's append announcements, from any
  process, and for the task's own changes) wakes exactly the streams of
  that task, and :data:`~presa_trio.tasks.stores.base.RESYNC` wakes all of
  them, since appends may have been missed. Streams of one task at one
  cursor share their read of the log (:meth:`read`): readers cost the
  store one read per append, however many follow the task here.
- **Retention.** Every read sees the log as the
  :class:`~presa_trio.tasks.events.Retention` keeps it at that moment, on
  the store's clock; :meth:`prune` frees, every :attr:`prune_every`
  seconds, the space of what it no longer keeps.
- **Bounds on streams** (SEP-2694 §tasks/stream, §Security Implications):
  :meth:`admit` refuses a second active stream of one task on one
  connection (-32602), more than :attr:`max_streams_per_client` streams of
  one client (HTTP 429) and more than :attr:`max_streams` in this process
  (HTTP 503), both -32603 with ``data.reason: "too_many_streams"`` and
  ``Retry-After``, so one client never locks the others out.

Failure policy: the append watch (:meth:`follow_appends`) and the pruning
loop (:meth:`prune`) are two of the runner's housekeeping loops, each kept
running by :func:`~presa_trio.tasks.housekeeping.keep_running`: a failure
is logged and the loop starts again. A write's own events are never lost
apart from it: they commit with it, in the compare-and-set's transaction.
A run's first status event or a closing event the store does not take
(unreachable, refused, a defect, anything it did not classify) is logged
and dropped: the task's status stays readable with ``tasks/get``, and a
terminal task whose log is still open (ended by a process without task
event streams) is closed by the first stream that finds it
(:meth:`close`), so no stream waits forever. A tool's own event
(:meth:`emit`) is never dropped unseen: the store's failure goes back to
its writer, which waits out an unavailable store and then tells the tool
(:meth:`~presa_trio.tasks.writes.StoreWriter.emit`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs
import trio

from presa_trio.server.context import Connection
from presa_trio.server.faults import report_fault
from presa_trio.server.open_streams import TOO_MANY_STREAMS, ClientStreams
from presa_trio.tasks.events import (
    EventWindow,
    LogAppend,
    NewEvent,
    Retention,
    TaskEvent,
    check_type,
    life_events,
)
from presa_trio.tasks.events import status_event as status_event_of
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import (
    DEFAULT_STORE_TIMEOUT_S,
    RESYNC,
    Resync,
    StoreUnavailable,
    TaskStore,
)
from presa_trio.wire.errors import InvalidParams, ServerOverCapacity

log = logging.getLogger(__name__)


@attrs.define(eq=False)
class Follower:
    """One stream of a task in this process: what it waits on, and whether to stop."""

    task_id: str
    # The Event the stream sleeps on while it waits; a new one per wait (they're cheap).
    event: trio.Event | None = None
    # Set when the server stops: the stream ends normally, the client resumes elsewhere.
    stopping: bool = False

    def wake(self) -> None:
        if self.event is not None:
            self.event.set()

    def stop(self) -> None:
        self.stopping = True
        self.wake()


@attrs.define(eq=False)
class SharedRead:
    """One read of a log in flight, which other streams at the same cursor may share."""

    # The task's announcement count when the read began: it sees every append announced before.
    stamp: int
    done: trio.Event = attrs.field(factory=trio.Event)
    window: EventWindow | None = None


@attrs.define(eq=False, repr=False)
class TaskEventLog:
    """Task event streams for one runner; see the module docstring."""

    retention: Retention = attrs.field(factory=Retention)
    # Most events one read of the log brings, so the most one stream holds at once.
    page: int = 100
    # Most active ``tasks/stream`` requests of one client in this process
    # (``--task-events-max-streams-per-client``; see :meth:`admit`).
    max_streams_per_client: int = 16
    # Most active ``tasks/stream`` requests in this process (``--task-events-max-streams``).
    max_streams: int = 256
    # How long a tool's emit waits out an unavailable store before it fails,
    # in seconds: the store timeout (``--store-timeout``).
    emit_wait: float = DEFAULT_STORE_TIMEOUT_S
    # How often retention is applied to every log, in seconds.
    prune_every: float = 60.0
    # task_id -> the followers of its streams in this process, and how many
    # appends (wake-ups) were announced for it while it had any.
    _followers: dict[str, set[Follower]] = attrs.field(factory=dict)
    _announced: Counter[str] = attrs.field(factory=Counter)
    # (task_id, cursor) -> the read of the log in flight from there.
    _reads: dict[tuple[str, int], SharedRead] = attrs.field(factory=dict)
    # (connection, task_id) of every active stream; streams per client.
    _active: set[tuple[Hashable, str]] = attrs.field(factory=set)
    _clients: ClientStreams = attrs.field(
        factory=lambda: ClientStreams("task event streams", "max_streams_per_client")
    )

    # --- appending ------------------------------------------------------------------

    def of_write(self, before: Task, after: Task, now_ms: int) -> LogAppend | None:
        """presa's events for the write ``before`` -> ``after``, to append with it; None: none.

        The compare-and-set appends them in its own transaction, so they
        are in the log exactly when the write is stored, in the order of
        the writes; a terminal write's status event closes the log.
        Spec: SEP-2694 §Relationship to Task Status Notifications (status
        events consistent with ``tasks/get``), §Event Types (prefixed only).
        """
        events = life_events(before, after)
        if not events:
            return None
        return LogAppend(events, now_ms, self.retention, closing=after.terminal)

    async def started(self, store: TaskStore, task: Task, now_ms: int, *, fence: int) -> None:
        """A worker's first step: the task's status as its run begins.

        Appended by the worker itself, under its lease generation, so it
        comes before every event the job's own writes append; a recovered
        task's new run appends one too.
        """
        events = [status_event_of(task)]
        await self._append(store, task.task_id, events, now_ms, closing=False, fence=fence)

    async def close(self, store: TaskStore, task: Task, now_ms: int) -> None:
        """Close the log of terminal ``task`` with its status event, unless it is closed already.

        The terminal write closes the log itself (:meth:`of_write`); this is
        for a task that ended without one (on a process without task event
        streams). The status of a terminal task never changes, so whoever
        closes writes the same event, and a closed log refuses the second.
        """
        await self._append(store, task.task_id, [status_event_of(task)], now_ms, closing=True)

    def tool_event(self, event_type: str, payload: Mapping[str, Any]) -> NewEvent:
        """A tool's own event, checked before anything is stored.

        A type without a vendor prefix is a ``ValueError`` for the tool, a
        payload that is not a JSON object a ``TypeError``, one over the size
        limit a ``ValueError`` (SEP-2694 §Task Event, §Event Types).
        """
        return NewEvent(check_type(event_type), self.retention.check_payload(payload))

    async def emit(
        self, store: TaskStore, task_id: str, event: NewEvent, now_ms: int, *, fence: int
    ) -> TaskEvent | None:
        """Append a tool's own event (:meth:`tool_event`); None once the task is terminal.

        ``fence`` is the worker's lease generation: the store refuses the
        event once the task is terminal or run by another generation, so
        nothing lands between ``cancelled`` and the closing event. Unlike
        presa's own events, a store failure is raised to the caller, never
        dropped (see the module docstring).
        """
        appended = await store.append_events(task_id, [event], now_ms, self.retention, fence=fence)
        return appended[0] if appended else None

    async def _append(
        self,
        store: TaskStore,
        task_id: str,
        events: list[NewEvent],
        now_ms: int,
        *,
        closing: bool,
        fence: int | None = None,
    ) -> list[TaskEvent]:
        try:
            return await store.append_events(
                task_id, events, now_ms, self.retention, closing=closing, fence=fence
            )
        except StoreUnavailable as error:
            log.warning("task %s: events not appended: %s", task_id, error)
        except Exception as error:  # refused, a defect, or what no store classified
            report_fault(log, "task %s: the store did not take its events: %s", task_id, error)
        return []

    # --- waking streams ---------------------------------------------------------------

    def wake(self, about: str | Resync) -> None:
        """A task's log grew (or, with RESYNC, any may have): wake the streams that follow it.

        Each wake-up counts: a stream waits until its task's count has moved
        past the count its last read began at, so an append announced while
        it was reading is never slept through.
        """
        for task_id in self._followers if about is RESYNC else (about,):
            assert isinstance(task_id, str)
            followers = self._followers.get(task_id)
            if followers:
                self._announced[task_id] += 1
                for follower in followers:
                    follower.wake()

    @contextmanager
    def following(self, task_id: str) -> Iterator[Follower]:
        """A follower of ``task_id``'s log for the duration of the block."""
        follower = Follower(task_id)
        self._followers.setdefault(task_id, set()).add(follower)
        try:
            yield follower
        finally:
            followers = self._followers[task_id]
            followers.discard(follower)
            if not followers:
                del self._followers[task_id]
                self._announced.pop(task_id, None)

    async def read(
        self, store: TaskStore, task_id: str, after: int, now_ms: int
    ) -> tuple[EventWindow, int]:
        """The log after ``after`` as retention keeps it now, and the announcement count it
        is current for.

        Streams of one task at one cursor share a read: ten live readers of
        a task cost one read per append, not ten. A stream joins a read in
        flight only if it began after every announcement the stream has
        seen; else it starts its own.
        """
        stamp = self._announced[task_id]
        key = (task_id, after)
        shared = self._reads.get(key)
        if shared is not None and shared.stamp >= stamp:
            await shared.done.wait()
            if shared.window is not None:
                return shared.window, shared.stamp
        shared = self._reads[key] = SharedRead(stamp)
        try:
            shared.window = await store.read_events(
                task_id, after, self.page, now_ms, self.retention
            )
        finally:
            if self._reads.get(key) is shared:
                del self._reads[key]
            shared.done.set()
        return shared.window, stamp

    async def wait(self, follower: Follower, stamp: int) -> None:
        """Until an append is announced after ``stamp`` (see :meth:`read`), or the stream stops."""
        while self._announced[follower.task_id] <= stamp and not follower.stopping:
            follower.event = trio.Event()
            try:
                await follower.event.wait()
            finally:
                follower.event = None
        await trio.sleep(0)

    # --- bounds on streams ------------------------------------------------------------

    @contextmanager
    def admit(
        self, client: Hashable, connection: Connection | None, task_id: str
    ) -> Iterator[None]:
        """Hold a stream's place: one per task per connection, a bounded number per client.

        ``client`` is whom the stream counts against: with authorization the
        caller's principal, without it the connection's peer (the client's
        address), so one client holding its streams leaves the others
        theirs (:func:`~presa_trio.server.open_streams.stream_client`). Its own
        limit is checked first (HTTP 429), then this process's (503); both
        are retryable, go out with ``Retry-After``, and name the limit.

        Spec: SEP-2694 §tasks/stream ("A receiver MUST allow at most one
        active tasks/stream request per task per connection … MUST return
        -32602"), §Security Implications (concurrent streams per client).
        A request whose edge names no connection is a connection of its own.
        """
        key = (object() if connection is None else connection, task_id)
        if key in self._active:
            raise InvalidParams("a tasks/stream for this task is already active on this connection")
        with self._clients.admit(client, self.max_streams_per_client):
            if len(self._active) >= self.max_streams:
                raise ServerOverCapacity(
                    f"The server holds all the task event streams it can ({self.max_streams}): "
                    "retry later",
                    "max_streams",
                    reason=TOO_MANY_STREAMS,
                )
            self._active.add(key)
            try:
                yield
            finally:
                self._active.discard(key)

    # --- the runner's housekeeping loops --------------------------------------------

    async def follow_appends(
        self, store: TaskStore, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Wake the streams of every task whose log grows, in any process, until cancelled.

        Started once listening; then every stream reads its log again:
        appends made before (a watch that starts again after a failure)
        were announced to nobody. The store's watch runs in this run's
        nursery: its failure ends this run, which its keeper starts again
        (:func:`~presa_trio.tasks.housekeeping.keep_running`).
        """
        async with trio.open_nursery() as nursery:
            await nursery.start(store.watch_events, self.wake)
            task_status.started()
            self.wake(RESYNC)

    async def prune(
        self,
        store: TaskStore,
        wall_ms: Callable[[], int],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Every :attr:`prune_every` seconds, apply the retention to every log."""
        task_status.started()
        while True:
            await trio.sleep(self.prune_every)
            await store.prune_events(wall_ms(), self.retention)
