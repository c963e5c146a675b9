"""Tasks across processes: two presa processes on one PostgreSQL, on loopback.

Both processes are ``bench.presa_server --store postgresql://…`` on a fresh
database of a temporary PostgreSQL (the test harness, tests/postgres.py),
A pinned to core 0 and B to core 1 where ``taskset`` exists; PostgreSQL and
this client share the cores with them.

- **Creations per second, per process:** A and B each receive
  ``bench_return`` (a task that returns at once; bench/presa_server.py) at
  concurrency 32, both at once. A creation is answered once the task is
  stored; its worker's write of the result follows, so after the last
  answer the processes are still busy with the workers of the last
  creations. The CPU per creation
  counts until they are done (:func:`settle`), and the reactions below are
  measured only then, on idle processes: each figure is the path itself,
  not the queue a burst left behind.
- **Cancel on B → worker on A stopped:** tasks of the ``bench_sleep`` probe
  are created on A; each is cancelled through B, one at a time; the figure
  is the moment A's worker was stopped (the probe's record) minus the moment
  the client sent ``tasks/cancel`` to B. The path: B's request, its
  compare-and-set, the commit's NOTIFY, A's listening connection, A's runner
  cancelling the scope.
- **Update on B → worker on A woken:** the same with ``bench_park`` tasks,
  parked on input on A and answered through B.
- **RSS of each process** at the end.

Both latencies are read on one host's wall clock. Requests are spaced so
that the side port's reading (which runs a garbage collection in the
server) never overlaps a measured reaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Sequence
from typing import Any

import attrs
import psutil

from bench import servers
from bench.load import ms
from bench.tasks import CONCURRENCY, TaskBench

#: Gap between two measured requests, so reactions never overlap (s).
SPACING = 0.05
#: The processes count as idle once a sampling interval (s) costs them less
#: CPU than this fraction of it.
SETTLE_INTERVAL = 0.2
SETTLE_IDLE = 0.05
MIB = 1024 * 1024


@attrs.frozen
class CrossSizes:
    creations: int
    cancels: int
    updates: int


FULL = CrossSizes(creations=2000, cancels=200, updates=200)
QUICK = CrossSizes(creations=400, cancels=40, updates=40)


@attrs.frozen
class CrossFigures:
    # Per process, A then B: creations and the seconds they took.
    creations: tuple[int, int]
    seconds: tuple[float, float]
    # CPU seconds per creation while both created: A, B, and PostgreSQL's processes.
    cpu_per_creation: tuple[float, float, float]
    cancel_to_stopped: Sequence[float]
    update_to_woken: Sequence[float]
    rss: tuple[int, int]

    @property
    def rates(self) -> tuple[float, float]:
        return (
            self.creations[0] / self.seconds[0],
            self.creations[1] / self.seconds[1],
        )


@attrs.frozen
class CrossReport:
    figures: CrossFigures | None
    reason: str = ""


async def probes(bench: TaskBench) -> dict[str, Any]:
    """The side port's line: ``woken`` and ``stopped`` by task id."""
    reader, writer = await asyncio.open_connection("127.0.0.1", bench.stats_port)
    line = await reader.readline()
    writer.close()
    await writer.wait_closed()
    reading: dict[str, Any] = json.loads(line)
    return reading


async def timed_creations(bench: TaskBench, count: int) -> float:
    loop = asyncio.get_running_loop()
    started = loop.time()
    created = await bench.fan_out([bench.returning() for _ in range(count)])
    if any(result.get("resultType") != "task" for result in created):
        raise RuntimeError("a creation was answered without a task")
    return loop.time() - started


async def create_on(bench: TaskBench, tool: str, count: int) -> list[str]:
    requests = [bench.request("tools/call", {"name": tool, "arguments": {}}) for _ in range(count)]
    return [result["taskId"] for result in await bench.fan_out(requests)]


async def reaction_times(
    a: TaskBench, b: TaskBench, task_ids: list[str], request: Any, probe: str
) -> list[float]:
    """Send ``request(task_id)`` to B for each task; when A's worker reacted, minus when sent."""
    sent: dict[str, float] = {}
    for task_id in task_ids:
        sent[task_id] = time.time()
        await b.call(request(task_id))
        await asyncio.sleep(SPACING)
    for _ in range(200):
        seen: dict[str, float] = (await probes(a))[probe]
        if all(task_id in seen for task_id in task_ids):
            return sorted(seen[task_id] - sent[task_id] for task_id in task_ids)
        await asyncio.sleep(0.1)
    missing = sum(1 for task_id in task_ids if task_id not in seen)
    raise RuntimeError(f"{missing} workers on A never reacted ({probe})")


