"""The Tasks figures, presa only: creation, completion, cancellation, parked memory.

presa runs as ``bench.presa_server``: the fixture served exactly as by
``presa-trio serve``, with the task limits raised to hold 10,000 tasks and a
loopback statistics port (live Trio tasks, allocated blocks) beside the MCP
endpoint; that is how "no Trio task remains after cancel" is read. That
figure counts the Tasks runtime's own Trio tasks (the runner, its loops,
the workers and their children), exact whatever connections the load
client still has open; the count of every task in the run is shown beside.

Creation is measured on ``bench_return``, a task tool of the bench server
that returns at once (two store writes: created, completed), so the figure
is what creating a task costs; ``slow_compute`` with 0 seconds, which also
writes five status messages, is measured the same way and reported beside.

Creation with polling is what a client of the Tasks extension does: at
concurrency 16, each client creates a ``bench_return`` task and polls
``tasks/get`` until it reads ``completed``, then creates the next. The rate
counts tasks seen completed, so each creation's polls are part of its
cost; run on the memory store and on SQLite, the two rates side by side say
what a store's reads cost a polling client.

Pollers poll back to back, without honouring ``pollIntervalMs``: the figures
are the server's own delay, and a client that waits between polls adds up to
one interval to them.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from bench import load, mcp, servers
from bench.load import ms

TERMINAL = frozenset({"completed", "failed", "cancelled"})


@attrs.frozen
class Stats:
    """One reading of the server's side port, and its RSS read just after."""

    # Every task in the Trio run, HTTP connections included.
    trio_tasks: int
    # The Tasks runtime's own: the extension's lifetime task and all below it.
    runtime_tasks: int
    allocated_blocks: int
    rss: int


@attrs.frozen
class TaskFigures:
    # bench_return tasks created at concurrency 32, and how long it took.
    creations: int
    creation_seconds: float
    # Creations answered by an ordinary result instead of a task (the shortcut).
    shortcuts: int
    # The same for slow_compute (0 s), which writes five status messages too.
    reporting_creations: int
    reporting_seconds: float
    # bench_return tasks created by POLLING_CONCURRENCY clients, each polling
    # tasks/get until completed before it creates the next; and their polls.
    polled_creations: int
    polled_seconds: float
    polls_per_polled_creation: float
    # Seconds from sending tools/call to the first tasks/get that reads completed.
    to_completed: Sequence[float]
    polls_to_completed: float
    cancel_ack: Sequence[float]
    # Seconds from sending tasks/cancel to the first tasks/get that reads cancelled.
    to_cancelled: Sequence[float]
    parked: int
    idle: Stats
    parked_stats: Stats
    after_cancel: Stats

    @property
    def creation_rate(self) -> float:
        return self.creations / self.creation_seconds

    @property
    def reporting_rate(self) -> float:
        return self.reporting_creations / self.reporting_seconds

    @property
    def polled_rate(self) -> float:
        return self.polled_creations / self.polled_seconds

    @property
    def parked_bytes_per_task(self) -> float:
        return (self.parked_stats.rss - self.idle.rss) / self.parked

    @property
    def residual_bytes_per_task(self) -> float:
        return (self.after_cancel.rss - self.idle.rss) / self.parked

    @property
    def runtime_tasks_per_parked(self) -> float:
        return (self.parked_stats.runtime_tasks - self.idle.runtime_tasks) / self.parked

    @property
    def trio_tasks_left(self) -> int:
        """The Tasks runtime's Trio tasks after cancelling, against idle: exact."""
        return self.after_cancel.runtime_tasks - self.idle.runtime_tasks


@attrs.frozen
class TaskReport:
    figures: TaskFigures | None
    reason: str = ""
    # What the figures were measured on: the store, and "--task-events" if on.
    setup: str = "memory store"


@attrs.frozen
class Sizes:
    creations: int
    completions: int
    cancels: int
    parked: int


FULL = Sizes(creations=3000, completions=300, cancels=300, parked=10_000)
QUICK = Sizes(creations=500, completions=50, cancels=50, parked=2_000)
CONCURRENCY = 32
#: Clients that each create a task and poll it to completion, one task at a time.
POLLING_CONCURRENCY = 16


async def call_on(pool: load.Pool, request: bytes) -> dict[str, Any]:
    """Send ``request`` on one of ``pool``'s connections; its JSON-RPC result."""
    response = await pool.roundtrip(request)
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.body[:300]!r}")
    return mcp.result_of(response.body)


