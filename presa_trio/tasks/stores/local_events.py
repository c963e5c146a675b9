"""The memory store's task event logs (rule 7 of :mod:`presa_trio.tasks.stores.base`).

:class:`MemoryEventLogs` keeps a list per task, its prefix cut as it grows
(most logs hold a few events, where a list is far smaller than a deque), and
tells this process's streams of each append through the store's
:class:`~presa_trio.tasks.stores.local.Announcer`. The memory store is one
Trio thread's: like every memory store method, an append checkpoints first
and then runs with no checkpoint between reading ``next_seq`` and storing
the events, so it is atomic by construction; a write's own events
(:meth:`MemoryEventLogs.append_now`) go in the same step as the write.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import attrs
import trio

from presa_trio.tasks.events import EventWindow, NewEvent, Retention, TaskEvent
from presa_trio.tasks.stores.base import StoredTask
from presa_trio.tasks.stores.local import Announcer, writer_holds


@attrs.define(eq=False, weakref_slot=False)
class Log:
    """One task's log in memory: the retained events and their stamps, the next seq, whether closed.

    The retained events are the last ``len(events)`` seqs before ``next_seq``
    (retention drops only a prefix), so none keeps its seq or its task id: a
    read builds each :class:`~presa_trio.tasks.events.TaskEvent` it returns.
    The events are shared, not copied: presa's own events for one status at
    one revision are one object for every task
    (:func:`~presa_trio.tasks.events.life_events`), so the log of a parked
    task holds little more than its stamps.
    """

    # Consecutive seqs up to next_seq - 1 (rule 7).
    events: list[NewEvent] = attrs.field(factory=list)
    # Each event's stamp at the same index, epoch ms: what maximum age counts
    # from. They never go back (rule 7).
    stamps: list[int] = attrs.field(factory=list)
    next_seq: int = 0
    # Epoch ms of the closing append; None while the task may still add events.
    closed_ms: int | None = None

    def window(
        self, task_id: str, after: int, limit: int, now_ms: int, retention: Retention
    ) -> EventWindow:
        """The events after ``after`` that ``retention`` keeps at ``now_ms``, pruned or not."""
        aged = self.first_kept(now_ms, retention)
        first = self.next_seq - len(self.events)
        # Seqs are consecutive: the first kept after the cursor is at this index.
        start = max(aged, after + 1 - first)
        picked = self.read(task_id, start, start + limit)
        return EventWindow.of_log(
            picked, first + aged, self.next_seq, self.closed_ms, now_ms, retention
        )

    def read(self, task_id: str, start: int, stop: int) -> list[TaskEvent]:
        """The events from index ``start`` to ``stop``, as the events of ``task_id`` they are."""
        seq = self.next_seq - len(self.events) + start
        picked = zip(self.events[start:stop], self.stamps[start:stop], strict=True)
        return [
            TaskEvent(seq + n, task_id, event.type, event.payload, stamp)
            for n, (event, stamp) in enumerate(picked)
        ]

    def append(
        self,
        task_id: str,
        events: Sequence[NewEvent],
        now_ms: int,
        retention: Retention,
        closing: bool,
    ) -> list[TaskEvent]:
        """Append after ``next_seq``, stamped no earlier than the last event; then trim."""
        stamp = max(now_ms, self.stamps[-1]) if self.stamps else now_ms
        start = len(self.events)
        for event in events:
            # One by one: a list grown by appends stays close to its length.
            self.events.append(event)
            self.stamps.append(stamp)
        self.next_seq += len(events)
        appended = self.read(task_id, start, len(self.events))
        if closing:
            self.closed_ms = stamp
        self.trim(stamp, retention)
        return appended

    def first_kept(self, now_ms: int, retention: Retention) -> int:
        """The index of the oldest event ``retention`` keeps at ``now_ms``: before it, a prefix.

        The count keeps the last ``max_events``; the age drops the oldest,
        whose stamps never go back, so both cut the log at one index (rule 7).
        """
        first = max(0, len(self.events) - retention.max_events)
        cutoff = retention.age_cutoff(now_ms)
        if cutoff is None:
            return first
        return bisect.bisect_right(self.stamps, cutoff, lo=first)

    def trim(self, now_ms: int, retention: Retention) -> None:
        """Drop what the count and the age allow no more: a prefix (rule 7)."""
        first = self.first_kept(now_ms, retention)
        del self.events[:first], self.stamps[:first]

    def clear(self) -> None:
        """Drop every event; the log's bounds stay."""
        self.events.clear()
        self.stamps.clear()


@attrs.define(eq=False, repr=False)
class MemoryEventLogs:
    """The memory store's task event logs (rule 7), by task id."""

    # The store's own tasks (the same dict): a log is kept only for a stored task.
    entries: dict[str, StoredTask]
    announcer: Announcer
    _logs: dict[str, Log] = attrs.field(factory=dict)

    def append_now(
        self,
        task_id: str,
        events: Sequence[NewEvent],
        now_ms: int,
        retention: Retention,
        *,
        closing: bool = False,
        fence: int | None = None,
    ) -> list[TaskEvent]:
        """An append, without a checkpoint: in the same step as the write it belongs to."""
        stored = self.entries.get(task_id)
        if stored is None or not writer_holds(stored, fence):
            return []
        log = self._logs.setdefault(task_id, Log())
        if log.closed_ms is not None:
            return []
        appended = log.append(task_id, events, now_ms, retention, closing)
        self.announcer.announce_append(task_id)
        return appended

    async def append_events(
        self,
        task_id: str,
        events: Sequence[NewEvent],
        now_ms: int,
        retention: Retention,
        *,
        closing: bool = False,
        fence: int | None = None,
    ) -> list[TaskEvent]:
        await trio.sleep(0)
        return self.append_now(task_id, events, now_ms, retention, closing=closing, fence=fence)

    async def read_events(
        self, task_id: str, after: int, limit: int, now_ms: int, retention: Retention
    ) -> EventWindow:
        await trio.sleep(0)
        log = self._logs.get(task_id)
        if log is None:
            return EventWindow.empty()
        return log.window(task_id, after, limit, now_ms, retention)

    async def prune_events(self, now_ms: int, retention: Retention) -> None:
        await trio.sleep(0)
        for task_id, log in list(self._logs.items()):
            if task_id not in self.entries:
                del self._logs[task_id]
                continue
            log.trim(now_ms, retention)
            if not retention.keeps_closed(log.closed_ms, now_ms):
                log.clear()
