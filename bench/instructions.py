"""Instructions per request under callgrind: a ratio that machine noise cannot move.

Wall-clock figures on a shared two-core machine swing with whatever else
runs there; the number of instructions a server executes per request does
not. With ``--instructions`` (and valgrind installed), each server runs under
``valgrind --tool=callgrind``; after a warm-up, ``callgrind_control --dump``
marks the start, N requests go out one at a time (concurrency 1, so the
work per request does not depend on how requests batch), and a second dump
marks the end. The second dump holds exactly those N requests.

One task creation is counted the same way, against the floor's ``tools/call``
(:func:`count_creation`): a ``tools/call`` that declares the Tasks extension
and creates a ``bench_return`` task on the memory store, which its worker
runs and completes before the next request comes. The timed creation rate
of bench/tasks.py runs at concurrency 32 beside whatever else the machine
does; this count says whether a creation itself got dearer.

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
#: One task creation: ``bench_return`` (bench.presa_server) is created, run and completed.
CREATION: dict[str, Any] = {"name": "bench_return", "arguments": {}}


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


def sender(
    protocol: str,
    port: int,
    method: str,
    params: dict[str, Any] | None,
    capabilities: dict[str, Any] | None = None,
) -> Sender:
    """Requests sent one at a time over ``protocol``: a send function and a close function.

    A connection the server closed while idle (hypercorn's keep-alive timeout
    runs out while callgrind writes a dump) is opened again, and the request
    it never read is sent again.
    """
    if protocol == "h2":
        if capabilities is not None:
            raise ValueError("requests over h2 are counted with the plain capabilities only")
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
    raw = mcp.http_request(port, method, params, capabilities=capabilities)

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
    *,
    params: dict[str, Any] | None = None,
    capabilities: dict[str, Any] | None = None,
    answer: bytes = b'"result":',
    pause: float = 0.0,
) -> Count:
    """Instructions per ``method`` request of one server over ``protocol``, at concurrency 1.

    ``params`` default to :data:`CALL` for ``tools/call``; each response must contain
    ``answer``. With ``pause``, each request waits that many seconds after the last
    response, so whatever the server does after answering ends before the next comes.
    """
    port = servers.free_port()
    if params is None and method == "tools/call":
        params = CALL
    with tempfile.TemporaryDirectory(prefix="bench-callgrind-") as scratch:
        out = Path(scratch) / "callgrind.out"
        argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command(port)]
        served = await servers.start(name, argv, port, ready_timeout=300, core=core)
        try:
            send, close = sender(protocol, port, method, params, capabilities)
            for _ in range(WARMUP):
                await send()
            await dump(served, "before")
            for _ in range(requests):
                await asyncio.sleep(pause)
                response = await send()
                if response.status != 200 or answer not in response.body:
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


#: Seconds each counted creation waits after the last answer: its worker's steps, even
#: under callgrind on a loaded machine, take a few milliseconds.
CREATION_PAUSE = 0.02


def presa_tasks_command(port: int) -> list[str]:
    """The Tasks bench's server (``bench.presa_server``) on the memory store, leased for an hour.

    With the default 30 s lease, renewal and recovery (which reads every stored
    task) run every 10 and 15 s, so the count would grow with however long the
    machine's load makes the measured window; with an hour's lease they run once, at start.
    """
    return servers.presa_tasks_command(port, servers.free_port(), "memory:", "--task-lease", "3600")


async def count_creation(
    requests: int, core: int = 0, command: Callable[[int], list[str]] = presa_tasks_command
) -> Count:
    """Instructions per task creation: ``bench_return`` as a task, created and completed.

    The request declares the Tasks extension, so each answer is a
    ``CreateTaskResult``. The task's worker runs after the answer has gone:
    each creation waits :data:`CREATION_PAUSE` after the last answer, so the
    last worker has finished and the server is idle when the next request
    comes, and every creation's whole work falls inside the dumps. How the
    creations' Trio steps fall into turns of the run loop still depends on
    timing, so this count moves by about 1 % between runs, ten times the
    spread of a ``tools/call``: compare it within one run.
    """
    return await count(
        "presa-tasks",
        command,
        "tools/call",
        requests,
        core,
        params=CREATION,
        capabilities=mcp.TASK_CAPABILITIES,
        answer=b'"resultType":"task"',
        pause=CREATION_PAUSE,
    )


def read_dumps(directory: Path) -> list[tuple[str, int]]:
    return [dumped_total(path) for path in directory.glob("callgrind.out*")]


def mark(pid: int, label: str) -> None:
    """Dump process ``pid``'s callgrind counts so far under ``label`` and start them again."""
    command = ["callgrind_control", f"--dump={label}", str(pid)]
    subprocess.run(command, check=True, capture_output=True)


async def dump(served: servers.Served, label: str) -> None:
    await asyncio.to_thread(mark, served.process.pid, label)


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
    print("instructions: one task creation on the memory store ...", file=sys.stderr, flush=True)
    counts += await asyncio.gather(
        count("presa-default", servers.presa_default_command, "tools/call", requests, 0),
        count_creation(requests, 1),
    )
    print("instructions: the SDK's MCPServer, tools/call ...", file=sys.stderr, flush=True)
    counts.append(await count("sdk", servers.sdk_command, "tools/call", requests, 0))
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
    creation = by.get(("presa-tasks", "tools/call", "http/1.1"))
    if creation is not None:
        floor = by[("floor", "tools/call", "http/1.1")]
        lines.append(
            f"| task creation (bench_return as a task, memory store) against the floor's "
            f"tools/call | http/1.1 | {floor / 1e6:.3f} M | {creation / 1e6:.3f} M "
            f"| {floor / creation:.3f} |"
        )
    logged = by.get(("presa-default", "tools/call", "http/1.1"))
    if logged is not None:
        quiet = by[("presa", "tools/call", "http/1.1")]
        lines.append("")
        lines.append(
            f"With the default access log on, a tools/call over HTTP/1.1 is {logged / 1e6:.3f} M "
            f"instructions: {logged - quiet:+,.0f} ({logged / quiet - 1:+.1%}) for its line. "
            "Reported, not judged: under callgrind a request lasts a tenth of a second, so the "
            "log's writer, which wakes once a second, is charged to ten requests rather than to "
            "the thousand it serves at full speed; the access log's target is judged by CPU "
            "time (bench.access_share)."
        )
    sdk = by.get(("sdk", "tools/call", "http/1.1"))
    if sdk is not None and logged is not None:
        floor = by[("floor", "tools/call", "http/1.1")]
        lines.append(
            f"The SDK's MCPServer (uvicorn, its access log on) takes {sdk / 1e6:.3f} M per "
            f"tools/call: SDK/presa-default {sdk / logged:.3f}, SDK/floor {sdk / floor:.3f} "
            "(the most any hypercorn-Trio app can be ahead of it by doing less)."
        )
    return "\n".join(lines)
