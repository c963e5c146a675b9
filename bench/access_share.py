"""What the access log costs a ``tools/call``: its share of the server's CPU time.

A part of ``nox -s bench``, or alone: ``python -m bench.access_share [--quick]``.

Three ``presa-trio serve`` processes, all pinned to the server core: two
quiet (``--log-level WARNING``: the access log off) and one as users run it
(the log on, its lines going to a file, the bench's log of that server).
At c=1, where a server leaves the core idle while its client reads the
answer, the load client drives the three at once, the same cell on each
over its own connections, for one window, so whatever else the machine
does in that window falls on the three alike. At c=32 each would fill the
core, and three loaded at once take turns on it unevenly (the one that
answers more requests per turn spends less per request), so there they
are measured one after the other, in an order that flips every round, as
the main table measures servers. The CPU time each spent per request (the
scheduler's count in ns, user + system: the kernel's side of writing the
lines included; :func:`on_cpu_seconds`) gives, per round:

- **the share**: logged / quiet − 1, against the first quiet server;
- **the noise**: the second quiet server / the first − 1: how far two
  servers doing the same work differ in the same round.

A round per cell (``tools/call`` at c=1 and c=32 over HTTP/1.1); the table
gives the medians over the rounds, and the noise beside the share.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from bench import load, mcp, servers
from bench.cells import (
    CALL,
    Cell,
    Settings,
    ok_response,
    settings_from,
    settings_parser,
)

CELLS = [Cell("tools/call", CALL, 1, "content"), Cell("tools/call", CALL, 32, "content")]
QUIET, SECOND_QUIET, LOGGED = "presa", "presa again", "presa-default"
SERVERS: dict[str, servers.Command] = {
    QUIET: servers.presa_command,
    SECOND_QUIET: servers.presa_command,
    LOGGED: servers.presa_default_command,
}


@attrs.frozen
class Window:
    """One round of a cell: CPU seconds per request and requests counted, by server."""

    cpu_per_request: Mapping[str, float]
    requests: Mapping[str, int]

    def over_quiet(self, name: str) -> float:
        return self.cpu_per_request[name] / self.cpu_per_request[QUIET] - 1


@attrs.frozen
class ShareReport:
    # Per cell, one window per round.
    windows: dict[Cell, list[Window]]

    def median(self, cell: Cell, name: str) -> float:
        """The median over the rounds of ``name``'s CPU time per request over quiet presa's."""
        return statistics.median(window.over_quiet(name) for window in self.windows[cell])

    def share(self, cell: Cell) -> float:
        return self.median(cell, LOGGED)

    def noise(self, cell: Cell) -> float:
        return self.median(cell, SECOND_QUIET)


def on_cpu_seconds(served: servers.Served) -> float:
    """The CPU time of ``served``'s threads, in nanoseconds where Linux gives them.

    psutil reads ``/proc/PID/stat``, in clock ticks (10 ms): a window in
    which three servers share one core gives each well under a second, so
    a tick would be over 1 % of it. The scheduler's own count
    (``/proc/PID/task/TID/schedstat``, time on the CPU in ns, user and
    system) is exact; it covers the threads alive at the reading, which in
    presa are the main thread and the access log writer's (kept by Trio's
    thread cache while it writes every second).
    """
    total = 0
    try:
        for task in Path(f"/proc/{served.process.pid}/task").iterdir():
            total += int((task / "schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return served.cpu_seconds()
    return total / 1e9


async def window_at_once(
    running: Mapping[str, servers.Served], cell: Cell, settings: Settings
) -> Window:
    """One window of ``cell`` on every server of ``running`` at once."""
    cpu: dict[str, dict[str, float]] = {name: {} for name in running}

    def edges_of(name: str) -> Callable[[str], None]:
        def on_window(edge: str) -> None:
            cpu[name][edge] = on_cpu_seconds(running[name])

        return on_window

    clients = {
        name: await load.connections(
            "127.0.0.1",
            served.port,
            mcp.http_request(served.port, cell.method, cell.params),
            cell.concurrency,
        )
        for name, served in running.items()
    }
    outcomes = await asyncio.gather(
        *(
            load.closed_loop(
                clients[name],
                warmup=settings.warmup,
                duration=settings.duration,
                check=ok_response,
                on_window=edges_of(name),
            )
            for name in running
        )
    )
    requests = {name: outcome.requests for name, outcome in zip(running, outcomes, strict=True)}
    for name, outcome in zip(running, outcomes, strict=True):
        if outcome.errors:
            raise RuntimeError(f"{name} {cell.label}: {outcome.errors} failed responses")
    return Window(
        {
            name: (cpu[name]["end"] - cpu[name]["start"]) / max(1, requests[name])
            for name in running
        },
        requests,
    )


async def one_round(
    running: Mapping[str, servers.Served], cell: Cell, settings: Settings, number: int
) -> Window:
    """Round ``number`` of ``cell``: every server at once at c=1, else one after the other."""
    if cell.concurrency == 1:
        return await window_at_once(running, cell, settings)
    order = list(running) if number % 2 else list(reversed(list(running)))
    alone = [await window_at_once({name: running[name]}, cell, settings) for name in order]
    return Window(
        {name: w.cpu_per_request[name] for w in alone for name in w.cpu_per_request},
        {name: w.requests[name] for w in alone for name in w.requests},
    )


async def run(settings: Settings, commands: Mapping[str, servers.Command] = SERVERS) -> ShareReport:
    """Start the servers, then a window per round and cell on all of them at once."""
    running: dict[str, servers.Served] = {}
    windows: dict[Cell, list[Window]] = {cell: [] for cell in CELLS}
    try:
        for name, command in commands.items():
            port = servers.free_port()
            running[name] = await servers.start(name, command(port), port)
        for number in range(1, settings.rounds + 1):
            print(f"round {number}/{settings.rounds} ...", file=sys.stderr, flush=True)
            for cell in CELLS:
                windows[cell].append(await one_round(running, cell, settings, number))
    finally:
        for served in running.values():
            served.stop()
    return ShareReport(windows)


def table(report: ShareReport) -> str:
    names = list(next(iter(report.windows.values()))[0].cpu_per_request)
    lines = [
        "| access log to a file | "
        + " | ".join(f"{name} CPU µs/req" for name in names)
        + " | its share of the CPU time | quiet against quiet |",
        "|---|" + "--:|" * (len(names) + 2),
    ]
    for cell, windows in report.windows.items():
        cpu = " | ".join(
            f"{statistics.median(w.cpu_per_request[name] for w in windows) * 1e6:.1f}"
            for name in names
        )
        lines.append(
            f"| {cell.label} | {cpu} | {report.share(cell):+.1%} | {report.noise(cell):+.1%} |"
        )
    lines.append("")
    lines.append(
        f"The three servers pinned to core {servers.SERVER_CORE}; at c=1 loaded at once, the "
        "same cell on each, at c=32 one after the other. The share is presa-default's CPU "
        "time per request over quiet presa's, less one, the median of the rounds; quiet "
        "against quiet is the same for a second quiet server: the noise."
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    settings = settings_from(settings_parser("bench.access_share", __doc__).parse_args(argv))
    servers.pin_client()
    print(table(asyncio.run(run(settings))))


if __name__ == "__main__":
    main()
