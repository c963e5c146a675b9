"""The Tasks extension, ``io.modelcontextprotocol/tasks`` (SEP-2663), on the core's hooks.

- :mod:`~presa_trio.tasks.model` — the Task record and its pure transitions;
- :mod:`~presa_trio.tasks.stores.base` — where tasks live, scoped, compare-and-set;
- :mod:`~presa_trio.tasks.runner` — the facade, the supervision tree and its failure policy;
- :mod:`~presa_trio.tasks.supervisor` — the workers: one nursery per task, its cancel scope;
- :mod:`~presa_trio.tasks.worker` — a worker: its stop handle, its Events per input key, its moves;
- :mod:`~presa_trio.tasks.context` — the job's context, the creating request detached (``ctx.ask``);
- :mod:`~presa_trio.tasks.writes` — moves by compare-and-set; a worker's writes and their policy;
- :mod:`~presa_trio.tasks.housekeeping` — the view kept true: watch, resync, leases, recovery,
  each loop under one keeper;
- :mod:`~presa_trio.tasks.reactions` — the pure table: an announcement -> actions on a worker;
- :mod:`~presa_trio.tasks.extension` — the wire: methods, policies, -32021, ``Mcp-Name``;
- :mod:`~presa_trio.tasks.events`, :mod:`~presa_trio.tasks.event_log`,
  :mod:`~presa_trio.tasks.stream` — task event streams (SEP-2694, a draft, ``--task-events``).

A walk-through of one task's life, request by request, is ``docs/tasks.md``.
"""

from presa_trio.tasks.context import ask
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.events import Retention
from presa_trio.tasks.extension import Policy, TasksExtension
from presa_trio.tasks.runner import Clock, Limits, TaskRunner
from presa_trio.tasks.stores.base import TaskStore
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.wire.tasks import TASKS_EXTENSION

__all__ = [
    "TASKS_EXTENSION",
    "Clock",
    "Limits",
    "MemoryStore",
    "Policy",
    "Retention",
    "TaskEventLog",
    "TaskRunner",
    "TaskStore",
    "TasksExtension",
    "ask",
]
