"""``--workers`` and HAProxy: ``tools/call`` on both cores, and through a proxy.

A part of ``nox -s bench``, or alone: ``python -m bench.scaleout [--quick]``.
It runs on a temporary PostgreSQL (tests/postgres.py), since more than one
worker needs a store they share; ``--workers 1`` runs on it too, so the two
differ only in their number of processes. A ``tools/call`` of
``test_simple_text`` never touches the store.

Nothing is pinned here: the servers, HAProxy, PostgreSQL and this process's
load client share the machine's cores as they would on a host of that
size. So the table gives, beside each rate, the CPU time each side took
over the window in cores (CPU seconds per second): what the load client
takes, the servers could not have.

The servers, each measured at c=1 and c=32 over HTTP/1.1, in rounds that
alternate between them as the main table's do (:func:`bench.cells.alternate`):

- the floor (``bench.floor``, one process);
- ``presa-trio serve --workers 1`` and ``--workers 2``, their access log
  off as the main table's quiet presa: each against the floor, and two
  workers against one;
- HAProxy (the distribution's package, tests/haproxy.py), the recipe
  docs/haproxy.cfg with one server, in front of the ``--workers 1``
  process: against that process direct, the ratio is what the proxy costs.
  HAProxy's CPU time is counted with its server's. Where HAProxy cannot be
  had, that row is left out and the reason printed.

After the rounds, the counts check (:mod:`bench.counts`) runs on the same
PostgreSQL with ``--workers 2``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import attrs

from bench import counts, servers
from bench.cells import (
    CALL,
    Cell,
    Rounds,
    Settings,
    alternate,
    median_figures,
    ms,
    paired_ratio,
    settings_from,
    settings_parser,
)
from bench.load import Connection
from tests.haproxy import HaproxyMissing, installed_haproxy, recipe

CELLS = [Cell("tools/call", CALL, 1, "content"), Cell("tools/call", CALL, 32, "content")]
FLOOR = "floor"
ONE, TWO = "presa --workers 1", "presa --workers 2"
PROXIED = "presa via HAProxy"
#: Each row's pair, and how the ratio reads.
PAIRS = {
    ONE: (FLOOR, "× floor"),
    TWO: (ONE, "× one worker"),
    PROXIED: (ONE, "× direct"),
}
#: How long HAProxy may take to find its server ready, in seconds.
READY_TIMEOUT = 20.0


@attrs.frozen
class ScaleReport:
    rounds: Rounds
    # Why nothing was measured; empty when the rounds ran.
    reason: str = ""
    # Why HAProxy's row is missing; empty when it was measured.
    proxy_missing: str = ""
    check: counts.Counts | None = None


@attrs.frozen
class Proxied:
    """HAProxy in front of ``backend``: loads go to HAProxy; the CPU time is both's."""

    name: str
    proxy: servers.Served
    backend: servers.Served

    @property
    def port(self) -> int:
        return self.proxy.port

    def cpu_seconds(self) -> float:
        return self.proxy.cpu_seconds() + self.backend.cpu_seconds()


def presa_workers(workers: int, store: str) -> servers.Command:
    """``presa-trio serve --workers N`` on ``store``, its access log off."""

    def command(port: int) -> list[str]:
        return [*servers.presa_command(port), "--store", store, "--workers", str(workers)]

    return command


async def start_proxy(haproxy: str, backend: servers.Served, directory: Path) -> Proxied:
    """HAProxy by the recipe in front of ``backend``, once it forwards to it."""
    port = servers.free_port()
    config = directory / "haproxy.cfg"
    config.write_text(recipe(port, [backend.port]))
    proxy = await servers.start("haproxy", [haproxy, "-db", "-f", str(config)], port, core=None)
    try:
        await until_ready(port)
    except BaseException:
        proxy.stop()
        raise
    return Proxied(PROXIED, proxy, backend)


async def until_ready(port: int) -> None:
    """Until ``GET /readyz`` through ``port`` answers 200: HAProxy's checks found the server."""
    request = b"GET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n"
    async with asyncio.timeout(READY_TIMEOUT):
        while True:
            connection = await Connection.open("127.0.0.1", port)
            try:
                if (await connection.roundtrip(request)).status == 200:
                    return
            finally:
                await connection.close()
            await asyncio.sleep(0.1)


def proxy_binary() -> tuple[str, str]:
    """HAProxy's binary and, if it cannot be had, why not (then the binary is empty)."""
    try:
        return installed_haproxy(), ""
    except HaproxyMissing as missing:
        return "", str(missing)


async def run(settings: Settings) -> ScaleReport:
    try:
        from tests.postgres import temporary_postgresql
    except ImportError as error:
        reason = f"no PostgreSQL harness ({error}); install '.[test]'"
        return ScaleReport({}, reason, check=await counts.run(settings, "memory:", workers=1))
    haproxy, proxy_missing = proxy_binary()
    with (
        temporary_postgresql() as database,
        servers.unpinned_client(),
        tempfile.TemporaryDirectory(prefix="bench-haproxy-") as directory,
    ):
        commands = {
            FLOOR: servers.floor_command,
            ONE: presa_workers(1, database.new_database()),
            TWO: presa_workers(2, database.new_database()),
        }
        started: list[servers.Served] = []
        running: dict[str, servers.Measured] = {}
        try:
            for name, command in commands.items():
                port = servers.free_port()
                started.append(await servers.start(name, command(port), port, core=None))
                running[name] = started[-1]
            if haproxy:
                proxied = await start_proxy(haproxy, started[1], Path(directory))
                started.append(proxied.proxy)
                running[PROXIED] = proxied
            rounds = await alternate(running, CELLS, settings)
        finally:
            for served in started:
                served.stop()
        print("metrics, access log and load counts (--workers 2) ...", file=sys.stderr)
        check = await counts.run(settings, database.new_database(), workers=2)
    return ScaleReport(rounds, proxy_missing=proxy_missing, check=check)


def table(report: ScaleReport) -> str:
    checked = "" if report.check is None else "\n\n" + counts.table(report.check)
    if report.reason:
        return f"--workers and HAProxy: {report.reason}.{checked}"
    cores = os.cpu_count() or 1
    lines = [
        "| tools/call | server | req/s | p50 ms | p99 ms | server cores | client cores "
        "| req/s paired |",
        "|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for cell in CELLS:
        for name, by_cell in report.rounds.items():
            f = median_figures(by_cell[cell])
            paired = ""
            if name in PAIRS:
                over, reads = PAIRS[name]
                paired = f"{paired_ratio(report.rounds[over][cell], by_cell[cell])[0]:.2f} {reads}"
            lines.append(
                f"| c={cell.concurrency} | {name} | {f.rate:,.0f} | {ms(f.p50)} | {ms(f.p99)} "
                f"| {f.server_cores:.2f} | {f.client_busy:.2f} | {paired} |"
            )
    lines.append("")
    lines.append(
        f"Nothing pinned: servers, HAProxy, PostgreSQL and the load client share {cores} cores. "
        "Cores are CPU seconds per second over the window (psutil; a server's workers and "
        "HAProxy counted with it); the client's are what the servers could not use. The "
        "paired ratios are the medians of the rounds' ratios, each pair measured back to back."
    )
    if report.proxy_missing:
        lines.append(f"HAProxy left out: {report.proxy_missing}.")
    return "\n".join(lines) + checked


def main(argv: Sequence[str] | None = None) -> None:
    settings = settings_from(settings_parser("bench.scaleout", __doc__).parse_args(argv))
    servers.pin_client()
    print(table(asyncio.run(run(settings))))


if __name__ == "__main__":
    main()
