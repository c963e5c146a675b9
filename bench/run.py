"""``nox -s bench``: presa-trio's speed and memory, as ratios to a floor.

One run, on loopback:

1. the load client's ceiling, against a raw-socket responder (``bench.raw``);
2. rounds that start, one after the other, the floor (``bench.floor``, a bare
   ASGI app under hypercorn's Trio worker) and ``presa-trio serve``, each
   pinned to core 0 while this process drives them from core 1; each round
   measures ``tools/call test_simple_text`` and ``tools/list`` at concurrency
   1 and 32 over HTTP/1.1 (``bench.load``) and over HTTP/2 (``bench.h2load``:
   one h2c connection, that many streams); the table reports the median of
   the rounds;
   in the same rounds, ``presa-trio serve`` as users run it (its default
   access log on) and the official SDK's ``MCPServer`` serving the same tool
   as its docs run it (``bench.sdk_server``: uvicorn, its access log on)
   take the ``tools/call`` cells over HTTP/1.1; then the access log's share
   of a ``tools/call``'s CPU time, presa as users run it against quiet
   presa, new processes each round, each loaded alone in turns
   (``bench.access_share``);
3. the Tasks figures, presa only (``bench.tasks``), on the memory store and
   then at once on SQLite, and the two side by side;
4. what checking a tool's arguments against its schema costs per
   ``tools/call``, in-process (``bench.validation``);
5. what a JWT access-token check adds to a tools/call, in process (``bench.auth``);
6. task event streams (``--task-events``), in process, on every store (``bench.task_events``);
7. ``serve --workers 1`` and ``--workers 2`` against the floor, and HAProxy in
   front of one process against that process direct, unpinned, on PostgreSQL;
   then the load client's, ``/metrics``' and the access log's counts of one
   load (``bench.scaleout``, ``bench.counts``).

The targets are checked at the end. Absolute figures on shared two-core
machines swing by 15–25 % between runs, so a target fails the run (exit 1)
only when missed by more than the noise margin stated beside it; a miss
inside the margin is reported and does not fail.

Run: ``python -m bench.run [--quick] [--rounds N] [--duration S]``.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import platform
import sys
from collections.abc import Sequence

import attrs

from bench import (
    access_share,
    auth,
    instructions,
    postgres,
    scaleout,
    servers,
    task_events,
    tasks,
    validation,
)
from bench.cells import (
    CALL,
    Cell,
    Figures,
    Settings,
    alternate,
    measure_server,
    median_figures,
    ms,
    paired_ratio,
    settings_from,
    settings_parser,
)
from bench.targets import (
    Verdict,
    access_share_verdicts,
    check_cross_process,
    check_targets,
    count_verdicts,
    events_on_verdicts,
)

CELLS = [
    Cell("tools/call", CALL, 1, "content"),
    Cell("tools/call", CALL, 32, "content"),
    Cell("tools/list", None, 1, "tools"),
    Cell("tools/list", None, 32, "tools"),
    Cell("tools/call", CALL, 1, "content", "h2"),
    Cell("tools/call", CALL, 32, "content", "h2"),
    Cell("tools/list", None, 1, "tools", "h2"),
    Cell("tools/list", None, 32, "tools", "h2"),
]
#: The cells every server takes; the floor and quiet presa take all of them.
AS_USERS_RUN = CELLS[:2]
#: The servers as users run them: log lines on, measured beside the floor and quiet presa.
USER_SERVERS = ("presa-default", "sdk")


@attrs.frozen
class LoadReport:
    # Per server, per cell: one Figures per round.
    rounds: dict[str, dict[Cell, list[Figures]]]
    # Per server: the kernel's high-water mark of its resident memory.
    peak_rss: dict[str, int]
    ceiling: dict[int, Figures]

    def median(self, name: str, cell: Cell) -> Figures:
        return median_figures(self.rounds[name][cell])

    def ratio(self, cell: Cell, over: str = "floor", name: str = "presa") -> tuple[float, float]:
        """``name``/``over`` for req/s and for p99: the median of the rounds' paired ratios."""
        return paired_ratio(self.rounds[over][cell], self.rounds[name][cell])


