"""presa for the Tasks figures: the fixture as ``presa-trio serve`` serves it, plus two things.

1. **Room for 10,000 parked tasks.** The fixture's task runner keeps the
   default limits (100 active tasks per scope); this server raises them, through
   the runner's public ``limits``, so the bench can park 10,000 tasks. Nothing
   else differs: same fixture, same :func:`~presa_trio.http.serving.serve_http`.
2. **A statistics side port.** Each connection to ``127.0.0.1:<stats port>``
   gets one JSON line, ``{"trioTasks": n, "runtimeTasks": n, "allocatedBlocks": n}``,
   and is closed. ``trioTasks`` counts every live task in the Trio run (this
   reading's own handler and every open HTTP connection's included);
   ``runtimeTasks`` only the Tasks runtime's (the extension's lifetime task and
   everything below it: the runner, its loops, every worker and the children
   of its tools), which no client connection changes; ``allocatedBlocks`` is
   :func:`sys.getallocatedblocks` after a full garbage collection. Together they
   show whether work that should have ended left anything behind, which RSS
   alone cannot (CPython keeps freed memory for reuse).

3. **Probes for tasks across processes** (bench/postgres.py). Two task
   tools record, by task id, the wall-clock moment their worker saw
   something: ``bench_park`` when the answer to its input request woke it,
   ``bench_sleep`` when its cancel scope stopped it. The side port's line
   carries them as ``woken`` and ``stopped`` (epoch seconds), so the bench
   can time "update on B → worker on A woken" and "cancel on B → worker on
   A stopped" on one host's clock.
4. **A task that does nothing** (``bench_return``): created, run and
   completed, two store writes in all. The creation rate is measured on it,
   so the figure is what creating a task costs; the demo's ``slow_compute``
   with 0 seconds also writes five status messages, and the bench reports
   its rate beside.

Why a bench-only process rather than a flag on ``presa-trio serve``: the
numbers need only to be read, never served, so nothing is added to the
product's command line or to the protocol surface, and nothing stays "off by
default" for users to discover. The statistics come from inside the same Trio
run, on a separate listener that parses no request.

Run: ``python -m bench.presa_server --port N --stats-port M [--store URL] [--task-events]
[--task-lease S]``; ``--store``, ``--task-events`` and ``--task-lease`` as for ``presa-trio
serve`` (default ``memory:``, off, 30 s). The instruction count of one creation
(bench/instructions.py) serves with a lease of an hour: lease renewal and recovery then
run once at start, not every 10 and 15 seconds, so the count holds the creations alone,
however long the machine's load makes the measured window.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from functools import partial
from typing import Any

import trio

from presa_trio.cli.collector import settle_for_serving
from presa_trio.demo import build_server
from presa_trio.http.serving import serve_http
from presa_trio.server import RequestContext, Server
from presa_trio.tasks.stores import open_store
from presa_trio.wire.mrtr import Elicitation

#: Active tasks the bench may hold at once: the 10,000 parked plus headroom.
BENCH_TASK_LIMIT = 20_000


def raise_task_limits(server: Server) -> bool:
    """Let the fixture's task runner hold ``BENCH_TASK_LIMIT`` tasks; False without Tasks."""
    try:
        from presa_trio.tasks import TASKS_EXTENSION, Limits, TasksExtension
    except ImportError:
        return False
    for extension in server.extensions:
        if extension.id == TASKS_EXTENSION and isinstance(extension, TasksExtension):
            extension.runner.limits = Limits(
                max_active=BENCH_TASK_LIMIT,
                max_active_per_scope=BENCH_TASK_LIMIT,
                max_stored=BENCH_TASK_LIMIT,
                max_stored_per_scope=BENCH_TASK_LIMIT,
            )
            return True
    return False


def enable_task_events(server: Server) -> None:
    """Task event streams on, with the defaults, as ``presa-trio serve --task-events``."""
    from presa_trio.tasks import TasksExtension
    from presa_trio.tasks.event_log import TaskEventLog

    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.enable_events(TaskEventLog())


