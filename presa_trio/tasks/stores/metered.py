"""A store whose every call is timed and its outcome told, for ``--metrics``.

:class:`MeteredStore` wraps any :class:`~presa_trio.tasks.stores.base.TaskStore`
and passes each call through unchanged, telling ``observe`` the call's name,
how long it took, and how it ended: ``ok`` (a result, or the protocol's own answer: a
:class:`~presa_trio.tasks.stores.base.TaskNotFound`, a
:class:`~presa_trio.tasks.stores.base.Conflict`…: the store worked), ``cancelled``, or the
class of a store failure (``StoreUnavailable``, ``StoreRefused``,
``StoreDefect``: the classification every store makes, rule of
:class:`~presa_trio.tasks.stores.base.StoreError`; a store's own subclass of
one is told as that class: :func:`failure_class`), or ``unclassified`` for
anything else (a defect of the store). The two watches run for
the server's lifetime and are passed through untimed.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

import attrs
import trio

from presa_trio.tasks.events import EventWindow, LogAppend, NewEvent, Retention, TaskEvent
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import (
    PROTOCOL_ERRORS,
    Counts,
    Deliver,
    DeliverAppend,
    Limits,
    StoreDefect,
    StoredTask,
    StoreError,
    StoreRefused,
    StoreUnavailable,
    TaskStore,
)

T = TypeVar("T")

#: How a call ended that raised what no store's classification names.
UNCLASSIFIED = "unclassified"

#: Told of each call: its name, its seconds, and how it ended.
CallObserver = Callable[[str, float, str], None]
#: The classes a store's failure is told by: every store's classification.
FAILURE_CLASSES = (StoreUnavailable, StoreRefused, StoreDefect)


def failure_class(error: StoreError) -> str:
    """The class of ``error`` among :data:`FAILURE_CLASSES`, by name; ``unclassified``
    for none. A subclass a store raises (PostgreSQL's ``SchemaMismatch`` is a
    :class:`StoreUnavailable`) is told as its class, so the names told are these
    few, whatever the store."""
    for failure in FAILURE_CLASSES:
        if isinstance(error, failure):
            return failure.__name__
    return UNCLASSIFIED


@attrs.define(eq=False)
class MeteredStore:
    """``store``, each of its calls told to ``observe``; see the module docstring."""

    store: TaskStore
    observe: CallObserver

    async def _timed(self, call: str, pending: Awaitable[T]) -> T:
        started = time.perf_counter()
        ended = "cancelled"
        try:
            result = await pending
        except PROTOCOL_ERRORS:
            ended = "ok"  # the store answered: not found, a conflict, a lease lost…
            raise
        except StoreError as error:
            ended = failure_class(error)
            raise
        except Exception:
            ended = UNCLASSIFIED
            raise
        else:
            ended = "ok"
            return result
        finally:
            self.observe(call, time.perf_counter() - started, ended)

    async def create(self, stored: StoredTask, limits: Limits, now_ms: int) -> None:
        await self._timed("create", self.store.create(stored, limits, now_ms))

    async def get(self, scope: str, task_id: str, now_ms: int) -> StoredTask:
        return await self._timed("get", self.store.get(scope, task_id, now_ms))

    async def read(self, task_id: str) -> StoredTask | None:
        return await self._timed("read", self.store.read(task_id))

    async def compare_and_set(
        self,
        scope: str,
        task: Task,
        expected_revision: int,
        *,
        fence: int | None = None,
        events: LogAppend | None = None,
    ) -> None:
        write = self.store.compare_and_set(
            scope, task, expected_revision, fence=fence, events=events
        )
        await self._timed("compare_and_set", write)

    async def renew(
        self, owner: str, held: Mapping[str, int], expires_ms: int, now_ms: int
    ) -> set[str]:
        return await self._timed("renew", self.store.renew(owner, held, expires_ms, now_ms))

    async def claim_expired(
        self, owner: str, now_ms: int, expires_ms: int, limit: int, *, released_only: bool = False
    ) -> list[StoredTask]:
        claim = self.store.claim_expired(
            owner, now_ms, expires_ms, limit, released_only=released_only
        )
        return await self._timed("claim_expired", claim)

    async def release(self, owner: str) -> None:
        await self._timed("release", self.store.release(owner))

    async def expire(self, now_ms: int) -> list[str]:
        return await self._timed("expire", self.store.expire(now_ms))

    async def counts(self, scope: str | None = None) -> Counts:
        return await self._timed("counts", self.store.counts(scope))

    async def watch(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        await self.store.watch(deliver, task_status=task_status)

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
        append = self.store.append_events(
            task_id, events, now_ms, retention, closing=closing, fence=fence
        )
        return await self._timed("append_events", append)

    async def read_events(
        self, task_id: str, after: int, limit: int, now_ms: int, retention: Retention
    ) -> EventWindow:
        read = self.store.read_events(task_id, after, limit, now_ms, retention)
        return await self._timed("read_events", read)

    async def prune_events(self, now_ms: int, retention: Retention) -> None:
        await self._timed("prune_events", self.store.prune_events(now_ms, retention))

    async def watch_events(
        self,
        deliver: DeliverAppend,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        await self.store.watch_events(deliver, task_status=task_status)