class TaskBench:
    """Requests against one running presa, over keep-alive connections."""

    def __init__(self, served: servers.Served, stats_port: int) -> None:
        self.served = served
        self.port = served.port
        self.stats_port = stats_port
        self.pool = load.Pool("127.0.0.1", served.port)
        self.next_id = 0

    def request(
        self, method: str, params: dict[str, Any], capabilities: dict[str, Any] | None = None
    ) -> bytes:
        self.next_id += 1
        return mcp.http_request(
            self.port,
            method,
            params,
            capabilities=mcp.TASK_CAPABILITIES if capabilities is None else capabilities,
            request_id=self.next_id,
        )

    async def call(self, request: bytes) -> dict[str, Any]:
        return await call_on(self.pool, request)

    async def fan_out(self, requests: Sequence[bytes]) -> list[dict[str, Any]]:
        """Send ``requests`` over ``CONCURRENCY`` connections; results in order."""
        results: list[dict[str, Any]] = [{} for _ in requests]
        cursor = iter(range(len(requests)))

        async def worker() -> None:
            pool = load.Pool("127.0.0.1", self.port)
            try:
                for index in cursor:
                    results[index] = await call_on(pool, requests[index])
            finally:
                await pool.close()

        await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
        return results

    async def create_and_poll(self, creations: int) -> tuple[float, int]:
        """``creations`` tasks by ``POLLING_CONCURRENCY`` clients, each polled to
        ``completed`` before its client creates the next; (seconds, polls)."""
        loop = asyncio.get_running_loop()
        remaining = iter(range(creations))
        polls = 0

        async def client() -> None:
            nonlocal polls
            pool = load.Pool("127.0.0.1", self.port)
            try:
                for _ in remaining:
                    created = await call_on(pool, self.returning())
                    if created.get("resultType") == "task":
                        _, count = await self.poll_until(created["taskId"], "completed", pool)
                        polls += count
            finally:
                await pool.close()

        started = loop.time()
        await asyncio.gather(*(client() for _ in range(POLLING_CONCURRENCY)))
        return loop.time() - started, polls

    def get(self, task_id: str) -> bytes:
        return self.request("tasks/get", {"taskId": task_id})

    async def poll_until(
        self, task_id: str, wanted: str, pool: load.Pool | None = None
    ) -> tuple[float, int]:
        """Poll ``tasks/get`` back to back (on ``pool``, else this bench's own)
        until ``wanted``; (when seen, polls)."""
        loop = asyncio.get_running_loop()
        polls = 0
        while True:
            status = (await call_on(pool or self.pool, self.get(task_id)))["status"]
            polls += 1
            if status == wanted:
                return loop.time(), polls
            if status in TERMINAL:
                raise RuntimeError(f"task {task_id} ended {status}, expected {wanted}")

    async def stats(self) -> Stats:
        """The side port's reading, once the Trio task count is stable (this client's closed)."""
        await self.pool.close()
        counts: list[int] = []
        for _ in range(100):
            await asyncio.sleep(0.1)
            reader, writer = await asyncio.open_connection("127.0.0.1", self.stats_port)
            line = await reader.readline()
            writer.close()
            await writer.wait_closed()
            reading: dict[str, Any] = json.loads(line)
            counts.append(reading["trioTasks"])
            if len(counts) >= 3 and len(set(counts[-3:])) == 1:
                break
        return Stats(
            reading["trioTasks"],
            reading["runtimeTasks"],
            reading["allocatedBlocks"],
            self.served.rss(),
        )

    async def available(self) -> str:
        """An empty string when the Tasks extension is advertised, else why not."""
        result = await self.call(self.request("server/discover", {}, mcp.PLAIN_CAPABILITIES))
        extensions = result.get("capabilities", {}).get("extensions", {})
        if mcp.TASKS_EXTENSION not in extensions:
            return (
                "tasks extension not available (server/discover advertises no "
                f"{mcp.TASKS_EXTENSION})"
            )
        return ""

    def returning(self) -> bytes:
        """A ``bench_return`` task: created, run and completed, nothing else."""
        return self.request("tools/call", {"name": "bench_return", "arguments": {}})

    def slow_compute(self, seconds: float) -> bytes:
        return self.request(
            "tools/call",
            {
                "name": "slow_compute",
                "arguments": {"seconds": seconds, "label": "bench"},
            },
        )

    async def measure(self, sizes: Sizes) -> TaskFigures:
        loop = asyncio.get_running_loop()
        # Creation rate at concurrency 32: tasks that do nothing, then
        # slow_compute (0 s) with its five status messages.
        creates = [self.returning() for _ in range(sizes.creations)]
        started = loop.time()
        created = await self.fan_out(creates)
        creation_seconds = loop.time() - started
        creates = [self.slow_compute(0) for _ in range(sizes.creations)]
        started = loop.time()
        reporting = await self.fan_out(creates)
        reporting_seconds = loop.time() - started
        shortcuts = sum(
            1 for result in [*created, *reporting] if result.get("resultType") != "task"
        )
        # Creation as a polling client sees it, at concurrency 16.
        polled_seconds, polled_polls = await self.create_and_poll(sizes.creations)

        # Create to completed, one task at a time.
        to_completed: list[float] = []
        polls = polled = 0
        for _ in range(sizes.completions):
            sent = loop.time()
            result = await self.call(self.slow_compute(0))
            if result.get("resultType") != "task":
                to_completed.append(loop.time() - sent)
                continue
            seen, count = await self.poll_until(result["taskId"], "completed")
            to_completed.append(seen - sent)
            polls += count
            polled += 1

        # Cancel tasks sleeping 60 s: the ack, then the first read of cancelled.
        sleeping = [
            r["taskId"]
            for r in await self.fan_out([self.slow_compute(60) for _ in range(sizes.cancels)])
        ]
        cancel_ack: list[float] = []
        to_cancelled: list[float] = []
        for task_id in sleeping:
            sent = loop.time()
            ack = await self.call(self.request("tasks/cancel", {"taskId": task_id}))
            cancel_ack.append(loop.time() - sent)
            if ack.get("resultType") != "complete":
                raise RuntimeError(f"tasks/cancel answered {ack!r}")
            seen, _ = await self.poll_until(task_id, "cancelled")
            to_cancelled.append(seen - sent)

        # 10,000 tasks parked on input, then all cancelled.
        idle = await self.stats()
        parked_ids = [
            r["taskId"]
            for r in await self.fan_out(
                [
                    self.request(
                        "tools/call",
                        {
                            "name": "confirm_delete",
                            "arguments": {"filename": f"bench-{n}.txt"},
                        },
                    )
                    for n in range(sizes.parked)
                ]
            )
        ]
        waiting = parked_ids
        while waiting:
            statuses = await self.fan_out([self.get(task_id) for task_id in waiting])
            waiting = [
                t for t, s in zip(waiting, statuses, strict=True) if s["status"] != "input_required"
            ]
        parked_stats = await self.stats()
        for ack in await self.fan_out(
            [self.request("tasks/cancel", {"taskId": task_id}) for task_id in parked_ids]
        ):
            if ack.get("resultType") != "complete":
                raise RuntimeError(f"tasks/cancel answered {ack!r}")
        settled = await self.fan_out([self.get(task_id) for task_id in parked_ids])
        if any(s["status"] != "cancelled" for s in settled):
            raise RuntimeError("a parked task did not read cancelled after tasks/cancel")
        after_cancel = await self.stats()

        return TaskFigures(
            len(created),
            creation_seconds,
            shortcuts,
            len(reporting),
            reporting_seconds,
            sizes.creations,
            polled_seconds,
            polled_polls / sizes.creations,
            sorted(to_completed),
            polls / max(1, polled),
            sorted(cancel_ack),
            sorted(to_cancelled),
            sizes.parked,
            idle,
            parked_stats,
            after_cancel,
        )


