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
- **Each process alone:** then A receives as many creations while B is
  idle, and then B while A is idle. Two presa processes, PostgreSQL and
  this client share two cores, so the rate with both at once is bounded by
  the machine (two cores' CPU seconds per second divided by the CPU all of
  them spend per creation); the rate alone shows what one process does
  when it is not competing for a core. The table prints that arithmetic
  beside the measured rates: where the CPU per creation goes, and the rate
  two cores allow at that cost.
- **Cancel on B → worker on A stopped:** tasks of the ``bench_sleep`` probe
  are created on A; each is cancelled through B, one at a time; the figure
  is the moment A's worker was stopped (the probe's record) minus the moment
  the client sent ``tasks/cancel`` to B. The path: B's request, its
  compare-and-set, the commit's NOTIFY, A's listening connection, A's runner
  cancelling the scope.
- **Update on B → worker on A woken:** the same with ``bench_park`` tasks,
  parked on input on A and answered through B.
- **RSS of each process** at the end.
- **What creations still serialise on** (:func:`serialisation`, through
  one store opened here, no HTTP): a creation takes its access scope's
  lock, from the statement's start to its commit (the capacity count, the
  insert, the commit). That span is a sequential creation's round trip
  less a read's (the same connection, thread hop and network round trip),
  and it bounds the creations per second of one scope, wherever they come
  from: ``1 / span``. Before, every creation of every scope took one lock,
  so the same span bounded the whole deployment; now scopes share no lock,
  which the rate of a burst spread over many scopes shows beside the rate
  of a burst in one (a server without authorization puts every task in
  one scope: for it the bound is the same as before).

Both latencies are read on one host's wall clock. Requests are spaced so
that the side port's reading (which runs a garbage collection in the
server) never overlaps a measured reaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
from collections.abc import Sequence
from typing import Any

import attrs
import psutil
import trio

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


#: The cores the bench's processes share (PostgreSQL, A, B and this client).
CORES = 2


@attrs.frozen
class Phase:
    """One burst of creations: on A and B at once, or on one while the other is idle."""

    # Per process that received creations: how many, and the seconds they took.
    creations: int
    seconds: Sequence[float]
    # CPU seconds per creation until the processes were idle again: each
    # presa process that created (per its own creations), PostgreSQL's
    # processes and this load client (per creation of the burst).
    presa_cpu: Sequence[float]
    database_cpu: float
    client_cpu: float

    @property
    def rates(self) -> list[float]:
        return [self.creations / seconds for seconds in self.seconds]

    @property
    def overall_rate(self) -> float:
        """Every process's creations over the burst's wall time (until the last answer)."""
        return self.creations * len(self.seconds) / max(self.seconds)

    @property
    def total_cpu(self) -> float:
        """CPU seconds the machine spent per creation, every process counted."""
        return sum(self.presa_cpu) / len(self.presa_cpu) + self.database_cpu + self.client_cpu


@attrs.frozen
class Serialisation:
    """Milliseconds of a sequential creation and of a read, and burst rates (/s)."""

    creation_ms: float
    read_ms: float
    one_scope_rate: float
    many_scopes_rate: float

    @property
    def span_ms(self) -> float:
        """What a creation holds its scope's lock for: its round trip less a read's."""
        return max(self.creation_ms - self.read_ms, 1e-3)

    @property
    def ceiling(self) -> float:
        return 1000 / self.span_ms


#: Sequential creations timed, and creations in each burst.
SERIAL_CREATIONS = 300
BURST_CREATIONS = 1000


def serialisation(url: str) -> Serialisation:
    """The span creations serialise on, and bursts in one scope and in many (in Trio)."""
    from presa_trio.tasks import model
    from presa_trio.tasks.stores import open_store
    from presa_trio.tasks.stores.base import Capacity, Lease, StoredTask

    roomy = Capacity(10**9, 10**9, 10**9, 10**9)
    now = time.time_ns() // 1_000_000

    def new(name: str, scope: str) -> StoredTask:
        task = model.create(name, now_ms=now, ttl_ms=3_600_000, poll_interval_ms=100)
        return StoredTask(scope, task, None, Lease("bench", 1, now + 30_000))

    async def burst(store: Any, tag: str, scoped: bool) -> float:
        limiter = trio.CapacityLimiter(CONCURRENCY)

        async def create(number: int) -> None:
            async with limiter:
                scope = f"s{number}" if scoped else "one"
                await store.create(new(f"{tag}-{number}", scope), roomy, now)

        started = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for number in range(BURST_CREATIONS):
                nursery.start_soon(create, number)
        return BURST_CREATIONS / (time.perf_counter() - started)

    async def measure() -> Serialisation:
        async with open_store(url) as store:
            creations, reads = [], []
            for number in range(SERIAL_CREATIONS):
                started = time.perf_counter()
                await store.create(new(f"seq-{number}", "one"), roomy, now)
                creations.append(time.perf_counter() - started)
                started = time.perf_counter()
                await store.read(f"seq-{number}")
                reads.append(time.perf_counter() - started)
            return Serialisation(
                statistics.median(creations) * 1000,
                statistics.median(reads) * 1000,
                await burst(store, "one", scoped=False),
                await burst(store, "many", scoped=True),
            )

    return trio.run(measure)


@attrs.frozen
class CrossFigures:
    # Per process, A then B: creations and the seconds they took.
    creations: tuple[int, int]
    seconds: tuple[float, float]
    # CPU seconds per creation while both created: A, B, and PostgreSQL's processes.
    cpu_per_creation: tuple[float, float, float]
    # The same burst, every process counted (the load client too).
    both: Phase
    # A alone (B idle), then B alone (A idle).
    alone: tuple[Phase, Phase]
    cancel_to_stopped: Sequence[float]
    update_to_woken: Sequence[float]
    rss: tuple[int, int]
    serialised: Serialisation

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


