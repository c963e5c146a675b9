"""The link between a server and the process that started it: the parent of
``serve --workers N`` and each of its workers, or ``serve --reload`` and its child.

A link is a connected pair of Unix sockets, one end in each process. The
parent asks its workers to stop over it, not with a signal (so does the
reloader its child), and a worker tells the two apart:

- **a signal** to the worker (SIGTERM, SIGINT, SIGHUP) counts as one to a
  single process does: the first drains, a second stops it at once;
- **a byte from the parent** counts apart from them: the first drains
  (nothing more if it already drains), a second stops it at once. The
  parent writes one for each signal it gets, and one as it stops every
  worker because one cannot start (:mod:`presa_trio.http.workers`); the
  reloader one as it stops its child (:mod:`presa_trio.cli.reload`);
- **the link's end** (the parent's end closed: the parent exited, even
  killed with SIGKILL, so nothing will restart or stop the worker) drains
  it, unless the parent asked already.

A supervisor that signals every process of a service, as systemd's default
``KillMode=control-group`` does, so gives each worker its own SIGTERM and
its parent's byte: one request to drain from each, and the worker drains.
A relayed SIGTERM would be a second signal, and cut the requests in flight.
And a worker whose parent is gone drains and exits rather than serve on,
unsupervised, on a port a new parent could not bind.

The other way, a worker writes one byte once it serves
(:func:`say`): the parent starts the other workers only once
the first serves (:meth:`~presa_trio.http.workers.Workers.keep`), so a
worker that cannot start says why once, not once per worker.

The worker finds its end named by :data:`LINK_FD_ENV`, and keeps it to itself
(:func:`~presa_trio.http.workers.keep_inherited`).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable

import trio

#: The environment variable naming a worker's end of its link.
LINK_FD_ENV = "PRESA_TRIO_PARENT_FD"
#: The one word on a link: the parent's request to stop, a worker's "I serve".
WORD = b"\n"

#: The most a worker reads of its link at once, in bytes.
READ_SIZE = 64
#: Told of each request to stop: why it came ("asked by the parent") and the
#: how-manieth of its kind it is.
StopListener = Callable[[str, int], None]


def open_link() -> tuple[int, socket.socket]:
    """A new link for one worker: its end (a descriptor, to pass it) and the parent's.
    Neither is inherited by any other child of the parent."""
    parents, workers = socket.socketpair()
    parents.setblocking(False)
    return workers.detach(), parents


def say(link: socket.socket) -> None:
    """Send the link's one word to the other end: from the parent, a request to stop;
    from a worker, that it serves. Never blocks.

    An end that has gone (a worker exited, not yet reaped; a parent gone) is told
    nothing (``EPIPE``). The socket's buffer holds far more than the two requests a
    worker ever gets and the one word it says, so a full one (``EAGAIN``) means an
    end that reads nothing.
    """
    with contextlib.suppress(BrokenPipeError, BlockingIOError, ConnectionResetError):
        link.send(WORD)


async def wait_serving(link: socket.socket, process: trio.Process) -> bool:
    """Whether ``process``, the worker at the other end of ``link``, serves: ``True`` once
    it says so, ``False`` if it is seen to exit first.

    The wait ends with the process, not with its end of the link: a process the
    worker started may hold that end open after the worker exited (a forked one
    keeps every descriptor), and the parent would wait for it instead.

    Failure policy of the nursery: its task (the process's exit) raises nothing
    and ends the wait; so does a word from the worker, or its end closing.
    """
    said = b""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(cancel_at_exit, process, nursery.cancel_scope)
        with contextlib.suppress(ConnectionResetError):  # it exited, the parent's byte unread
            said = await trio.socket.from_stdlib_socket(link).recv(1)
        nursery.cancel_scope.cancel(reason="the worker spoke")
    return said == WORD


async def cancel_at_exit(process: trio.Process, scope: trio.CancelScope) -> None:
    """Cancel ``scope`` once ``process`` has exited: the end of :func:`wait_serving`."""
    await process.wait()
    scope.cancel(reason="the worker exited")


def inherited_link() -> socket.socket | None:
    """This worker's end of the link to its parent; ``None`` in any other process.

    The variable is removed once read, so a process the worker starts in
    turn does not take itself for a worker; the descriptor is no such
    process's already (:func:`~presa_trio.http.workers.keep_inherited`).
    """
    fd = os.environ.pop(LINK_FD_ENV, None)
    return None if fd is None else socket.socket(fileno=int(fd))


async def hear_parent(link: socket.socket, heard: StopListener) -> None:
    """Report each request of the parent to ``heard``, and the link's end as one if the
    parent asked nothing before; return at the link's end.

    ``link`` stays open, its closing the caller's, once nothing more is written on
    it (:func:`say`): closed here, its descriptor's number could be
    taken by another file in the meantime, and the byte written there instead.
    """
    asked = 0
    receiving = trio.socket.from_stdlib_socket(link)
    # A parent gone with this worker's own byte unread resets the link: its end too.
    with contextlib.suppress(ConnectionResetError):
        while requests := await receiving.recv(READ_SIZE):
            for _ in requests:
                asked += 1
                heard("asked by the parent", asked)
    if not asked:
        heard("the parent exited", 1)