async def run_load(settings: Settings) -> LoadReport:
    """Both servers up (only one is loaded at a time); each cell alternates between them.

    The floor and presa are started one after the other and stay up; each
    round measures every cell on one, then at once on the other (the order
    flips every round), so both figures of a pair see the same machine and
    their ratio cancels most of what other processes do to it.
    """
    print("client ceiling (raw responder) ...", file=sys.stderr, flush=True)
    ceiling = await measure_server("raw", servers.raw_command, CELLS[:2], settings)
    commands = {
        "floor": servers.floor_command,
        "presa": servers.presa_command,
        "presa-default": servers.presa_default_command,
        "sdk": servers.sdk_command,
    }
    takes = {name: AS_USERS_RUN if name in USER_SERVERS else CELLS for name in commands}
    running: dict[str, servers.Served] = {}
    samplers: list[asyncio.Task[None]] = []
    try:
        for name, command in commands.items():
            port = servers.free_port()
            running[name] = await servers.start(name, command(port), port)
            samplers.append(asyncio.create_task(running[name].sample_rss()))
        rounds = await alternate(running, CELLS, settings, takes)
        peaks = {name: served.peak_rss() for name, served in running.items()}
    finally:
        for sampler in samplers:
            sampler.cancel()
        for served in running.values():
            served.stop()
    return LoadReport(
        rounds, peaks, {cell.concurrency: figures for cell, figures in ceiling.items()}
    )


# --- output ----------------------------------------------------------------------------

MIB = 1024 * 1024


def load_table(report: LoadReport) -> str:
    lines = [
        "| load | server | req/s | p50 ms | p90 ms | p99 ms | CPU µs/req | peak RSS MiB "
        "| presa/floor req/s | presa/floor p99 |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for cell in CELLS:
        for name in ("floor", "presa"):
            f = report.median(name, cell)
            ratios = ("", "")
            if name == "presa":
                rate_ratio, p99_ratio = report.ratio(cell)
                ratios = (f"{rate_ratio:.2f}", f"{p99_ratio:.2f}")
            lines.append(
                f"| {cell.label} | {name} | {f.rate:,.0f} | {ms(f.p50)} | {ms(f.p90)} "
                f"| {ms(f.p99)} | {f.cpu_per_request * 1e6:.0f} "
                f"| {report.peak_rss[name] / MIB:.1f} | {ratios[0]} | {ratios[1]} |"
            )
    lines.append("")
    lines.append(
        "| as users run them | server | req/s | p50 ms | p99 ms | CPU µs/req "
        "| presa-default/sdk req/s | floor/sdk req/s |"
    )
    lines.append("|---|---|--:|--:|--:|--:|--:|--:|")
    for cell in AS_USERS_RUN:
        for name in USER_SERVERS:
            f = report.median(name, cell)
            shown = ("", "")
            if name != "sdk":
                presa_default = report.ratio(cell, "sdk", "presa-default")[0]
                shown = (f"{presa_default:.2f}", f"{report.ratio(cell, 'sdk', 'floor')[0]:.2f}")
            lines.append(
                f"| {cell.label} | {name} | {f.rate:,.0f} | {ms(f.p50)} | {ms(f.p99)} "
                f"| {f.cpu_per_request * 1e6:.0f} | {shown[0]} | {shown[1]} |"
            )
    ceiling = ", ".join(
        f"{figures.rate:,.0f} req/s at c={concurrency}"
        for concurrency, figures in sorted(report.ceiling.items())
    )
    lines.append("")
    lines.append(
        "The presa/floor columns are the medians of the rounds' paired ratios (each pair "
        "measured back to back), so they need not equal the ratio of the medians shown. "
        "floor/sdk is the most any hypercorn-Trio app could be ahead of the SDK."
    )
    lines.append(f"Load client ceiling (raw-socket responder, same pinning): {ceiling}.")
    busiest = {
        protocol: max(
            report.median(name, cell).client_busy
            for cell in CELLS
            if cell.protocol == protocol
            for name in ("floor", "presa")
        )
        for protocol in ("http/1.1", "h2")
    }
    lines.append(
        "Load client's own core, busiest window: "
        + ", ".join(f"{protocol} {busy:.0%}" for protocol, busy in busiest.items())
        + " (near 100 % would mean the client, not the server, set the rate)."
    )
    return "\n".join(lines)


def machine_line(settings: Settings) -> str:
    pinned = (
        f"server on core {servers.SERVER_CORE}, client on core {servers.CLIENT_CORE}"
        if servers.pinning_available()
        else "not pinned (no taskset or one core)"
    )
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mode = "quick, 1 round" if settings.quick else f"{settings.rounds} rounds, medians"
    return (
        f"{datetime.date.today().isoformat()}, {model}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}; "
        f"{pinned}; {mode}, {settings.duration:g} s windows after {settings.warmup:g} s warm-up"
    )


def verdict_table(verdicts: Sequence[Verdict]) -> str:
    lines = ["| target | measured | margin | verdict |", "|---|---|---|---|"]
    lines += [f"| {v.target} | {v.measured} | {v.margin} | {v.status} |" for v in verdicts]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> Settings:
    parser = settings_parser("bench.run", __doc__)
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions per request under callgrind (needs valgrind; slow)",
    )
    args = parser.parse_args(argv)
    return settings_from(args, instructions=args.instructions)


