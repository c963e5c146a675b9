"""What the access log costs a ``tools/call``: its share of the server's CPU time.

A part of ``nox -s bench``, or alone: ``python -m bench.access_share [--quick]``.

Four ``presa-trio serve`` processes a round, all pinned to the server core:
two quiet (``--log-level WARNING``: the access log off) and two as users
run them (the log on, its lines going to a file, the bench's log of that
server). Two processes doing the same work differ by a point or two of CPU
time per request for as long as they live, most of the share's own
size, so each round starts four new ones and the rounds average that out.
Within a round the four are made alike (:func:`alike`): one string hash
seed for all four, a new one each round, and the address space laid out
without randomization, so that their dicts and their memory lie the same
way and what differs between them is the access log.

How a cell loads them, so that whatever else the host does (its slow and
fast spells last seconds) falls on the four alike: in turns, each server
alone on the core for a short slice (:data:`SLICE_S`), in an order that
runs forward then back, until each has been loaded for the window's
length, its connections kept open from slice to slice. Loaded at once,
servers that fill the core take turns on it unevenly (the one that
answers more requests per turn spends less per request); alone, each
runs as it would for its users.

The CPU time each spent per request (the scheduler's count in ns, user +
system: the kernel's side of writing the lines included;
:func:`on_cpu_seconds`) gives, per round:

- **the share**: the logged pair's mean / the quiet pair's mean − 1;
- **the noise**: the second quiet server / the first − 1: how far two
  processes doing the same work differ in the same round.

The table gives the medians over the rounds (twice the bench's rounds:
each is short), the noise beside the share.

On which store (``--store``): ``memory``, the default, or ``postgresql``
(a temporary server: tests/postgres.py), which ``--workers`` needs, or
``sqlite``; each server has a database of its own. A tools/call does not
touch the store, but a durable store's calls run in worker threads, so
there the access log's writer thread is not the process's first, and
the first costs a point of its own (docs/performance.md, "The writer
thread's price").
"""

from __future__ import annotations

import asyncio
import platform
import random
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
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
QUIET, SECOND_QUIET = "presa", "presa again"
LOGGED, SECOND_LOGGED = "presa-default", "presa-default again"
SERVERS: dict[str, servers.Command] = {
    QUIET: servers.presa_command,
    LOGGED: servers.presa_default_command,
    SECOND_QUIET: servers.presa_command,
    SECOND_LOGGED: servers.presa_default_command,
}
#: The stores the servers may serve on (``--store``).
STORES = ("memory", "postgresql", "sqlite")
#: How long a server is loaded alone before the next one takes its turn.
SLICE_S = 0.25


@attrs.frozen
class Window:
    """One round of a cell: CPU seconds per request and requests counted, by server."""

    cpu_per_request: Mapping[str, float]
    requests: Mapping[str, int]

    def over_quiet(self, names: Sequence[str]) -> float:
        """The mean of ``names``' CPU time per request over the quiet pair's, less one."""
        quiet = statistics.mean(self.cpu_per_request[name] for name in (QUIET, SECOND_QUIET))
        return statistics.mean(self.cpu_per_request[name] for name in names) / quiet - 1


@attrs.frozen
class ShareReport:
    # Per cell, one window per round.
    windows: dict[Cell, list[Window]]
    # The store the servers served on (one of STORES).
    store: str

    def share(self, cell: Cell) -> float:
        """The median over the rounds of the logged pair's CPU time per request over the
        quiet pair's, less one."""
        return statistics.median(w.over_quiet((LOGGED, SECOND_LOGGED)) for w in self.windows[cell])

    def noise(self, cell: Cell) -> float:
        """The median over the rounds of the second quiet server's over the first's, less one."""
        return statistics.median(
            w.cpu_per_request[SECOND_QUIET] / w.cpu_per_request[QUIET] - 1
            for w in self.windows[cell]
        )


