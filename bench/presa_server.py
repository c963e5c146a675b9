"""presa for the Tasks figures: the fixture as ``presa-trio serve`` serves it, plus two things.

1. **Room for 10,000 parked tasks.** The fixture's task runner keeps the
   default limits (100 active tasks per scope); this server raises them, through
   the runner's public ``limits``, so the bench can park 10,000 tasks. Nothing
   else differs: same fixture, same :func:`~presa_trio.http.serving.serve_http`.
2. **A statistics side port.** Each connection to ``127.0.0.1:<stats port>``
   gets one JSON line, ``{"trioTasks": n, "allocatedBlocks": n}``, and is
   closed. ``trioTasks`` counts every live task in the Trio run (this reading's
   own handler included); ``allocatedBlocks`` is :func:`sys.getallocatedblocks`
   after a full garbage collection. Together they show whether work that should
   have ended left anything behind, which RSS alone cannot (CPython keeps freed
   memory for reuse).

Why a bench-only process rather than a flag on ``presa-trio serve``: the
numbers need only to be read, never served, so nothing is added to the
product's command line or to the protocol surface, and nothing stays "off by
default" for users to discover. The statistics come from inside the same Trio
run, on a separate listener that parses no request.

Run: ``python -m bench.presa_server --port N --stats-port M [--store URL]``;
``--store`` is the task store, as for ``presa-trio serve`` (default ``memory:``).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from functools import partial

import trio

from presa_trio.fixtures import build_server
from presa_trio.http.serving import serve_http
from presa_trio.server import Server
from presa_trio.tasks.stores import open_store

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


def live_trio_tasks() -> int:
    """Every task in the current Trio run, counted from the root task down."""
    pending = [trio.lowlevel.current_root_task()]
    count = 0
    while pending:
        task = pending.pop()
        if task is None:
            continue
        count += 1
        for nursery in task.child_nurseries:
            pending.extend(nursery.child_tasks)
    return count


def snapshot() -> dict[str, int]:
    gc.collect()
    return {"trioTasks": live_trio_tasks(), "allocatedBlocks": sys.getallocatedblocks()}


async def answer(stream: trio.SocketStream) -> None:
    async with stream:
        await stream.send_all(json.dumps(snapshot()).encode() + b"\n")


async def serve(store_url: str, port: int, stats_port: int) -> None:
    async with open_store(store_url) as store, trio.open_nursery() as nursery:
        server = build_server(store=store)
        if not raise_task_limits(server):
            print("tasks extension not available; serving without it", file=sys.stderr)
        listeners = await trio.open_tcp_listeners(stats_port, host="127.0.0.1")
        nursery.start_soon(trio.serve_listeners, answer, listeners)
        await serve_http(server, host="127.0.0.1", port=port)
        nursery.cancel_scope.cancel(reason="server stopped")


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.presa_server", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stats-port", type=int, required=True)
    parser.add_argument("--store", default="memory:", metavar="URL")
    args = parser.parse_args()
    trio.run(partial(serve, args.store, args.port, args.stats_port))


if __name__ == "__main__":
    main()
