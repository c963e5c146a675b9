"""Where tasks live between requests: the store protocol and the in-memory default.

Tasks are the only state presa keeps across requests, so the store is the
seam for everything beyond one process (a SQLite or PostgreSQL store would
implement :class:`TaskStore`). Three rules hold for every store:

1. **Access is scoped.** Every read and write names the access scope the
   caller was authorised into (a principal; with auth off, one anonymous
   scope). A task of another scope is indistinguishable from an unknown one:
   same exception, same message (SEP-2663 §Security Implications; T-65).
2. **Writes are compare-and-set.** :meth:`TaskStore.compare_and_set` replaces
   a task only if the stored revision is the one the writer read; otherwise
   :class:`Conflict`, and nothing changes. Two writers racing on one task
   (a worker completing, a client cancelling) can never both win.
3. **Creation is visible at once.** After :meth:`TaskStore.create` returns, a
   ``get`` in the same scope finds the task (SEP-2663 §Task Creation: no
   ``CreateTaskResult`` before a ``tasks/get`` would resolve; T-23).

The protocol is synchronous on purpose: with the in-memory store a
read-modify-write never yields to the scheduler, so a transition is atomic
within a Trio run. A networked store would make these methods ``async``;
the compare-and-set is what keeps it correct then.

Expiry: a task whose TTL has elapsed answers "expired" to its own scope
(and "not found" to every other) until the reaper deletes it
(SEP-2663 §Protocol Errors; tasks ref §5.2; D-09).

Spec: SEP-2663 §Security Implications, §Task Creation, §Protocol Errors;
tasks ref §4.5 step 6.
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

import attrs

from presa_trio.tasks.model import Task
from presa_trio.wire.errors import InvalidParams


class TaskNotFound(InvalidParams):
    """Unknown, deleted, or another scope's task: all look the same (-32602)."""

    default_message = "Unknown or inaccessible taskId"


class TaskExpired(TaskNotFound):
    """The task's TTL has elapsed; only its own scope is told so (-32602, T-60)."""

    default_message = "The task has expired: its ttlMs elapsed"


class Conflict(Exception):
    """A compare-and-set lost: the task changed since the writer read it."""


class TaskStore(Protocol):
    """What the runner needs from a store; see the module rules."""

    def create(self, scope: str, task: Task) -> None:
        """Store a new task under ``scope``; visible to ``get`` on return."""

    def get(self, scope: str, task_id: str, now: float) -> Task:
        """The task, or :class:`TaskNotFound` / :class:`TaskExpired`."""

    def compare_and_set(self, scope: str, task: Task, expected_revision: int) -> None:
        """Replace the task if its stored revision is ``expected_revision``, else Conflict."""

    def expire(self, now: float) -> list[str]:
        """Delete every task whose TTL has elapsed; return their ids."""

    def active(self, scope: str | None = None) -> int:
        """How many non-terminal tasks there are, in ``scope`` or overall."""


@attrs.define(eq=False)
class Entry:
    """A stored task and the scope that owns it."""

    scope: str
    task: Task


@attrs.define(eq=False, repr=False)
class MemoryStore:
    """The default store: a dict in this process. Lost on restart, by design.

    Like every service object here (server, dispatcher, runner), it keeps
    ``object``'s short repr: Trio names tasks and cancel reasons with reprs,
    and a repr walking every stored task made each new task cost time in
    proportion to the tasks already stored.
    """

    # task_id -> its entry; ids are unique across scopes (they are random).
    entries: dict[str, Entry] = attrs.field(factory=dict)
    # scope -> how many of its stored tasks are not terminal. Kept as tasks
    # change, so the capacity check on every creation costs O(1), not a scan.
    _active: Counter[str] = attrs.field(factory=Counter)

    def _count(self, scope: str, task: Task, delta: int) -> None:
        if not task.terminal:
            self._active[scope] += delta

    def create(self, scope: str, task: Task) -> None:
        if task.task_id in self.entries:
            raise ValueError(f"task id collision: {task.task_id}")
        self.entries[task.task_id] = Entry(scope, task)
        self._count(scope, task, +1)

    def _entry(self, scope: str, task_id: str) -> Entry:
        entry = self.entries.get(task_id)
        if entry is None or entry.scope != scope:
            raise TaskNotFound()
        return entry

    def get(self, scope: str, task_id: str, now: float) -> Task:
        task = self._entry(scope, task_id).task
        if task.expired(now):
            raise TaskExpired()
        return task

    def compare_and_set(self, scope: str, task: Task, expected_revision: int) -> None:
        entry = self._entry(scope, task.task_id)
        if entry.task.revision != expected_revision:
            raise Conflict(
                f"task {task.task_id} is at revision {entry.task.revision}, not {expected_revision}"
            )
        self._count(scope, entry.task, -1)
        self._count(scope, task, +1)
        entry.task = task

    def expire(self, now: float) -> list[str]:
        gone = [task_id for task_id, e in self.entries.items() if e.task.expired(now)]
        for task_id in gone:
            entry = self.entries.pop(task_id)
            self._count(entry.scope, entry.task, -1)
        return gone

    def active(self, scope: str | None = None) -> int:
        if scope is None:
            return sum(self._active.values())
        return self._active[scope]