async def creation_burst(
    creating: Sequence[TaskBench], idle: Sequence[TaskBench], database: psutil.Process, count: int
) -> Phase:
    """``count`` creations on each of ``creating`` at once; CPU counted until all are idle."""
    client = psutil.Process()
    everyone = [bench.served.handle for bench in (*creating, *idle)] + [database]

    def clocks() -> list[float]:
        return [
            *(bench.served.cpu_seconds() for bench in creating),
            cpu_seconds(database),
            sum(client.cpu_times()[:2]),  # its own: A, B and PostgreSQL are its children
        ]

    before = clocks()
    seconds = await asyncio.gather(*(timed_creations(bench, count) for bench in creating))
    await settle(everyone)
    spent = [after - then for then, after in zip(before, clocks(), strict=True)]
    burst = count * len(creating)
    return Phase(
        count,
        seconds,
        [presa / count for presa in spent[: len(creating)]],
        spent[-2] / burst,
        spent[-1] / burst,
    )


async def measure(
    a: TaskBench, b: TaskBench, database: psutil.Process, sizes: CrossSizes, spare_url: str
) -> CrossFigures:
    both = await creation_burst([a, b], [], database, sizes.creations)
    alone = (
        await creation_burst([a], [b], database, sizes.creations),
        await creation_burst([b], [a], database, sizes.creations),
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
        (both.seconds[0], both.seconds[1]),
        (both.presa_cpu[0], both.presa_cpu[1], both.database_cpu),
        both,
        alone,
        cancel,
        update,
        (a.served.rss(), b.served.rss()),
        await asyncio.to_thread(serialisation, spare_url),
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
            sizes = QUICK if quick else FULL
            spare = database.new_database()
            return CrossReport(await measure(a, b, postmaster, sizes, spare))
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
    alone_a, alone_b = figures.alone
    serialised = figures.serialised
    rows = [
        (
            f"task creations per process (both at once, c={CONCURRENCY} each)",
            f"A {rate_a:,.0f} /s, B {rate_b:,.0f} /s over {figures.creations[0]:,} each",
        ),
        (
            "CPU per creation: A, B, PostgreSQL",
            " / ".join(f"{seconds * 1000:.2f} ms" for seconds in figures.cpu_per_creation),
        ),
        ("both at once: " + cpu_line(figures.both), arithmetic(figures.both)),
        (
            f"task creations on one process, the other idle (c={CONCURRENCY})",
            f"A alone {alone_a.rates[0]:,.0f} /s, B alone {alone_b.rates[0]:,.0f} /s"
            f" over {alone_a.creations:,} each",
        ),
        ("A alone: " + cpu_line(alone_a), arithmetic(alone_a)),
        ("B alone: " + cpu_line(alone_b), arithmetic(alone_b)),
        (
            "`tasks/cancel` on B → worker on A stopped, p50 / p99",
            f"{ms(figures.cancel_to_stopped, 0.5)} / {ms(figures.cancel_to_stopped, 0.99)} ms",
        ),
        (
            "`tasks/update` on B → worker on A woken, p50 / p99",
            f"{ms(figures.update_to_woken, 0.5)} / {ms(figures.update_to_woken, 0.99)} ms",
        ),
        (
            "what creations serialise on: a creation's span under its scope's lock",
            f"{figures.serialised.span_ms:.2f} ms (creation {figures.serialised.creation_ms:.2f}"
            f" less read {figures.serialised.read_ms:.2f}, sequential medians)",
        ),
        (
            "ceiling it implies: before (one lock), after (one lock per scope)",
            f"{figures.serialised.ceiling:,.0f} creations/s for the whole deployment;"
            f" now {figures.serialised.ceiling:,.0f}/s per access scope",
        ),
        (
            f"one store, c={CONCURRENCY}: a burst in one scope, a burst over many",
            f"{serialised.one_scope_rate:,.0f} /s, {serialised.many_scopes_rate:,.0f} /s"
            f" over {BURST_CREATIONS:,} each",
        ),
        (
            "RSS at the end",
            f"A {figures.rss[0] / MIB:.1f} MiB, B {figures.rss[1] / MIB:.1f} MiB",
        ),
    ]
    lines = ["| two processes, one PostgreSQL | measured |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


def cpu_line(phase: Phase) -> str:
    """Where a creation's CPU went: each creating presa, PostgreSQL, the load client."""
    presa = " + ".join(f"{seconds * 1000:.2f}" for seconds in phase.presa_cpu)
    average = "" if len(phase.presa_cpu) == 1 else f" (mean of {presa})"
    mean = sum(phase.presa_cpu) / len(phase.presa_cpu)
    return (
        f"CPU per creation: presa {mean * 1000:.2f}{average} + PostgreSQL"
        f" {phase.database_cpu * 1000:.2f} + client {phase.client_cpu * 1000:.2f}"
        f" = {phase.total_cpu * 1000:.2f} ms"
    )


def arithmetic(phase: Phase) -> str:
    """The rate ``CORES`` cores allow at the measured CPU per creation, beside the rate seen."""
    ceiling = CORES / phase.total_cpu
    seen = phase.overall_rate
    return (
        f"{CORES} cores / {phase.total_cpu * 1000:.2f} ms = {ceiling:,.0f} creations/s at most;"
        f" measured {seen:,.0f}/s in all ({seen / ceiling:.0%} of that)"
    )
