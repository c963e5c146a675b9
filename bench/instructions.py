"""Instructions per request under callgrind: a ratio that machine noise cannot move.

Wall-clock figures on a shared two-core machine swing with whatever else
runs there; the number of instructions a server executes per request does
not. With ``--instructions`` (and valgrind installed), each server runs under
``valgrind --tool=callgrind``; after a warm-up, ``callgrind_control --dump``
marks the start, N requests go out one at a time (concurrency 1, so the
work per request does not depend on how requests batch), and a second dump
marks the end. The second dump holds exactly those N requests.

Instructions are not seconds (a cache miss costs more than an add), but
the same interpreter runs the same kind of work in both servers, so the
ratio tracks the CPU ratio closely and is repeatable to about 0.1 %.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import attrs

from bench import load, mcp, servers

WARMUP = 100


def available() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


@attrs.frozen
class Count:
    server: str
    method: str
    per_request: float


def dumped_total(path: Path) -> tuple[str, int]:
    """The trigger description and the instruction total of one callgrind dump."""
    trigger, total = "", 0
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("desc: Trigger:"):
            trigger = line
        elif line.startswith(("summary:", "totals:")):
            total = int(line.split()[1])
    return trigger, total


async def count(
    name: str, command: Callable[[int], list[str]], method: str, requests: int, core: int
) -> Count:
    """Instructions per ``method`` request of one server, at concurrency 1."""
    port = servers.free_port()
    with tempfile.TemporaryDirectory(prefix="bench-callgrind-") as scratch:
        out = Path(scratch) / "callgrind.out"
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command(port)]
        served = await servers.start(name, argv, port, ready_timeout=300, core=core)
        try:
            params = (
                {"name": "test_simple_text", "arguments": {}} if method == "tools/call" else None
            )
            request = mcp.http_request(port, method, params)
            pool = load.Pool("127.0.0.1", port)
            for _ in range(WARMUP):
                await pool.roundtrip(request)
            await dump(served, "before")
            for _ in range(requests):
                response = await pool.roundtrip(request)
                if response.status != 200 or b'"result":' not in response.body:
                    raise RuntimeError(f"{name} {method}: {response.body[:200]!r}")
            await dump(served, "after")
            await pool.close()
        finally:
            served.process.kill()
            served.process.wait()
        totals = read_dumps(Path(scratch))
    after = [total for trigger, total in totals if "after" in trigger]
    if not after:
        raise RuntimeError(f"{name} {method}: no callgrind dump marked 'after'")
    return Count(name, method, after[0] / requests)


def read_dumps(directory: Path) -> list[tuple[str, int]]:
    return [dumped_total(path) for path in directory.glob("callgrind.out*")]


async def dump(served: servers.Served, label: str) -> None:
    await asyncio.to_thread(
        subprocess.run,
        ["callgrind_control", f"--dump={label}", str(served.process.pid)],
        check=True,
        capture_output=True,
    )


async def run(requests: int) -> list[Count]:
    """Floor and presa, tools/call and tools/list; two servers at a time, one per core."""
    commands = {"floor": servers.floor_command, "presa": servers.presa_command}
    counts: list[Count] = []
    for method in ("tools/call", "tools/list"):
        print(f"instructions: {method} ...", file=sys.stderr, flush=True)
        counts += await asyncio.gather(
            *(
                count(name, command, method, requests, core)
                for core, (name, command) in enumerate(commands.items())
            )
        )
    return counts


def table(counts: list[Count]) -> str:
    by = {(c.server, c.method): c.per_request for c in counts}
    lines = [
        "| request (c=1, callgrind) | floor instructions | presa instructions | floor/presa |",
        "|---|--:|--:|--:|",
    ]
    for method in ("tools/call", "tools/list"):
        floor, presa = by[("floor", method)], by[("presa", method)]
        lines.append(
            f"| {method} | {floor / 1e6:.3f} M | {presa / 1e6:.3f} M | {floor / presa:.3f} |"
        )
    return "\n".join(lines)
