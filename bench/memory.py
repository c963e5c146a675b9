"""``python -m bench.memory``: where ``presa-trio serve``'s resident memory goes.

Two parts, each a child process of its own:

1. **Imports.** A fresh interpreter imports the server's modules group by
   group, in the order the server needs them, and reads its resident set
   (``VmRSS``) after each group; then it builds the demo server, as
   ``serve`` does. A group's figure is what it adds on top of the ones
   before it, shared libraries' pages included.
2. **Load.** ``presa-trio serve`` as ``nox -s bench`` starts it takes the
   bench's cells (``tools/call`` and ``tools/list`` at c=1 and c=32, over
   HTTP/1.1 and h2) one after the other; the kernel's high-water mark
   (``VmHWM``) is read at idle and after each cell. The last one is the
   figure the bench's "presa peak RSS under load" target is checked on.

Run: ``python -m bench.memory [--duration S]`` (default 10 s a cell).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from pathlib import Path

from bench import servers
from bench.cells import Settings, measure
from bench.run import CELLS

MIB = 1024 * 1024
#: The groups, in import order; later groups add what the earlier ones did not bring.
GROUPS = (
    ("standard library the server uses", ("argparse", "json", "logging", "typing")),
    ("trio (ssl, hashlib, ctypes, subprocess with it)", ("trio",)),
    ("attrs, cattrs", ("attrs", "cattrs", "cattrs.preconf.json")),
    ("jsonschema_rs", ("jsonschema_rs",)),
    ("hypercorn, h11, h2, wsproto", ("hypercorn.config", "hypercorn.trio.run")),
    ("presa_trio.wire, server, tasks", ("presa_trio.server", "presa_trio.tasks.extension")),
    ("presa_trio.http, demo, cli", ("presa_trio.http.serving", "presa_trio.cli.main")),
)
IMPORTS = f"""
import importlib, sys
def rss():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
print("interpreter", rss(), len(sys.modules), sep="\\t")
for name, modules in {GROUPS!r}:
    for module in modules:
        importlib.import_module(module)
    print(name, rss(), len(sys.modules), sep="\\t")
from presa_trio.demo import build_server
from presa_trio.cli.collector import settle_for_serving
build_server()
settle_for_serving()
print("the demo server built (its tool schemas compiled)", rss(), len(sys.modules), sep="\\t")
"""


def import_table() -> str:
    """Resident memory added by each group of the server's imports, in a fresh process."""
    lines = subprocess.run(
        [sys.executable, "-c", IMPORTS], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    rows = ["| imported | adds MiB | total MiB | modules |", "|---|--:|--:|--:|"]
    before = 0
    for line in lines:
        name, rss, modules = line.split("\t")
        rows.append(
            f"| {name} | {(int(rss) - before) / MIB:.1f} | {int(rss) / MIB:.1f} | {modules} |"
        )
        before = int(rss)
    return "\n".join(rows)


def high_water(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM: Linux only")


async def load_table(duration: float) -> str:
    """``presa-trio serve``'s high-water mark at idle and after each of the bench's cells."""
    servers.pin_client()
    port = servers.free_port()
    served = await servers.start("presa", servers.presa_command(port), port)
    rows = ["| after | req/s | peak RSS MiB |", "|---|--:|--:|"]
    try:
        await asyncio.sleep(0.5)
        rows.append(f"| start (idle) | | {high_water(served.process.pid) / MIB:.1f} |")
        for cell in CELLS:
            figures = await measure(served, cell, Settings(1, 1.0, duration, False))
            peak = high_water(served.process.pid)
            rows.append(f"| {cell.label} | {figures.rate:,.0f} | {peak / MIB:.1f} |")
    finally:
        served.stop()
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per cell")
    args = parser.parse_args()
    print(import_table())
    print()
    print(asyncio.run(load_table(args.duration)))


if __name__ == "__main__":
    main()