async def main_async(settings: Settings) -> int:
    """Measure each part and print its table at once, so a part that fails keeps the rest."""
    servers.pin_client()
    report = await run_load(settings)
    print(f"\n### Measured {machine_line(settings)}\n")
    print(load_table(report), flush=True)
    print("the access log's share of CPU time ...", file=sys.stderr, flush=True)
    share_report = await access_share.run(settings)
    print()
    print(access_share.table(share_report), flush=True)
    print("tasks (presa, memory store) ...", file=sys.stderr, flush=True)
    task_report = await tasks.run(quick=settings.quick)
    print()
    print(tasks.table(task_report), flush=True)
    print("tasks (presa, sqlite store) ...", file=sys.stderr, flush=True)
    sqlite_report = await tasks.run(quick=settings.quick, store="sqlite")
    print()
    print(tasks.table(sqlite_report))
    print()
    print(tasks.side_by_side(task_report, sqlite_report), flush=True)
    print("argument checks (in-process) ...", file=sys.stderr, flush=True)
    # A Trio run of its own, in a thread: this process's loop is asyncio's.
    checks = await asyncio.to_thread(validation.run, settings.quick)
    print()
    print(validation.table(checks), flush=True)
    print("authorization (in-process) ...", file=sys.stderr, flush=True)
    auth_report = await asyncio.to_thread(auth.run, settings.quick)
    print()
    print(auth.table(auth_report), flush=True)
    print("tasks across two processes on PostgreSQL ...", file=sys.stderr, flush=True)
    cross_report = await postgres.run(quick=settings.quick)
    print()
    print(postgres.table(cross_report), flush=True)
    print("--workers and HAProxy (unpinned, on PostgreSQL) ...", file=sys.stderr, flush=True)
    scale_report = await scaleout.run(settings)
    print()
    print(scaleout.table(scale_report), flush=True)
    print("task event streams (in-process, --task-events) ...", file=sys.stderr, flush=True)
    events_report = await asyncio.to_thread(task_events.run, settings.quick)
    print()
    print(task_events.table(events_report), flush=True)
    print("tasks (presa, memory store, --task-events) ...", file=sys.stderr, flush=True)
    events_on = await tasks.run(quick=settings.quick, task_events=True)
    print()
    print(tasks.table(events_on))
    print("\nThe same Tasks figures with task event streams on: every write appends its events.")
    counts: list[instructions.Count] = []
    if settings.instructions:
        if instructions.available():
            counts = await instructions.run(100 if settings.quick else 300)
            print()
            print(instructions.table(counts))
        else:
            print("--instructions: valgrind is not installed; skipped", file=sys.stderr)
    verdicts = check_targets(report, task_report, sqlite_report, counts)
    verdicts += access_share_verdicts(share_report)
    verdicts += events_on_verdicts(events_on)
    verdicts += check_cross_process(cross_report)
    verdicts += count_verdicts(scale_report.check)
    print()
    print(verdict_table(verdicts))
    failed = [v for v in verdicts if v.fails_run]
    if failed:
        print(
            f"\nFAILED: {len(failed)} target(s) missed by more than the noise margin: "
            + "; ".join(v.target for v in failed),
            file=sys.stderr,
        )
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    sys.exit(asyncio.run(main_async(parse_args(argv))))


if __name__ == "__main__":
    main()