def on_cpu_seconds(served: servers.Served) -> float:
    """The CPU time of ``served``'s threads, in nanoseconds where Linux gives them.

    psutil reads ``/proc/PID/stat``, in clock ticks (10 ms) charged to
    whichever process the timer finds running: a server loaded in turns of
    a quarter second would be charged by where its ticks happened to fall.
    The scheduler's own count
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


async def load_for(clients: load.Clients, seconds: float) -> int:
    """Every one of ``clients`` sends its request back to back for ``seconds``: the answers.

    The requests still out when the time is up are awaited, so the server
    is idle again when this returns.
    """
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    answered = 0

    async def drive(roundtrip: load.Roundtrip) -> None:
        nonlocal answered
        while loop.time() < until:
            response = await roundtrip()
            if not ok_response(response):
                raise RuntimeError(f"a failed response: HTTP {response.status}")
            answered += 1

    await asyncio.gather(*(drive(roundtrip) for roundtrip in clients.roundtrips))
    return answered


async def window_in_turns(
    running: Mapping[str, servers.Served], cell: Cell, settings: Settings
) -> Window:
    """One window of ``cell``: each server alone on the core, in turns of :data:`SLICE_S`.

    The order runs forward then back, so a drift over the window falls on
    every server alike; each is loaded for ``settings.duration`` in all.
    """
    request = {
        name: mcp.http_request(served.port, cell.method, cell.params)
        for name, served in running.items()
    }
    clients = {
        name: await load.connections("127.0.0.1", served.port, request[name], cell.concurrency)
        for name, served in running.items()
    }
    order = [*running, *reversed(list(running))]
    requests = dict.fromkeys(running, 0)
    try:
        for name in running:
            await load_for(clients[name], settings.warmup)
        start = {name: on_cpu_seconds(served) for name, served in running.items()}
        for _ in range(max(1, round(settings.duration / (2 * SLICE_S)))):
            for name in order:
                requests[name] += await load_for(clients[name], SLICE_S)
        end = {name: on_cpu_seconds(served) for name, served in running.items()}
    finally:
        await asyncio.gather(*(opened.close() for opened in clients.values()))
    return Window(
        {name: (end[name] - start[name]) / max(1, requests[name]) for name in running},
        requests,
    )


def alike(seed: int) -> list[str]:
    """What a round's servers are started under, so that they differ only in their work.

    - ``PYTHONHASHSEED``: the string hash seed. It decides where every key
      lies in every dict and set, and with it how often lookups collide;
      each process draws its own at random, one of the ways in which two
      processes doing the same work differ. One seed for the round's
      servers, a new one each round: the rounds average over seeds.
    - ``setarch -R`` (where there is one): no address space layout
      randomization, so that code and heap lie at the same addresses in
      each, and so fall on the caches alike.

    How much this narrows the rounds' spread is in docs/performance.md,
    "Scaling out and the access log".
    """
    prefix = ["env", f"PYTHONHASHSEED={seed}"]
    if shutil.which("setarch"):
        prefix += ["setarch", platform.machine(), "-R"]
    return prefix


async def one_round(
    commands: Mapping[str, servers.Command], settings: Settings
) -> dict[Cell, Window]:
    """New servers, alike but for their work (:func:`alike`), a window of each cell on
    them, then stopped."""
    running: dict[str, servers.Served] = {}
    # PYTHONHASHSEED takes 0 (no hashing at random) to 2**32 - 1.
    prefix = alike(random.randrange(1, 2**32))
    try:
        for name, command in commands.items():
            port = servers.free_port()
            running[name] = await servers.start(name, [*prefix, *command(port)], port)
        return {cell: await window_in_turns(running, cell, settings) for cell in CELLS}
    finally:
        for served in running.values():
            served.stop()
            served.log_path.unlink(missing_ok=True)


@contextmanager
def store_urls(store: str) -> Iterator[Callable[[int], str] | None]:
    """A new store URL per server (by its port) on ``store``, or None for ``memory``."""
    if store == "memory":
        yield None
    elif store == "sqlite":
        with tempfile.TemporaryDirectory(prefix="presa-share-") as directory:
            yield lambda port: f"sqlite:///{directory}/tasks-{port}.db"
    else:
        from tests.postgres import temporary_postgresql

        with temporary_postgresql() as server:
            yield lambda port: server.new_database()


def on_store(command: servers.Command, url_for: Callable[[int], str]) -> servers.Command:
    """``command`` serving on the store ``url_for`` gives its port."""

    def with_store(port: int) -> list[str]:
        return [*command(port), "--store", url_for(port)]

    return with_store


async def run(settings: Settings, store: str = "memory") -> ShareReport:
    """A round after another, each on new servers on ``store``: twice the bench's rounds."""
    windows: dict[Cell, list[Window]] = {cell: [] for cell in CELLS}
    rounds = 2 * settings.rounds
    with store_urls(store) as url_for:
        commands = SERVERS
        if url_for is not None:
            commands = {name: on_store(command, url_for) for name, command in SERVERS.items()}
        for number in range(1, rounds + 1):
            print(f"round {number}/{rounds} ({store}) ...", file=sys.stderr, flush=True)
            for cell, window in (await one_round(commands, settings)).items():
                windows[cell].append(window)
    return ShareReport(windows, store)


def table(report: ShareReport) -> str:
    names = list(next(iter(report.windows.values()))[0].cpu_per_request)
    lines = [
        f"| access log to a file, {report.store} store | "
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
        f"Four new servers a round, pinned to core {servers.SERVER_CORE}, with one hash seed "
        f"and no address randomization, each loaded alone in turns of {SLICE_S} s. The share "
        "is the presa-default pair's CPU time per request over the quiet pair's, less one, "
        "the median of the rounds; quiet against quiet is the second quiet server's over the "
        "first's: the noise."
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = settings_parser("bench.access_share", __doc__)
    parser.add_argument("--store", choices=STORES, default="memory", help="the servers' store")
    args = parser.parse_args(argv)
    servers.pin_client()
    print(table(asyncio.run(run(settings_from(args), args.store))))


if __name__ == "__main__":
    main()
