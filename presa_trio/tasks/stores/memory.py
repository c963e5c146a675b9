"""``memory:``: the default store, a dict in this process (lost on restart, by design)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import attrs
import trio

from presa_trio.tasks.events import EventWindow, LogAppend, NewEvent, Retention, TaskEvent
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import (
    CapacityExceeded,
    Changed,
    Counts,
    Deleted,
    Deliver,
    DeliverAppend,
    Lease,
    Limits,
    StoredTask,
    TaskIdCollision,
    TaskNotFound,
)
from presa_trio.tasks.stores.local import Announcer, check_read, check_write
from presa_trio.tasks.stores.local_events import MemoryEventLogs


@attrs.define(eq=False, repr=False)
class MemoryStore:
    """The default store: a dict in this process. Lost on restart, by design.

    Every method checkpoints first (``await trio.sleep(0)``), as a store
    that does I/O does: a caller cancelled before the call changes nothing,
    and the same code behaves alike on every store. It has no engine, so
    nothing it does can fail as a store (:class:`~presa_trio.tasks.stores.base.StoreError`).

    It holds its announcer (:class:`~presa_trio.tasks.stores.local.Announcer`)
    and its task event logs (rule 7,
    :class:`~presa_trio.tasks.stores.local_events.MemoryEventLogs`).

    A task that ends is kept without its work description and lease (rule
    4): it stays until its TTL elapses, thousands of them in memory at once,
    and needs neither to answer ``tasks/get``.

    Like every service object here (server, dispatcher, runner), it keeps
    ``object``'s short repr: Trio names tasks and cancel reasons with reprs,
    and a repr walking every stored task made each new task cost time in
    proportion to the tasks already stored.
    """

    # task_id -> the stored task; ids are unique across scopes (they are random).
    entries: dict[str, StoredTask] = attrs.field(factory=dict)
    # scope -> how many stored / non-terminal tasks it has, for the scopes
    # that have any (:func:`add`). Kept as tasks change, so the capacity
    # check on every creation costs no scan of the tasks.
    _stored: Counter[str] = attrs.field(factory=Counter)
    _active: Counter[str] = attrs.field(factory=Counter)
    announcer: Announcer = attrs.field(factory=Announcer)
    event_logs: MemoryEventLogs = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.event_logs = MemoryEventLogs(self.entries, self.announcer)

    async def watch(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        await self.announcer.watch(deliver, task_status=task_status)

    async def watch_events(
        self,
        deliver: DeliverAppend,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        await self.announcer.watch_events(deliver, task_status=task_status)

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
        return await self.event_logs.append_events(
            task_id, events, now_ms, retention, closing=closing, fence=fence
        )

    async def read_events(
        self, task_id: str, after: int, limit: int, now_ms: int, retention: Retention
    ) -> EventWindow:
        return await self.event_logs.read_events(task_id, after, limit, now_ms, retention)

    async def prune_events(self, now_ms: int, retention: Retention) -> None:
        await self.event_logs.prune_events(now_ms, retention)

    def _count(self, stored: StoredTask, delta: int) -> None:
        add(self._stored, stored.scope, delta)
        if not stored.task.terminal:
            add(self._active, stored.scope, delta)

    def _counts(self, scope: str | None) -> Counts:
        if scope is None:
            return Counts(sum(self._active.values()), sum(self._stored.values()))
        return Counts(self._active[scope], self._stored[scope])

    def _put(self, stored: StoredTask, *, moved: bool = True) -> None:
        self.entries[stored.task_id] = stored
        self.announcer.announce(Changed(stored, moved))

    async def create(self, stored: StoredTask, limits: Limits, now_ms: int) -> None:
        await trio.sleep(0)
        if stored.task_id in self.entries:
            raise TaskIdCollision(f"task id collision: {stored.task_id}")
        if limits.refusal(self._counts(stored.scope), self._counts(None)) is not None:
            # Expired tasks do not count: delete them, then look again.
            self._expire(now_ms)
            limit = limits.refusal(self._counts(stored.scope), self._counts(None))
            if limit is not None:
                raise CapacityExceeded(limit)
        self._count(stored, +1)
        self._put(stored)

    def _entry(self, scope: str, task_id: str) -> StoredTask:
        stored = self.entries.get(task_id)
        if stored is None or stored.scope != scope:
            raise TaskNotFound()
        return stored

    async def get(self, scope: str, task_id: str, now_ms: int) -> StoredTask:
        await trio.sleep(0)
        return check_read(self.entries.get(task_id), scope, now_ms)

    async def read(self, task_id: str) -> StoredTask | None:
        await trio.sleep(0)
        return self.entries.get(task_id)

    async def compare_and_set(
        self,
        scope: str,
        task: Task,
        expected_revision: int,
        *,
        fence: int | None = None,
        events: LogAppend | None = None,
    ) -> None:
        await trio.sleep(0)
        stored = self._entry(scope, task.task_id)
        check_write(stored, expected_revision, fence)
        if not task.terminal:
            self._put(StoredTask(scope, task, stored.work, stored.lease))
        else:
            if not stored.task.terminal:
                add(self._active, scope, -1)
            # Ended: its work and lease are let go of (rule 4).
            self._put(StoredTask(scope, task))
        if events is not None:
            self.event_logs.append_now(
                task.task_id, events.events, events.now_ms, events.retention, closing=events.closing
            )

    async def renew(
        self, owner: str, held: Mapping[str, int], expires_ms: int, now_ms: int
    ) -> set[str]:
        await trio.sleep(0)
        lost = set()
        for task_id, generation in held.items():
            stored = self.entries.get(task_id)
            lease = None if stored is None else stored.lease
            if (
                stored is None
                or lease is None
                or (lease.owner, lease.generation)
                != (
                    owner,
                    generation,
                )
            ):
                lost.add(task_id)
                continue
            self.entries[task_id] = attrs.evolve(
                stored, lease=attrs.evolve(lease, expires_ms=expires_ms)
            )
        return lost

    async def claim_expired(
        self, owner: str, now_ms: int, expires_ms: int, limit: int, *, released_only: bool = False
    ) -> list[StoredTask]:
        await trio.sleep(0)
        claimed: list[StoredTask] = []
        for stored in list(self.entries.values()):
            if len(claimed) >= limit:
                break
            if stored.claimable(now_ms, released_only=released_only):
                generation = 1 if stored.lease is None else stored.lease.generation + 1
                stored = attrs.evolve(stored, lease=Lease(owner, generation, expires_ms))
                self._put(stored, moved=False)
                claimed.append(stored)
        return claimed

    async def release(self, owner: str) -> None:
        await trio.sleep(0)
        for task_id, stored in list(self.entries.items()):
            if stored.lease is not None and stored.lease.owner == owner:
                released = attrs.evolve(stored.lease, expires_ms=0)
                self.entries[task_id] = attrs.evolve(stored, lease=released)

    def _expire(self, now_ms: int) -> list[str]:
        gone = [task_id for task_id, s in self.entries.items() if s.task.expired(now_ms)]
        for task_id in gone:
            stored = self.entries.pop(task_id)
            self._count(stored, -1)
            self.announcer.announce(Deleted(stored.scope, task_id))
        return gone

    async def expire(self, now_ms: int) -> list[str]:
        await trio.sleep(0)
        return self._expire(now_ms)

    async def counts(self, scope: str | None = None) -> Counts:
        await trio.sleep(0)
        return self._counts(scope)


def add(counts: Counter[str], scope: str, delta: int) -> None:
    """Change ``scope``'s count by ``delta``; at zero the scope is let go of, so the
    counters hold the scopes with tasks, not every caller that ever made one."""
    left = counts[scope] + delta
    if left:
        counts[scope] = left
    else:
        del counts[scope]
