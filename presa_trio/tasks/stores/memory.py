"""``memory:``: the default store, a dict in this process (lost on restart, by design)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import attrs

from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import (
    Capacity,
    CapacityExceeded,
    Changed,
    Counts,
    Deleted,
    Lease,
    StoredTask,
    TaskNotFound,
)
from presa_trio.tasks.stores.local import LocalAnnouncer, check_read, check_write


@attrs.define(eq=False, repr=False)
class MemoryStore(LocalAnnouncer):
    """The default store: a dict in this process. Lost on restart, by design.

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
    # scope -> how many stored / non-terminal tasks it has. Kept as tasks
    # change, so the capacity check on every creation costs O(1), not a scan.
    _stored: Counter[str] = attrs.field(factory=Counter)
    _active: Counter[str] = attrs.field(factory=Counter)

    def _count(self, stored: StoredTask, delta: int) -> None:
        self._stored[stored.scope] += delta
        if not stored.task.terminal:
            self._active[stored.scope] += delta

    def _counts(self, scope: str | None) -> Counts:
        if scope is None:
            return Counts(sum(self._active.values()), sum(self._stored.values()))
        return Counts(self._active[scope], self._stored[scope])

    def _put(self, stored: StoredTask) -> None:
        self.entries[stored.task_id] = stored
        self.announce(Changed(stored))

    async def create(self, stored: StoredTask, capacity: Capacity, now_ms: int) -> None:
        if stored.task_id in self.entries:
            raise ValueError(f"task id collision: {stored.task_id}")
        if capacity.refusal(self._counts(stored.scope), self._counts(None)) is not None:
            # Expired tasks do not count: delete them, then look again.
            self._expire(now_ms)
            limit = capacity.refusal(self._counts(stored.scope), self._counts(None))
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
        return check_read(self.entries.get(task_id), scope, now_ms)

    async def read(self, task_id: str) -> StoredTask | None:
        return self.entries.get(task_id)

    async def compare_and_set(
        self, scope: str, task: Task, expected_revision: int, *, fence: int | None = None
    ) -> None:
        stored = self._entry(scope, task.task_id)
        check_write(stored, expected_revision, fence)
        if not task.terminal:
            self._put(StoredTask(scope, task, stored.work, stored.lease))
        else:
            if not stored.task.terminal:
                self._active[scope] -= 1
            # Ended: its work and lease are let go of (rule 4).
            self._put(StoredTask(scope, task))

    async def renew(
        self, owner: str, held: Mapping[str, int], expires_ms: int, now_ms: int
    ) -> set[str]:
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
        self, owner: str, now_ms: int, expires_ms: int, limit: int
    ) -> list[StoredTask]:
        claimed: list[StoredTask] = []
        for stored in list(self.entries.values()):
            if len(claimed) >= limit:
                break
            if stored.claimable(now_ms):
                generation = 1 if stored.lease is None else stored.lease.generation + 1
                stored = attrs.evolve(stored, lease=Lease(owner, generation, expires_ms))
                self._put(stored)
                claimed.append(stored)
        return claimed

    async def release(self, owner: str) -> None:
        for task_id, stored in list(self.entries.items()):
            if stored.lease is not None and stored.lease.owner == owner:
                released = attrs.evolve(stored.lease, expires_ms=0)
                self.entries[task_id] = attrs.evolve(stored, lease=released)

    def _expire(self, now_ms: int) -> list[str]:
        gone = [task_id for task_id, s in self.entries.items() if s.task.expired(now_ms)]
        for task_id in gone:
            stored = self.entries.pop(task_id)
            self._count(stored, -1)
            self.announce(Deleted(stored.scope, task_id))
        return gone

    async def expire(self, now_ms: int) -> list[str]:
        return self._expire(now_ms)

    async def counts(self, scope: str | None = None) -> Counts:
        return self._counts(scope)
