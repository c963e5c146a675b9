"""The Tasks extension, ``io.modelcontextprotocol/tasks`` (SEP-2663), on the core's hooks.

- :mod:`~presa_trio.tasks.model` — the Task record and its pure transitions;
- :mod:`~presa_trio.tasks.stores.base` — where tasks live, scoped, compare-and-set;
- :mod:`~presa_trio.tasks.runner` — the workers: one nursery per task, its cancel scope, ``ask``;
- :mod:`~presa_trio.tasks.extension` — the wire: methods, policies, -32021, ``Mcp-Name``.

A walk-through of one task's life, request by request, is ``docs/tasks.md``.
"""

from presa_trio.tasks.extension import TASKS_EXTENSION, Policy, TasksExtension
from presa_trio.tasks.runner import Clock, Limits, TaskRunner, ask
from presa_trio.tasks.stores.base import TaskStore
from presa_trio.tasks.stores.memory import MemoryStore

__all__ = [
    "TASKS_EXTENSION",
    "Clock",
    "Limits",
    "MemoryStore",
    "Policy",
    "TaskRunner",
    "TaskStore",
    "TasksExtension",
    "ask",
]
