"""The in-process pieces shared by the memory and SQLite stores: announcements, rules 1, 3, 7.

A store that only this process writes announces its changes, and the
appends to its tasks' event logs, by calling its watchers directly
(:class:`Announcer`); :func:`check_write`, :func:`check_read` and
:func:`writer_holds` are the contract's rules 3, 1 and 7's fence (see
:mod:`presa_trio.tasks.stores.base`) for a store that holds its records
in this process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import attrs
import trio

from presa_trio.tasks.stores.base import (
    Conflict,
    Deliver,
    DeliverAppend,
    LeaseLost,
    StoredTask,
    StoreEvent,
    TaskExpired,
    TaskNotFound,
)

#: What a watcher is handed: a store event, or the id of a task whose log grew.
E = TypeVar("E")

log = logging.getLogger(__name__)


@attrs.define(eq=False, repr=False)
class Announcer:
    """Announcements for a store that only this process writes: direct calls.

    A store holds one and calls :meth:`announce` after each committed
    change, :meth:`announce_append` after each append to a task's log; its
    ``watch`` and ``watch_events`` are :meth:`watch` and :meth:`watch_events`.
    The PostgreSQL store holds one too, for this process's own writes, and
    adds LISTEN/NOTIFY for the others'.
    """

    _watchers: list[Deliver] = attrs.field(factory=list)
    _append_watchers: list[DeliverAppend] = attrs.field(factory=list)

    def announce(self, event: StoreEvent) -> None:
        for deliver in list(self._watchers):
            deliver_safely(deliver, event)

    def announce_append(self, task_id: str) -> None:
        for deliver in list(self._append_watchers):
            deliver_safely(deliver, task_id)

    async def watch(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Hand every announced change to ``deliver`` until cancelled; started at once."""
        await watch_until_cancelled(self._watchers, deliver, task_status)

    async def watch_events(
        self,
        deliver: DeliverAppend,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Hand the id of every task whose log grew to ``deliver`` until cancelled."""
        await watch_until_cancelled(self._append_watchers, deliver, task_status)


async def watch_until_cancelled(
    watchers: list[Callable[[E], None]],
    deliver: Callable[[E], None],
    task_status: trio.TaskStatus[None],
) -> None:
    """Keep ``deliver`` among ``watchers`` until cancelled."""
    watchers.append(deliver)
    try:
        task_status.started()
        await trio.sleep_forever()
    finally:
        watchers.remove(deliver)


def deliver_safely(deliver: Callable[[E], None], event: E) -> None:
    """The one failure policy for watchers, on every store: a watcher's failure is logged.

    It ends neither the store's call that announced the change (a write
    that committed stays committed, and its caller is told so) nor the
    announcements to the other watchers, nor the store's listening.
    """
    try:
        deliver(event)
    except Exception:
        log.exception("a watcher failed on %r", event)


def check_write(stored: StoredTask, expected_revision: int, fence: int | None) -> None:
    """Rule 3 for a write on ``stored``: :class:`LeaseLost` or :class:`Conflict`, else pass."""
    lease = stored.lease
    if fence is not None and (lease is None or lease.generation != fence):
        raise LeaseLost(f"task {stored.task_id}: generation {fence} no longer holds the lease")
    if stored.task.revision != expected_revision:
        raise Conflict(
            f"task {stored.task_id} is at revision {stored.task.revision}, not {expected_revision}"
        )


def writer_holds(stored: StoredTask, fence: int | None) -> bool:
    """Rule 7's fence: whether a worker of generation ``fence`` may append to ``stored``'s log.

    Only while the task is not terminal and its lease is still that
    generation; ``None`` (presa's own events of a write, or closing a
    log) is not fenced.
    """
    if fence is None:
        return True
    lease = stored.lease
    return not stored.task.terminal and lease is not None and lease.generation == fence


def check_read(stored: StoredTask | None, scope: str, now_ms: int) -> StoredTask:
    """Rule 1 and expiry for a ``get`` of ``stored`` (None: no such task) from ``scope``."""
    if stored is None or stored.scope != scope:
        raise TaskNotFound()
    if stored.task.expired(now_ms):
        raise TaskExpired()
    return stored
