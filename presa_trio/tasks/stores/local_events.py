"""Task event logs held in this process: the memory store's, and the in-process announcements.

:class:`AppendBulletin` tells this process's streams that a task's log grew
(rule 7 of :mod:`presa_trio.tasks.stores.base`): a direct call after the
append, as :class:`~presa_trio.tasks.stores.local.LocalAnnouncer`, which it
extends, does for task changes. The memory and SQLite stores need nothing
more (one process writes them); the PostgreSQL store adds LISTEN/NOTIFY.
:class:`MemoryEventLogs` is the memory store's log: a deque per task, trimmed
as it grows. The memory store is one Trio thread's: like every memory
store method, an append checkpoints first and then runs with no checkpoint
between reading ``next_seq`` and storing the events, so it is atomic by
construction.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs
import trio

from presa_trio.tasks.events import EventWindow, NewEvent, Retention, TaskEvent
from presa_trio.tasks.stores.base import DeliverAppend
from presa_trio.tasks.stores.local import LocalAnnouncer

if TYPE_CHECKING:
    from presa_trio.tasks.stores.base import StoredTask


@attrs.define(eq=False, repr=False)
class AppendBulletin(LocalAnnouncer):
    """A local announcer that also tells, in this process, when a log grows."""

    _append_watchers: list[DeliverAppend] = attrs.field(factory=list)

    def announce_append(self, task_id: str) -> None:
        for deliver in list(self._append_watchers):
            deliver(task_id)

    async def watch_events(
        self,
        deliver: DeliverAppend,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        self._append_watchers.append(deliver)
        try:
            task_status.started()
            await trio.sleep_forever()
        finally:
            self._append_watchers.remove(deliver)


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
class MemoryEventLogs(AppendBulletin):
    """The memory store's task event logs (rule 7), by task id."""

    _logs: dict[str, Log] = attrs.field(factory=dict)

    if TYPE_CHECKING:
        # The memory store's tasks, which this mixin's store class holds.
        entries: dict[str, StoredTask]

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
        self.announce_append(task_id)
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
