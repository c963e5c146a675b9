"""The memory store's task event logs (rule 7 of :mod:`presa_trio.tasks.stores.base`).

:class:`MemoryEventLogs` keeps a deque per task, trimmed as it grows, and
tells this process's streams of each append through the store's
:class:`~presa_trio.tasks.stores.local.Announcer`. The memory store is one
Trio thread's: like every memory store method, an append checkpoints first
and then runs with no checkpoint between reading ``next_seq`` and storing
the events, so it is atomic by construction; a write's own events
(:meth:`MemoryEventLogs.append_now`) go in the same step as the write.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import attrs
import trio

from presa_trio.tasks.events import EventWindow, NewEvent, Retention, TaskEvent
from presa_trio.tasks.stores.base import StoredTask
from presa_trio.tasks.stores.local import Announcer, writer_holds


@attrs.define(eq=False)
class Log:
    """One task's log in memory: the retained events, the next seq, whether it closed."""

    # Consecutive seqs, their stamps never going back (rule 7).
    events: deque[TaskEvent] = attrs.field(factory=deque)
    next_seq: int = 0
    # Epoch ms of the closing append; None while the task may still add events.
    closed_ms: int | None = None

    def window(self, after: int, limit: int, now_ms: int, retention: Retention) -> EventWindow:
        """The events after ``after`` that ``retention`` keeps at ``now_ms``, pruned or not."""
        cutoff = retention.age_cutoff(now_ms)
        aged = 0  # how many of the oldest events are past the maximum age: a prefix
        if cutoff is not None:
            while aged < len(self.events) and self.events[aged].created_ms <= cutoff:
                aged += 1
        earliest = self.events[aged].seq if aged < len(self.events) else self.next_seq
        # Seqs are consecutive: the first kept after the cursor is at this index.
        start = aged + max(0, after + 1 - earliest)
        picked = [self.events[i] for i in range(start, min(len(self.events), start + limit))]
        return EventWindow.of_log(
            picked, earliest, self.next_seq, self.closed_ms, now_ms, retention
        )

    def append(
        self,
        task_id: str,
        events: Sequence[NewEvent],
        now_ms: int,
        retention: Retention,
        closing: bool,
    ) -> list[TaskEvent]:
        """Append after ``next_seq``, stamped no earlier than the last event; then trim."""
        stamp = max(now_ms, self.events[-1].created_ms) if self.events else now_ms
        appended = [
            TaskEvent(self.next_seq + n, task_id, new.type, new.payload, stamp)
            for n, new in enumerate(events)
        ]
        self.events.extend(appended)
        self.next_seq += len(appended)
        if closing:
            self.closed_ms = stamp
        self.trim(stamp, retention)
        return appended

    def trim(self, now_ms: int, retention: Retention) -> None:
        """Drop what the count and the age allow no more: a prefix, from the left (rule 7)."""
        while len(self.events) > retention.max_events:
            self.events.popleft()
        cutoff = retention.age_cutoff(now_ms)
        if cutoff is not None:
            while self.events and self.events[0].created_ms <= cutoff:
                self.events.popleft()


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
        return log.window(after, limit, now_ms, retention)

    async def prune_events(self, now_ms: int, retention: Retention) -> None:
        await trio.sleep(0)
        for task_id, log in list(self._logs.items()):
            if task_id not in self.entries:
                del self._logs[task_id]
                continue
            log.trim(now_ms, retention)
            if not retention.keeps_closed(log.closed_ms, now_ms):
                log.events.clear()