def cpu_seconds(process: psutil.Process) -> float:
    """CPU time of ``process`` and its children (PostgreSQL's backends)."""
    total = 0.0
    for each in [process, *process.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = each.cpu_times()
            total += times.user + times.system
    return total


async def settle(processes: Sequence[psutil.Process]) -> None:
    """Wait until ``processes`` (and their children) are idle; at most a minute."""
    before = [cpu_seconds(each) for each in processes]
    for _ in range(int(60 / SETTLE_INTERVAL)):
        await asyncio.sleep(SETTLE_INTERVAL)
        now = [cpu_seconds(each) for each in processes]
        busy = max(after - then for then, after in zip(before, now, strict=True))
        if busy < SETTLE_IDLE * SETTLE_INTERVAL:
            return
        before = now


async def measure(
    a: TaskBench, b: TaskBench, database: psutil.Process, sizes: CrossSizes
) -> CrossFigures:
    cpu_before = (a.served.cpu_seconds(), b.served.cpu_seconds(), cpu_seconds(database))
    seconds = await asyncio.gather(
        timed_creations(a, sizes.creations), timed_creations(b, sizes.creations)
    )
    await settle([a.served.handle, b.served.handle, database])
    cpu_after = (a.served.cpu_seconds(), b.served.cpu_seconds(), cpu_seconds(database))
    spent = [after - before for before, after in zip(cpu_before, cpu_after, strict=True)]
    per_creation = (
        spent[0] / sizes.creations,
        spent[1] / sizes.creations,
        spent[2] / (2 * sizes.creations),
    )

    sleeping = await create_on(a, "bench_sleep", sizes.cancels)
    cancel = await reaction_times(
        a, b, sleeping, lambda task_id: b.request("tasks/cancel", {"taskId": task_id}), "stopped"
    )

    parked = await create_on(a, "bench_park", sizes.updates)
    waiting = parked
    while waiting:
        statuses = await a.fan_out([a.get(task_id) for task_id in waiting])
        waiting = [
            t for t, s in zip(waiting, statuses, strict=True) if s["status"] != "input_required"
        ]
    answer = {"go": {"action": "accept", "content": {"go": True}}}
    update = await reaction_times(
        a,
        b,
        parked,
        lambda task_id: b.request("tasks/update", {"taskId": task_id, "inputResponses": answer}),
        "woken",
    )
    return CrossFigures(
        (sizes.creations, sizes.creations),
        (seconds[0], seconds[1]),
        per_creation,
        cancel,
        update,
        (a.served.rss(), b.served.rss()),
    )


async def run(*, quick: bool) -> CrossReport:
    try:
        from tests.postgres import temporary_postgresql
    except ImportError as error:
        return CrossReport(None, f"no PostgreSQL harness ({error}); install '.[test]'")
    with temporary_postgresql() as database:
        url = database.new_database()
        started: list[servers.Served] = []
        benches: list[TaskBench] = []
        try:
            for core in (0, 1):
                port, stats_port = servers.free_port(), servers.free_port()
                served = await servers.start(
                    f"presa-pg-{'ab'[core]}",
                    servers.presa_tasks_command(port, stats_port, url),
                    port,
                    core=core,
                )
                started.append(served)
                benches.append(TaskBench(served, stats_port))
            a, b = benches
            postmaster = psutil.Process(database.process.pid) if database.process else None
            if postmaster is None:
                return CrossReport(None, "PostgreSQL did not start")
            return CrossReport(await measure(a, b, postmaster, QUICK if quick else FULL))
        finally:
            for bench in benches:
                await bench.pool.close()
            for served in started:
                served.stop()


def table(report: CrossReport) -> str:
    figures = report.figures
    if figures is None:
        return f"Tasks across processes: {report.reason}."

    rate_a, rate_b = figures.rates
    rows = [
        (
            f"task creations per process (both at once, c={CONCURRENCY} each)",
            f"A {rate_a:,.0f} /s, B {rate_b:,.0f} /s over {figures.creations[0]:,} each",
        ),
        (
            "CPU per creation: A, B, PostgreSQL",
            " / ".join(f"{seconds * 1000:.2f} ms" for seconds in figures.cpu_per_creation),
        ),
        (
            "`tasks/cancel` on B → worker on A stopped, p50 / p99",
            f"{ms(figures.cancel_to_stopped, 0.5)} / {ms(figures.cancel_to_stopped, 0.99)} ms",
        ),
        (
            "`tasks/update` on B → worker on A woken, p50 / p99",
            f"{ms(figures.update_to_woken, 0.5)} / {ms(figures.update_to_woken, 0.99)} ms",
        ),
        (
            "RSS at the end",
            f"A {figures.rss[0] / MIB:.1f} MiB, B {figures.rss[1] / MIB:.1f} MiB",
        ),
    ]
    lines = ["| two processes, one PostgreSQL | measured |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)
