"""Task event streams, the runtime part: appending, waking the streams, retention, stream bounds.

One :class:`TaskEventLog` serves a runner when task event streams are on
(``--task-events``; SEP-2694, a draft). It never holds an event: the log is
in the store (rule 7 of :mod:`presa_trio.tasks.stores.base`), and this
object is what connects the store to the workers and to the streams:

- **Appending.** :meth:`record` appends presa's own events for one stored
  write of a task (:func:`~presa_trio.tasks.events.life_events`), right
  after the runner's compare-and-set succeeded, from whichever process
  wrote; a terminal write's status event closes the log. :meth:`emit` is a
  tool's own event (``ctx.emit``). The worker never waits for a reader: an
  append is one store write, and readers read the store at their own pace.
- **Waking.** A stream that has read everything waits on its
  :class:`Follower`, one per stream, keyed by task id in :attr:`_followers`;
  :meth:`wake` (called by the store's append announcements, from any
  process, and for the task's own changes) wakes exactly the streams of
  that task, and :data:`~presa_trio.tasks.stores.base.RESYNC` wakes all of
  them, since appends may have been missed.
- **Retention.** :meth:`run` prunes every :attr:`prune_every` seconds what
  the :class:`~presa_trio.tasks.events.Retention` no longer keeps.
- **Bounds on streams** (SEP-2694 §tasks/stream, §Security Implications):
  :meth:`admit` refuses a second active stream of one task on one
  connection (-32602) and more than :attr:`max_streams_per_scope` streams
  of one caller (-32603, ``data.limit``).

Failure policy of :meth:`run`'s nursery: the append watch and the pruning
loop live as long as the server; a store that cannot be reached is logged
and tried again at the next round, and anything else ends the server, as
in the runner's loops. An append that fails because the store cannot be
reached is logged and dropped: the write it describes has committed, and
the task's status stays readable with ``tasks/get``; a terminal task whose
closing event was lost is closed by the first stream that finds it
(:meth:`close`), so no stream waits forever.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs
import trio

from presa_trio.tasks.events import NewEvent, Retention, TaskEvent, check_type, life_events
from presa_trio.tasks.events import status_event as status_event_of
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import RESYNC, Resync, StoreUnavailable, TaskStore
from presa_trio.wire.errors import InternalError, InvalidParams

log = logging.getLogger(__name__)


@attrs.define(eq=False)
class Follower:
    """One stream's wake-up: set by an append to its task, consumed by its next read.

    :meth:`reset` comes before each read of the log and :meth:`wait` after
    it, so an append announced while the read was in flight is not lost: it
    leaves the follower woken, and the wait returns at once.
    """

    task_id: str
    _woken: bool = False
    # The Event a waiting stream sleeps on; a new one per wait (they're cheap).
    _event: trio.Event | None = None
    # Set when the server stops: the stream ends normally, the client resumes elsewhere.
    stopping: bool = False

    def wake(self) -> None:
        self._woken = True
        if self._event is not None:
            self._event.set()

    def reset(self) -> None:
        self._woken = False

    async def wait(self) -> None:
        if self._woken:
            await trio.lowlevel.checkpoint()
            return
        self._event = trio.Event()
        try:
            await self._event.wait()
        finally:
            self._event = None


@attrs.define(eq=False, repr=False)
class TaskEventLog:
    """Task event streams for one runner; see the module docstring."""

    retention: Retention = attrs.field(factory=Retention)
    # Most events one read of the log brings, so the most one stream holds at once.
    page: int = 100
    # Most active ``tasks/stream`` requests of one access scope, over all connections.
    max_streams_per_scope: int = 16
    # How often retention is applied to every log, in seconds.
    prune_every: float = 60.0
    # task_id -> the followers of its streams in this process.
    _followers: dict[str, set[Follower]] = attrs.field(factory=dict)
    # (connection, task_id) of every active stream; streams per scope.
    _active: set[tuple[Hashable, str]] = attrs.field(factory=set)
    _per_scope: Counter[str] = attrs.field(factory=Counter)

    # --- appending ------------------------------------------------------------------

    async def record(self, store: TaskStore, before: Task | None, after: Task, now_ms: int) -> None:
        """Append presa's events for the write ``before`` -> ``after``; a terminal one closes.

        Spec: SEP-2694 §Relationship to Task Status Notifications (status
        events consistent with ``tasks/get``), §Event Types (prefixed only).
        """
        events = life_events(before, after)
        if events:
            await self._append(store, after.task_id, events, now_ms, closing=after.terminal)

    async def close(self, store: TaskStore, task: Task, now_ms: int) -> None:
        """Close the log of terminal ``task`` with its status event, unless it is closed already.

        Whoever wrote the terminal status closes the log right after
        (:meth:`record`); this is for a writer that stopped in between. The
        status of a terminal task never changes, so whoever closes writes
        the same event, and a closed log refuses the second.
        """
        await self._append(store, task.task_id, [status_event_of(task)], now_ms, closing=True)

    async def emit(
        self,
        store: TaskStore,
        task_id: str,
        event_type: str,
        payload: Mapping[str, Any],
        now_ms: int,
    ) -> TaskEvent | None:
        """A tool's own event: checked, then appended; None once the task's log is closed.

        A type without a vendor prefix, or a payload that is not a JSON
        object within the size limit, is a ``ValueError`` for the tool
        (SEP-2694 §Task Event, §Event Types).
        """
        new = NewEvent(check_type(event_type), self.retention.check_payload(dict(payload)))
        appended = await self._append(store, task_id, [new], now_ms, closing=False)
        return appended[0] if appended else None

    async def _append(
        self, store: TaskStore, task_id: str, events: list[NewEvent], now_ms: int, *, closing: bool
    ) -> list[TaskEvent]:
        try:
            return await store.append_events(
                task_id, events, now_ms, self.retention, closing=closing
            )
        except StoreUnavailable as error:
            log.warning("task %s: events not appended: %s", task_id, error)
            return []

    # --- waking streams ---------------------------------------------------------------

    def wake(self, about: str | Resync) -> None:
        """A task's log grew (or, with RESYNC, any may have): wake the streams that follow it."""
        if about is RESYNC:
            for followers in self._followers.values():
                for follower in followers:
                    follower.wake()
            return
        assert isinstance(about, str)
        for follower in self._followers.get(about, ()):
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

    # --- bounds on streams ------------------------------------------------------------

    @contextmanager
    def admit(self, scope: str, connection: Hashable, task_id: str) -> Iterator[None]:
        """Hold a stream's place: one per task per connection, a bounded number per scope.

        Spec: SEP-2694 §tasks/stream ("A receiver MUST allow at most one
        active tasks/stream request per task per connection … MUST return
        -32602"), §Security Implications (concurrent streams per client).
        A request whose edge names no connection is a connection of its own.
        """
        key = (object() if connection is None else connection, task_id)
        if key in self._active:
            raise InvalidParams("a tasks/stream for this task is already active on this connection")
        if self._per_scope[scope] >= self.max_streams_per_scope:
            raise InternalError(
                "Too many task event streams",
                {"retryable": True, "limit": "max_streams_per_scope"},
            )
        self._active.add(key)
        self._per_scope[scope] += 1
        try:
            yield
        finally:
            self._active.discard(key)
            self._per_scope[scope] -= 1
            if not self._per_scope[scope]:
                del self._per_scope[scope]

    # --- the server's lifetime ------------------------------------------------------

    async def run(
        self,
        store: TaskStore,
        wall_ms: Callable[[], int],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Follow every append in the store, and apply retention, until cancelled."""
        async with trio.open_nursery() as nursery:
            await nursery.start(store.watch_events, self.wake)
            task_status.started()
            while True:
                await trio.sleep(self.prune_every)
                try:
                    await store.prune_events(wall_ms(), self.retention)
                except StoreUnavailable as error:
                    log.warning("task events not pruned: %s", error)
