"""The client run as a user runs it: ``python -m presa_trio …``, on a pipe or a terminal."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import IO, Any

import attrs
import trio

from tests.e2e.serve_process import REPOSITORY

SDK_SERVER = str(Path(__file__).with_name("sdk_server.py"))
#: A server that gets one thing wrong: ``python MISBEHAVING WRONG``.
MISBEHAVING = str(Path(__file__).with_name("misbehaving_server.py"))


#: The one line every failure of the client is.
ERROR_PREFIX = "presa-trio: error: "


@attrs.frozen
class Ran:
    """A finished client command: its exit status and what it printed."""

    status: int
    stdout: str
    stderr: str

    def error(self) -> str:
        """The failure line (the last of stderr), checked to be the only kind there is."""
        assert "Traceback" not in self.stderr, self.stderr
        last = self.stderr.strip().splitlines()[-1]
        assert last.startswith(ERROR_PREFIX), self.stderr
        assert self.stderr.count(ERROR_PREFIX) == 1, self.stderr
        return last[len(ERROR_PREFIX) :]


def client_command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "presa_trio", *arguments]


def client_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PRESA_TOKEN"}


async def client(*arguments: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> Ran:
    """Run ``presa-trio ARGUMENTS`` to its end (at most a minute)."""
    with trio.fail_after(60):
        done = await trio.run_process(
            client_command(*arguments),
            stdin=stdin,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=REPOSITORY,
            env=env or client_environment(),
        )
    return Ran(done.returncode, done.stdout.decode(), done.stderr.decode())


async def start_client(
    nursery: trio.Nursery, *arguments: str, stderr: int | IO[Any] = subprocess.PIPE
) -> trio.Process:
    """``presa-trio ARGUMENTS`` started in ``nursery``, stdout on a pipe, stderr on
    ``stderr`` (a pipe unless given), to read while it runs."""
    process: trio.Process = await nursery.start(
        partial(
            trio.run_process,
            client_command(*arguments),
            stdout=subprocess.PIPE,
            stderr=stderr,
            check=False,
            cwd=REPOSITORY,
            env=client_environment(),
        )
    )
    return process


#: What the client ends a question with, on a terminal.
PROMPTS = (
    b"accept, decline or cancel? [a/d/c] ",
    b"  > ",
    b"send, edit, decline or cancel? [s/e/d/c] ",
    b"Your reply, as the model: ",
)


async def on_terminal(arguments: Sequence[str], typed: list[str]) -> str:
    """``presa-trio ARGUMENTS`` with stdin on a pseudo-terminal, as a person runs it.

    Each question the client ends with a prompt gets the next of ``typed``;
    once none is left, the next question gets SIGINT (what Ctrl-C sends).
    Returns what the terminal showed, stdout and stderr together, with the
    typed answers (and ``^C``) where they were typed.
    """
    leader, follower = os.openpty()
    shown = b""
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            partial(
                trio.run_process,
                client_command(*arguments),
                stdin=follower,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                check=False,
                env=client_environment(),
            )
        )
        os.close(follower)
        terminal = trio.lowlevel.FdStream(leader)
        assert process.stdout is not None
        with trio.fail_after(60):
            async for chunk in process.stdout:
                shown += chunk
                if not shown.endswith(PROMPTS):
                    continue
                if not typed:
                    process.send_signal(signal.SIGINT)
                    shown += b"^C\n"
                    continue
                answer = typed.pop(0).encode()
                await terminal.send_all(answer + b"\n")
                shown += answer + b"\n"
            await process.wait()
        await terminal.aclose()
    return shown.decode()


async def shown_on_terminal(
    *arguments: str, env: dict[str, str], stdout: bool = False, columns: int = 0
) -> str:
    """``presa-trio ARGUMENTS`` with stderr on a pseudo-terminal (and stdout too, with
    ``stdout``; else stdout goes nowhere), ``columns`` wide if given: what the terminal
    showed."""
    leader, follower = os.openpty()
    if columns:
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            await nursery.start(
                partial(
                    trio.run_process,
                    client_command(*arguments),
                    stdin=subprocess.DEVNULL,
                    stdout=follower if stdout else subprocess.DEVNULL,
                    stderr=follower,
                    check=False,
                    env=env,
                )
            )
            os.close(follower)  # the child's now: once it exits, reading the leader ends
            terminal = trio.lowlevel.FdStream(leader)
            shown = b""
            try:
                while chunk := await terminal.receive_some():
                    shown += chunk
            except trio.BrokenResourceError:  # EIO: the terminal's last writer is gone
                pass
            await terminal.aclose()
    return shown.decode()
