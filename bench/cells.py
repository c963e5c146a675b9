"""One measured load (a cell), what it measured, and rounds that pair servers.

A cell is a method at a concurrency over one protocol; :func:`measure`
drives it against a running server for one window and reads the server's
CPU clock and this process's (the load client's) at the window's edges.
:func:`alternate` measures every cell on several servers, round after
round, flipping their order each round, so the figures of one round were
taken back to back on the same machine; :func:`paired_ratio` then gives
the median of the rounds' ratios, which cancels most of what other
processes do to the machine. ``bench.run`` and ``bench.scaleout`` both
measure this way.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from bench import h2load, instructions, load, mcp, servers


@attrs.frozen(eq=False)
class Cell:
    """One measured load: a method at a concurrency, over HTTP/1.1 or HTTP/2.

    Over HTTP/1.1 the concurrency is that many keep-alive connections; over
    HTTP/2 (``h2``) it is that many streams on one connection.
    """

    method: str
    params: dict[str, Any] | None
    concurrency: int
    # What a correct result must carry, checked once before the load.
    expect: str
    protocol: str = "http/1.1"

    @property
    def label(self) -> str:
        name = f" {self.params['name']}" if self.params and "name" in self.params else ""
        if self.protocol == "h2":
            return f"{self.method}{name} h2 streams={self.concurrency}"
        return f"{self.method}{name} c={self.concurrency}"


CALL = {"name": "test_simple_text", "arguments": {}}


@attrs.frozen
class Figures:
    """What one window measured for one server and cell."""

    rate: float
    p50: float
    p90: float
    p99: float
    # Server CPU seconds (user + system) per request.
    cpu_per_request: float
    errors: int
    # The load client's own CPU seconds per request (this process).
    client_cpu_per_request: float = 0.0

    @property
    def client_busy(self) -> float:
        """The share of its core the load client used: near 1, it was the bottleneck."""
        return self.client_cpu_per_request * self.rate

    @property
    def server_cores(self) -> float:
        """The cores' worth of CPU time the server side used over the window."""
        return self.cpu_per_request * self.rate


@attrs.frozen
class Settings:
    rounds: int
    warmup: float
    duration: float
    quick: bool
    # Also count instructions per request under callgrind (bench.instructions).
    instructions: bool = False


def settings_parser(prog: str, description: str | None) -> argparse.ArgumentParser:
    """The options every entry of the bench takes: ``--quick``, ``--rounds``, ``--duration``."""
    parser = argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="one short round")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--duration", type=float, default=None, help="seconds per window")
    return parser


def settings_from(args: argparse.Namespace, *, instructions: bool = False) -> Settings:
    """The settings :func:`settings_parser`'s options ask for: three rounds of 5 s by default."""
    if args.quick:
        return Settings(args.rounds or 1, 0.5, args.duration or 1.5, True, instructions)
    return Settings(args.rounds or 3, 1.0, args.duration or 5.0, False, instructions)


def median_figures(runs: Sequence[Figures]) -> Figures:
    def mid(pick: Callable[[Figures], float]) -> float:
        return statistics.median(pick(run) for run in runs)

    return Figures(
        mid(lambda f: f.rate),
        mid(lambda f: f.p50),
        mid(lambda f: f.p90),
        mid(lambda f: f.p99),
        mid(lambda f: f.cpu_per_request),
        sum(run.errors for run in runs),
        mid(lambda f: f.client_cpu_per_request),
    )


def ok_response(response: load.Response) -> bool:
    return response.status == 200 and b'"result":' in response.body


async def measure(served: servers.Measured, cell: Cell, settings: Settings) -> Figures:
    send, close = instructions.sender(cell.protocol, served.port, cell.method, cell.params)
    try:
        first = await send()
    finally:
        await close()
    result = mcp.result_of(first.body) if first.status == 200 else {}
    if cell.expect not in result and served.name.startswith("presa"):
        raise RuntimeError(f"{served.name} {cell.label}: unexpected answer {first.body[:300]!r}")
    cpu: dict[str, float] = {}
    client_cpu: dict[str, float] = {}

    def on_window(edge: str) -> None:
        cpu[edge] = served.cpu_seconds()
        client_cpu[edge] = time.process_time()

    if cell.protocol == "h2":
        request = mcp.h2_request(served.port, cell.method, cell.params)
        clients = await h2load.streams("127.0.0.1", served.port, request, cell.concurrency)
    else:
        raw = mcp.http_request(served.port, cell.method, cell.params)
        clients = await load.connections("127.0.0.1", served.port, raw, cell.concurrency)
    outcome = await load.closed_loop(
        clients,
        warmup=settings.warmup,
        duration=settings.duration,
        check=ok_response,
        on_window=on_window,
    )
    if outcome.errors:
        raise RuntimeError(f"{served.name} {cell.label}: {outcome.errors} failed responses")
    return Figures(
        outcome.rate,
        outcome.percentile(0.50),
        outcome.percentile(0.90),
        outcome.percentile(0.99),
        (cpu["end"] - cpu["start"]) / max(1, outcome.requests),
        outcome.errors,
        (client_cpu["end"] - client_cpu["start"]) / max(1, outcome.requests),
    )


async def measure_server(
    name: str, command: Callable[[int], list[str]], cells: Sequence[Cell], settings: Settings
) -> dict[Cell, Figures]:
    """Start one server, run every cell against it once, stop it."""
    port = servers.free_port()
    served = await servers.start(name, command(port), port)
    try:
        return {cell: await measure(served, cell, settings) for cell in cells}
    finally:
        served.stop()


#: Per server, per cell: one Figures per round.
Rounds = dict[str, dict[Cell, list[Figures]]]


async def alternate(
    running: Mapping[str, servers.Measured],
    cells: Sequence[Cell],
    settings: Settings,
    takes: Mapping[str, Sequence[Cell]] | None = None,
) -> Rounds:
    """Every cell on every running server, round after round; the figures by server and cell.

    Only one server is loaded at a time. Within a round each cell is
    measured on every server that ``takes`` it (all of them by default),
    back to back, in an order that flips every round, so both figures of
    a pair see the same machine.
    """
    takes = takes or dict.fromkeys(running, cells)
    rounds: Rounds = {name: {cell: [] for cell in takes[name]} for name in running}
    for number in range(1, settings.rounds + 1):
        print(f"round {number}/{settings.rounds} ...", file=sys.stderr, flush=True)
        order = list(running) if number % 2 else list(reversed(list(running)))
        for cell in cells:
            for name in order:
                if cell in rounds[name]:
                    rounds[name][cell].append(await measure(running[name], cell, settings))
    return rounds


def paired_ratio(over: Sequence[Figures], name: Sequence[Figures]) -> tuple[float, float]:
    """``name``/``over`` for req/s and for p99: the median of the rounds' paired ratios."""
    pairs = list(zip(over, name, strict=True))
    return (
        statistics.median(theirs.rate / ours.rate for ours, theirs in pairs),
        statistics.median(theirs.p99 / ours.p99 for ours, theirs in pairs),
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"
