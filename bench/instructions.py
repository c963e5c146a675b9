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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs

from bench import h2load, load, mcp, servers

#: Sends one request and returns its response; closes what it opened.
Sender = tuple[Callable[[], Awaitable[load.Response]], Callable[[], Awaitable[None]]]

WARMUP = 100
CALL: dict[str, Any] = {"name": "test_simple_text", "arguments": {}}


def available() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


#: The protocols counted: HTTP/1.1 keep-alive and h2c with prior knowledge.
PROTOCOLS = ("http/1.1", "h2")


@attrs.frozen
class Count:
    server: str
    method: str
    protocol: str
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


def sender(protocol: str, port: int, method: str, params: dict[str, Any] | None) -> Sender:
    """Requests sent one at a time over ``protocol``: a send function and a close function.

    A connection the server closed while idle (hypercorn's keep-alive timeout
    runs out while callgrind writes a dump) is opened again, and the request
    it never read is sent again.
    """
    if protocol == "h2":
        request = mcp.h2_request(port, method, params)
        opened: list[h2load.H2Connection] = []

        async def send_h2() -> load.Response:
            if not opened or opened[-1].closed.done():
                opened.append(await h2load.H2Connection.open("127.0.0.1", port))
            try:
                return await opened[-1].roundtrip(*request)
            except ConnectionError:
                opened.append(await h2load.H2Connection.open("127.0.0.1", port))
                return await opened[-1].roundtrip(*request)

        async def close_h2() -> None:
            for connection in opened:
                await connection.close()

        return send_h2, close_h2
    pool = load.Pool("127.0.0.1", port)
    raw = mcp.http_request(port, method, params)

    async def send_http() -> load.Response:
        try:
            return await pool.roundtrip(raw)
        except ConnectionError:
            return await pool.roundtrip(raw)

    return send_http, pool.close


async def count(
    name: str,
    command: Callable[[int], list[str]],
    method: str,
    requests: int,
    core: int,
    protocol: str = "http/1.1",
) -> Count:
    """Instructions per ``method`` request of one server over ``protocol``, at concurrency 1."""
    port = servers.free_port()
    with tempfile.TemporaryDirectory(prefix="bench-callgrind-") as scratch:
        out = Path(scratch) / "callgrind.out"
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command(port)]
        served = await servers.start(name, argv, port, ready_timeout=300, core=core)
        try:
            params = CALL if method == "tools/call" else None
            send, close = sender(protocol, port, method, params)
            for _ in range(WARMUP):
                await send()
            await dump(served, "before")
            for _ in range(requests):
                response = await send()
                if response.status != 200 or b'"result":' not in response.body:
                    raise RuntimeError(f"{name} {method} {protocol}: {response.body[:200]!r}")
            await dump(served, "after")
            await close()
        finally:
            served.process.kill()
            served.process.wait()
        totals = read_dumps(Path(scratch))
    after = [total for trigger, total in totals if "after" in trigger]
    if not after:
        raise RuntimeError(f"{name} {method} {protocol}: no callgrind dump marked 'after'")
    return Count(name, method, protocol, after[0] / requests)


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
    """Floor and presa, tools/call and tools/list, over each protocol; two servers at a time."""
    commands = {"floor": servers.floor_command, "presa": servers.presa_command}
    counts: list[Count] = []
    for protocol in PROTOCOLS:
        for method in ("tools/call", "tools/list"):
            print(f"instructions: {method} over {protocol} ...", file=sys.stderr, flush=True)
            counts += await asyncio.gather(
                *(
                    count(name, command, method, requests, core, protocol)
                    for core, (name, command) in enumerate(commands.items())
                )
            )
    print("instructions: tools/call with the access log on ...", file=sys.stderr, flush=True)
    counts.append(
        await count("presa-default", servers.presa_default_command, "tools/call", requests, 0)
    )
    return counts


def table(counts: list[Count]) -> str:
    by = {(c.server, c.method, c.protocol): c.per_request for c in counts}
    lines = [
        "| request (c=1, callgrind) | protocol | floor instructions | presa instructions "
        "| floor/presa |",
        "|---|---|--:|--:|--:|",
    ]
    for protocol in PROTOCOLS:
        for method in ("tools/call", "tools/list"):
            floor, presa = by[("floor", method, protocol)], by[("presa", method, protocol)]
            lines.append(
                f"| {method} | {protocol} | {floor / 1e6:.3f} M | {presa / 1e6:.3f} M "
                f"| {floor / presa:.3f} |"
            )
    logged = by.get(("presa-default", "tools/call", "http/1.1"))
    if logged is not None:
        quiet = by[("presa", "tools/call", "http/1.1")]
        lines.append("")
        lines.append(
            f"With the default access log on, a tools/call over HTTP/1.1 is {logged / 1e6:.3f} M "
            f"instructions: {logged - quiet:+,.0f} ({logged / quiet - 1:+.1%}) for its line."
        )
    return "\n".join(lines)
