"""The pipe between a server and the process that started it: the parent of
``serve --workers N`` and each of its workers, or ``serve --reload`` and its child.

The parent asks its workers to stop over a pipe of each worker's own, not
with a signal (so does the reloader its child), and a worker tells the two
apart:

- **a signal** to the worker (SIGTERM, SIGINT, SIGHUP) counts as one to a
  single process does: the first drains, a second stops it at once;
- **a byte from the parent** counts apart from them: the first drains
  (nothing more if it already drains), a second stops it at once. The
  parent writes one for each signal it gets (:mod:`presa_trio.http.workers`);
- **the pipe's end** (every copy of its writing end closed: the parent
  exited, even killed with SIGKILL, so nothing will restart or stop the
  worker) drains it, unless the parent asked already.

A supervisor that signals every process of a service, as systemd's default
``KillMode=control-group`` does, so gives each worker its own SIGTERM and
its parent's byte: one request to drain from each, and the worker drains.
A relayed SIGTERM would be a second signal, and cut the requests in flight.
And a worker whose parent is gone drains and exits rather than serve on,
unsupervised, on a port a new parent could not bind.

The worker finds the pipe's reading end named by :data:`LINK_FD_ENV`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

import trio

#: The environment variable naming the reading end of a worker's pipe.
LINK_FD_ENV = "PRESA_TRIO_PARENT_FD"
#: What the parent writes for each request to stop.
STOP = b"\n"

#: Called with why a request came ("asked by the parent") and the how-manieth it is.
Heard = Callable[[str, int], None]


def open_link() -> tuple[int, int]:
    """A new pipe for one worker: the end it reads (to pass it) and the end the parent
    writes. Neither is inherited by any other child of the parent."""
    reading, writing = os.pipe()
    os.set_blocking(writing, False)
    return reading, writing


def ask(writing: int) -> None:
    """Ask the worker at the other end of ``writing`` to stop; never blocks.

    A worker that has exited, not yet reaped, is asked nothing (``EPIPE``).
    The pipe's buffer holds far more than the two requests a worker ever
    gets, so a full one (``EAGAIN``) means a worker that reads nothing.
    """
    with contextlib.suppress(BrokenPipeError, BlockingIOError):
        os.write(writing, STOP)


def inherited_link() -> int | None:
    """The reading end of the pipe to this worker's parent; ``None`` in any other process.

    The variable is removed once read, so a process the worker starts in
    turn does not take itself for a worker.
    """
    fd = os.environ.pop(LINK_FD_ENV, None)
    return None if fd is None else int(fd)


async def hear_parent(reading: int, heard: Heard) -> None:
    """Report each request of the parent to ``heard``, and the pipe's end as one if the
    parent asked nothing before; return at the pipe's end."""
    asked = 0
    async with trio.lowlevel.FdStream(reading) as pipe:
        while requests := await pipe.receive_some():
            for _ in requests:
                asked += 1
                heard("asked by the parent", asked)
    if not asked:
        heard("the parent exited", 1)
