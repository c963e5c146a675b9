"""Starting the servers under test, pinned, and reading their clocks and memory.

Each server is a child process on loopback. Where ``taskset`` (util-linux)
exists and the machine has two cores or more, the server is pinned to core 0
and the bench process, which runs the load client, to core 1, so the two
never compete for a core; a part that measures what more cores do runs
everything unpinned (:func:`unpinned_client`). CPU time and memory come from
psutil; a server's CPU time counts its child processes' too (``--workers``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import attrs
import psutil

# Re-exported: one free-port probe for the whole repository.
from tests.postgres import free_port as free_port

SERVER_CORE = 0
CLIENT_CORE = 1

#: A server's command line, given the port it is to serve on.
Command = Callable[[int], list[str]]


def pinning_available() -> bool:
    return shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2


def pin_client() -> None:
    """Move this process (the load client) to its own core."""
    if pinning_available() and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {CLIENT_CORE})


@contextmanager
def unpinned_client() -> Iterator[None]:
    """This process (the load client) free to run on every core for the block."""
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, range(os.cpu_count() or 1))
    try:
        yield
    finally:
        os.sched_setaffinity(0, pinned)


class Measured(Protocol):
    """What a load is measured against: a name, a port, and the CPU time spent serving."""

    @property
    def name(self) -> str: ...

    @property
    def port(self) -> int: ...

    def cpu_seconds(self) -> float: ...


@attrs.define(eq=False)
class Served:
    """A running server process and its resource counters."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    handle: psutil.Process = attrs.field(init=False)
    # The highest RSS this bench saw by sampling, for systems without VmHWM.
    sampled_peak: int = 0

    def __attrs_post_init__(self) -> None:
        self.handle = psutil.Process(self.process.pid)

    def cpu_seconds(self) -> float:
        """User and system CPU seconds of the process and of its children now running."""
        total = 0.0
        for process in [self.handle, *self.handle.children(recursive=True)]:
            try:
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def rss(self) -> int:
        value = self.handle.memory_info().rss
        self.sampled_peak = max(self.sampled_peak, value)
        return value

    def peak_rss(self) -> int:
        """The kernel's high-water mark of resident memory (Linux ``VmHWM``)."""
        status = Path(f"/proc/{self.process.pid}/status")
        if status.exists():
            for line in status.read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return max(self.sampled_peak, self.rss())

    async def sample_rss(self, every: float = 0.05) -> None:
        """Keep ``sampled_peak`` current until cancelled."""
        while True:
            self.rss()
            await asyncio.sleep(every)

    def log_tail(self, lines: int = 20) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def launch(name: str, command: Sequence[str], port: int, core: int | None = SERVER_CORE) -> Served:
    """Start ``command``, pinned to ``core`` when possible (``None``: unpinned); output to a
    log file."""
    argv = list(command)
    if core is not None and pinning_available():
        argv = ["taskset", "-c", str(core), *argv]
    log_file = tempfile.NamedTemporaryFile(  # noqa: SIM115 - lives as long as the server
        prefix=f"bench-{name}-", suffix=".log", delete=False
    )
    # The children import ``bench`` from this checkout, whatever the working directory.
    root = str(Path(__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    process = subprocess.Popen(
        argv, stdout=log_file, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": path}
    )
    return Served(name, port, process, Path(log_file.name))


async def start(
    name: str,
    command: Sequence[str],
    port: int,
    *,
    ready_timeout: float = 20,
    core: int | None = SERVER_CORE,
) -> Served:
    """Launch ``command`` and wait until ``port`` accepts connections."""
    served = launch(name, command, port, core)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ready_timeout
    while True:
        if served.process.poll() is not None:
            code = served.process.returncode
            raise RuntimeError(f"{name} exited with {code}:\n{served.log_tail()}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if loop.time() > deadline:
                served.stop()
                raise RuntimeError(
                    f"{name} did not listen on {port}:\n{served.log_tail()}"
                ) from None
            await asyncio.sleep(0.05)
            continue
        writer.close()
        await writer.wait_closed()
        return served


def floor_command(port: int) -> list[str]:
    return [sys.executable, "-m", "bench.floor", "--port", str(port)]


def raw_command(port: int) -> list[str]:
    return [sys.executable, "-m", "bench.raw", "--port", str(port)]


def presa_command(port: int) -> list[str]:
    """``presa-trio serve`` as installed in this environment.

    At WARNING, so without the access log: the floor logs no request either.
    """
    return [
        *[sys.executable, "-m", "presa_trio", "serve", "--host", "127.0.0.1"],
        *["--port", str(port), "--log-level", "WARNING"],
    ]


def presa_default_command(port: int) -> list[str]:
    """``presa-trio serve`` as a user runs it: the default log level, so the access log is on.

    Its lines go where the bench sends every server's output: a log file.
    """
    return [
        *[sys.executable, "-m", "presa_trio", "serve", "--host", "127.0.0.1"],
        *["--port", str(port)],
    ]


def sdk_command(port: int) -> list[str]:
    """The official SDK's ``MCPServer`` serving the same tool as its docs run it."""
    return [sys.executable, "-m", "bench.sdk_server", "--port", str(port)]


def presa_tasks_command(port: int, stats_port: int, store: str, *options: str) -> list[str]:
    """presa with room for 10,000 tasks, a stats port and ``store`` (``bench.presa_server``)."""
    return [
        sys.executable,
        "-m",
        "bench.presa_server",
        "--port",
        str(port),
        "--stats-port",
        str(stats_port),
        "--store",
        store,
        *options,
    ]
