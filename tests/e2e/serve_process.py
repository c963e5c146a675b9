"""``presa-trio serve`` as a real child process, with its stderr read line by line.

The process is started with ``--port 0``; the test waits for the line that
says where it serves (printed only once the socket is bound) and takes the
URL from it. stderr is drained for the whole run, so the access log never
fills the pipe, and every line is kept for the test to read.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import attrs
import trio

REPOSITORY = Path(__file__).resolve().parents[2]
SERVING = re.compile(r"serving (http://\S+/mcp)")


@attrs.define(eq=False)
class ServeProcess:
    """A running ``presa-trio serve``: its process, URL and stderr lines so far."""

    process: trio.Process
    url: str = ""
    lines: list[str] = attrs.field(factory=list)
    # Set at each new stderr line, then replaced.
    _new_line: trio.Event = attrs.field(factory=trio.Event)
    _ended: trio.Event = attrs.field(factory=trio.Event)

    async def read_stderr(self) -> None:
        assert self.process.stderr is not None
        buffer = b""
        async for chunk in self.process.stderr:
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            self.lines += [line.decode(errors="replace") for line in complete]
            self._new_line.set()
            self._new_line = trio.Event()
        self._ended.set()
        self._new_line.set()

    async def wait_for_line(self, pattern: str) -> re.Match[str]:
        """The first stderr line matching ``pattern``, waiting for it if need be."""
        return (await self.wait_for_lines(pattern, 1))[0]

    async def wait_for_lines(self, pattern: str, count: int) -> list[re.Match[str]]:
        """The first ``count`` stderr lines matching ``pattern``, waiting for them if need be."""
        found: list[re.Match[str]] = []
        seen = 0
        while True:
            for line in self.lines[seen:]:
                if match := re.search(pattern, line):
                    found.append(match)
                    if len(found) == count:
                        return found
            seen = len(self.lines)
            assert not self._ended.is_set(), "\n".join(self.lines)
            await self._new_line.wait()

    async def stopped(self) -> int:
        """Wait for the process to exit and stderr to end; the exit status."""
        status = await self.process.wait()
        await self._ended.wait()
        return status

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)


@asynccontextmanager
async def presa_serve(
    *arguments: str, python: str | Path = sys.executable, cwd: Path = REPOSITORY
) -> AsyncIterator[ServeProcess]:
    """Run ``python -m presa_trio serve --port 0 ARGUMENTS`` until the block ends.

    ``python`` and ``cwd`` choose the interpreter (another venv's) and where
    it runs. The child is killed if it is still running when the block exits.
    """
    command = [str(python), "-m", "presa_trio", "serve", "--port", "0", *arguments]
    async with serving(command, cwd=cwd) as served:
        yield served


@asynccontextmanager
async def serving(
    command: list[str],
    pattern: str = SERVING.pattern,
    cwd: Path = REPOSITORY,
    own_group: bool = False,
) -> AsyncIterator[ServeProcess]:
    """Run any server ``command`` in ``cwd`` until the block ends; its URL is the first
    group of the stderr line matching ``pattern``. With ``own_group`` it leads a
    process group of its own, as a terminal's foreground job does, for ``os.killpg``."""
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            partial(
                trio.run_process,
                command,
                stderr=subprocess.PIPE,
                cwd=cwd,
                check=False,
                start_new_session=own_group,
            )
        )
        served = ServeProcess(process)
        nursery.start_soon(served.read_stderr)
        with trio.fail_after(30):
            served.url = (await served.wait_for_line(pattern))[1]
        yield served
        nursery.cancel_scope.cancel(reason="test over")