async def run(*, quick: bool, store: str = "memory", task_events: bool = False) -> TaskReport:
    """The figures on ``store``: ``memory``, or ``sqlite`` (a fresh file, removed after);
    with ``task_events``, served as ``presa-trio serve --task-events``."""
    with tempfile.TemporaryDirectory(prefix="presa-bench-") as folder:
        url = "memory:" if store == "memory" else f"sqlite:///{Path(folder) / 'tasks.db'}"
        port, stats_port = servers.free_port(), servers.free_port()
        options = ["--task-events"] if task_events else []
        command = servers.presa_tasks_command(port, stats_port, url, *options)
        name = f"presa-tasks-{store}" + ("-events" if task_events else "")
        served = await servers.start(name, command, port)
        setup = f"{store} store" + (", --task-events" if task_events else "")
        bench = TaskBench(served, stats_port)
        try:
            reason = await bench.available()
            if reason:
                return TaskReport(None, reason, setup)
            return TaskReport(await bench.measure(QUICK if quick else FULL), setup=setup)
        finally:
            await bench.pool.close()
            served.stop()


# --- output ----------------------------------------------------------------------------

KIB = 1024
MIB = 1024 * 1024


def table(report: TaskReport) -> str:
    figures = report.figures
    if figures is None:
        return f"Tasks ({report.setup}): {report.reason}."

    rows = [
        (
            f"task creation (bench_return: created and completed, c={CONCURRENCY})",
            f"{figures.creation_rate:,.0f} tasks/s over {figures.creations:,}"
            + (f" ({figures.shortcuts} answered without a task)" if figures.shortcuts else ""),
        ),
        (
            f"task creation (slow_compute seconds 0: five status messages too, c={CONCURRENCY})",
            f"{figures.reporting_rate:,.0f} tasks/s over {figures.reporting_creations:,}",
        ),
        (
            f"task creation with polling (bench_return; each of {POLLING_CONCURRENCY} clients "
            "polls tasks/get to `completed` before creating the next)",
            f"{figures.polled_rate:,.0f} tasks/s over {figures.polled_creations:,} "
            f"({figures.polls_per_polled_creation:.1f} polls each)",
        ),
        (
            "create → `completed` seen by a poller, p50 / p99",
            f"{ms(figures.to_completed, 0.5)} / {ms(figures.to_completed, 0.99)} ms "
            f"({figures.polls_to_completed:.1f} polls each)",
        ),
        (
            "`tasks/cancel` ack, p50 / p99",
            f"{ms(figures.cancel_ack, 0.5)} / {ms(figures.cancel_ack, 0.99)} ms",
        ),
        (
            "cancel sent → `tasks/get` reads `cancelled`, p50 / p99",
            f"{ms(figures.to_cancelled, 0.5)} / {ms(figures.to_cancelled, 0.99)} ms",
        ),
        (
            f"RSS idle → {figures.parked:,} parked (confirm_delete)",
            f"{figures.idle.rss / MIB:.1f} → {figures.parked_stats.rss / MIB:.1f} MiB, "
            f"{figures.parked_bytes_per_task / KIB:.2f} KiB per task",
        ),
        (
            "Trio tasks of the Tasks runtime idle → parked",
            f"{figures.idle.runtime_tasks} → {figures.parked_stats.runtime_tasks} "
            f"({figures.runtime_tasks_per_parked:.1f} per task)",
        ),
        (
            "after all cancelled: RSS; the runtime's Trio tasks; all Trio tasks",
            f"{figures.after_cancel.rss / MIB:.1f} MiB "
            f"({figures.residual_bytes_per_task / KIB:+.2f} KiB per task vs idle); "
            f"{figures.after_cancel.runtime_tasks} ({figures.trio_tasks_left:+d} vs idle); "
            f"{figures.after_cancel.trio_tasks} "
            f"({figures.after_cancel.trio_tasks - figures.idle.trio_tasks:+d} vs idle)",
        ),
        (
            "Python allocated blocks idle → parked → cancelled",
            f"{figures.idle.allocated_blocks:,} → {figures.parked_stats.allocated_blocks:,} → "
            f"{figures.after_cancel.allocated_blocks:,}",
        ),
    ]
    lines = [f"| tasks (presa, {report.setup}) | measured |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    return "\n".join(lines)


def side_by_side(memory: TaskReport, sqlite: TaskReport) -> str:
    """The creation rates on both stores, measured one after the other in this run."""
    if memory.figures is None or sqlite.figures is None:
        return f"Tasks, memory against SQLite: {sqlite.reason or memory.reason}."
    rows = [
        (
            f"task creation (bench_return, c={CONCURRENCY})",
            memory.figures.creation_rate,
            sqlite.figures.creation_rate,
        ),
        (
            f"task creation with polling (c={POLLING_CONCURRENCY}, tasks/get to `completed`)",
            memory.figures.polled_rate,
            sqlite.figures.polled_rate,
        ),
    ]
    lines = ["| tasks/s | memory | SQLite | SQLite/memory |", "|---|--:|--:|--:|"]
    for name, on_memory, on_sqlite in rows:
        lines.append(
            f"| {name} | {on_memory:,.0f} | {on_sqlite:,.0f} | {on_sqlite / on_memory:.2f} |"
        )
    return "\n".join(lines)
