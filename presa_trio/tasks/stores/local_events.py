"""The memory store's task event logs (rule 7 of :mod:`presa_trio.tasks.stores.base`).

:class:`MemoryEventLogs` keeps a deque per task, trimmed as it grows, and
tells this process's streams of each append through the store's
:class:`~presa_trio.tasks.stores.local.Announcer`. The memory store is one
Trio thread's: like every memory store method, an append checkpoints first
and then runs with no checkpoint between reading ``next_seq`` and storing
the events, so it is atomic by construction.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import attrs
import trio

from presa_trio.tasks.events import EventWindow, NewEvent, Retention, TaskEvent
from presa_trio.tasks.stores.base import StoredTask
from presa_trio.tasks.stores.local import Announcer


@attrs.define(eq=False)
class Log:
    """One task's log in memory: the retained events, the next seq, whether it closed."""

    events: deque[TaskEvent] = attrs.field(factory=deque)
    next_seq: int = 0
    # Epoch ms of the closing append; None while the task may still add events.
    closed_ms: int | None = None

    def window(self, after: int, limit: int) -> EventWindow:
        earliest = self.events[0].seq if self.events else self.next_seq
        # Seqs are consecutive from ``earliest``: the first after the cursor is at this index.
        start = max(0, after + 1 - earliest)
        picked = [self.events[i] for i in range(start, min(len(self.events), start + limit))]
        return EventWindow(picked, earliest, self.next_seq, self.closed_ms is not None)

    def trim(self, now_ms: int, retention: Retention) -> None:
        """Drop what the count and the age allow no more (rule 7)."""
        while len(self.events) > retention.max_events:
            self.events.popleft()
        if retention.max_age_ms is not None:
            oldest = now_ms - retention.max_age_ms
            while self.events and self.events[0].created_ms <= oldest:
                self.events.popleft()


@attrs.define(eq=False, repr=False)
class MemoryEventLogs:
    """The memory store's task event logs (rule 7), by task id."""

    # The store's own tasks (the same dict): a log is kept only for a stored task.
    entries: dict[str, StoredTask]
    announcer: Announcer
    _logs: dict[str, Log] = attrs.field(factory=dict)

    async def append_events(
        self,
        task_id: str,
        events: Sequence[NewEvent],
        now_ms: int,
        retention: Retention,
        *,
        closing: bool = False,
    ) -> list[TaskEvent]:
        await trio.sleep(0)
        if task_id not in self.entries:
            return []
        log = self._logs.setdefault(task_id, Log())
        if log.closed_ms is not None:
            return []
        appended = [
            TaskEvent(log.next_seq + n, task_id, new.type, new.payload, now_ms)
            for n, new in enumerate(events)
        ]
        log.events.extend(appended)
        log.next_seq += len(appended)
        if closing:
            log.closed_ms = now_ms
        log.trim(now_ms, retention)
        self.announcer.announce_append(task_id)
        return appended

    async def read_events(self, task_id: str, after: int, limit: int) -> EventWindow:
        await trio.sleep(0)
        log = self._logs.get(task_id)
        return EventWindow.empty() if log is None else log.window(after, limit)

    async def prune_events(self, now_ms: int, retention: Retention) -> None:
        await trio.sleep(0)
        for task_id, log in list(self._logs.items()):
            if task_id not in self.entries:
                del self._logs[task_id]
                continue
            log.trim(now_ms, retention)
            ended, kept = log.closed_ms, retention.terminal_ms
            if ended is not None and kept is not None and ended <= now_ms - kept:
                log.events.clear()