def set_lease(server: Server, lease_s: float) -> None:
    """Tasks leased for ``lease_s`` seconds, as ``presa-trio serve --task-lease``."""
    from presa_trio.tasks import TasksExtension

    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.runner.lease_ms = round(lease_s * 1000)


#: Task id -> when (epoch s) its worker was woken by an answer / stopped by a cancel.
WOKEN: dict[str, float] = {}
STOPPED: dict[str, float] = {}
GO = Elicitation("Go on?", {"type": "object", "properties": {"go": {"type": "boolean"}}})


def add_probes(server: Server) -> None:
    """The probe tools of the module docstring, on the fixture's Tasks extension."""
    from presa_trio.tasks import TASKS_EXTENSION, Policy, TasksExtension

    [tasks] = [e for e in server.extensions if e.id == TASKS_EXTENSION]
    assert isinstance(tasks, TasksExtension)

    @tasks.tool(Policy.REQUIRED, description="Asks once; notes when the answer woke it.")
    async def bench_park(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.ask({"go": GO})
        WOKEN[str(ctx.request_id)] = time.time()
        return "woken"

    @tasks.tool(Policy.REQUIRED, description="Returns at once: created, run and completed.")
    async def bench_return(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return "done"

    @tasks.tool(Policy.REQUIRED, description="Sleeps until stopped; notes when it was.")
    async def bench_sleep(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        try:
            await trio.sleep_forever()
        finally:
            STOPPED[str(ctx.request_id)] = time.time()


def live_trio_tasks() -> tuple[int, int]:
    """Every task in the current Trio run, and those of the Tasks runtime, from the root down.

    The runtime's tasks are the one that runs the Tasks extension's lifetime
    (:meth:`TasksExtension.run <presa_trio.tasks.TasksExtension.run>`, started
    by the dispatcher under its own name) and every task below it.
    """
    from presa_trio.tasks import TasksExtension

    pending: list[tuple[trio.lowlevel.Task | None, bool]] = [
        (trio.lowlevel.current_root_task(), False)
    ]
    runtime_task = task_name(TasksExtension.run)
    count = runtime = 0
    while pending:
        task, in_runtime = pending.pop()
        if task is None:
            continue
        in_runtime = in_runtime or task.name == runtime_task
        count += 1
        runtime += in_runtime
        for nursery in task.child_nurseries:
            pending.extend((child, in_runtime) for child in nursery.child_tasks)
    return count, runtime


def task_name(function: Any) -> str:
    """The name Trio gives a task started with ``function``: its module and qualified name."""
    return f"{function.__module__}.{function.__qualname__}"


def snapshot() -> dict[str, Any]:
    gc.collect()
    count, runtime = live_trio_tasks()
    return {
        "trioTasks": count,
        "runtimeTasks": runtime,
        "allocatedBlocks": sys.getallocatedblocks(),
        "woken": WOKEN,
        "stopped": STOPPED,
    }


async def answer(stream: trio.SocketStream) -> None:
    async with stream:
        await stream.send_all(json.dumps(snapshot()).encode() + b"\n")


async def serve(
    store_url: str, port: int, stats_port: int, task_events: bool = False, lease_s: float = 30.0
) -> None:
    async with open_store(store_url) as store, trio.open_nursery() as nursery:
        server = build_server(store=store)
        set_lease(server, lease_s)
        if task_events:
            enable_task_events(server)
        if raise_task_limits(server):
            add_probes(server)
        else:
            print("tasks extension not available; serving without it", file=sys.stderr)
        settle_for_serving()
        listeners = await trio.open_tcp_listeners(stats_port, host="127.0.0.1")
        nursery.start_soon(trio.serve_listeners, answer, listeners)
        await serve_http(server, host="127.0.0.1", port=port)
        nursery.cancel_scope.cancel(reason="server stopped")


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.presa_server", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stats-port", type=int, required=True)
    parser.add_argument("--store", default="memory:", metavar="URL")
    parser.add_argument("--task-events", action="store_true", help="as presa-trio serve's")
    parser.add_argument("--task-lease", type=float, default=30.0, metavar="S")
    args = parser.parse_args()
    trio.run(
        partial(serve, args.store, args.port, args.stats_port, args.task_events, args.task_lease)
    )


if __name__ == "__main__":
    main()
