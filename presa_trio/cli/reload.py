"""``presa-trio serve --reload``: restart the server when its files change, for development.

The reloading process serves nothing itself. It runs ``presa-trio serve``
with the same arguments, less ``--reload``, as a child process, and watches
the ``.py`` files of the directory the target module lives in (the package
directory of ``MODULE``'s top-level package, or the directory of a
top-level module), at any depth. When one is added, removed or modified it
stops the child and starts a new one. A child that ends on its own, say on
a syntax error, is started again at the next change. Nothing is imported in
this process: the user's code runs only in the child.

The child is asked to stop as a worker of ``--workers`` is, over a link of
its own (:mod:`presa_trio.http.worker_link`), and killed if it still runs
past its bound (:func:`~presa_trio.http.workers.stop_bound`); a second
signal to the reloader is passed on too, and the child stops at once. So a
terminal's Ctrl-C, which reaches both processes, is one request to drain
from each, not two signals that would stop the child at once; and a
reloader killed with SIGKILL leaves a child that drains and exits, not one
serving on the port for ever.

The watch polls modification times every half second, on a worker thread
(each poll is blocking file-system I/O): no dependency, and a development
tree is small. Directories whose name starts with a dot, ``__pycache__``,
``node_modules`` and virtual environments (a ``pyvenv.cfg`` inside) are
skipped.

Failure policy: the outer nursery runs the restart loop beside the signal
watch; the first signal cancels the loop, and the loop's end (the child
has exited) ends the watch. The inner one runs the child beside the watch
of the files, and a change cancels it. An error anywhere cancels the child
and ends the command.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from functools import partial
from pathlib import Path

import attrs
import trio

from presa_trio.http.worker_link import LINK_FD_ENV, open_link, say
from presa_trio.http.workers import SHUTDOWN_SIGNALS

log = logging.getLogger(__name__)

#: Seconds between two looks at the watched files.
POLL_S = 0.5
SKIPPED = frozenset({"__pycache__", "node_modules"})


def watched_root(target: str) -> Path:
    """The directory whose ``.py`` files make up ``MODULE`` of ``MODULE:ATTR``.

    Found as the import system would find it, with the current directory
    first on the path, without importing anything.
    """
    top = target.partition(":")[0].split(".")[0]
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin is None:
        return Path.cwd()
    origin = Path(spec.origin).resolve()
    return origin.parent


def snapshot(root: Path) -> dict[Path, int]:
    """Every ``.py`` file under ``root`` with its modification time (ns)."""
    found: dict[Path, int] = {}
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = [
            name
            for name in subdirectories
            if not name.startswith(".")
            and name not in SKIPPED
            and not (Path(directory) / name / "pyvenv.cfg").exists()
        ]
        for name in files:
            if name.endswith(".py"):
                path = Path(directory) / name
                with contextlib.suppress(FileNotFoundError):  # removed since the listing
                    found[path] = path.stat().st_mtime_ns
    return found


async def next_change(root: Path, before: dict[Path, int]) -> dict[Path, int]:
    """Wait until the files under ``root`` differ from ``before``; the new snapshot."""
    while True:
        await trio.sleep(POLL_S)
        now = await trio.to_thread.run_sync(snapshot, root)
        if now != before:
            changed = sorted(str(p) for p in before.keys() ^ now.keys())
            changed += sorted(str(p) for p in before.keys() & now.keys() if before[p] != now[p])
            log.info("reload: %s changed; restarting", ", ".join(changed[:3]))
            return now


def without_reload(argv: Sequence[str]) -> list[str]:
    """The command line of the child: the same arguments, less ``--reload``.

    argparse takes any unambiguous prefix of an option for the option
    (``--rel``), so every such spelling goes: a child left with one would
    reload in turn, and start a reloader of its own, without end.
    """
    return [
        argument
        for argument in argv
        if not (argument.startswith("--rel") and "--reload".startswith(argument))
    ]


async def serve_reloading(argv: Sequence[str], root: Path, bound: float) -> None:
    """Run ``presa-trio <argv>`` as a child; start it again whenever ``root`` changes.
    A child asked to stop is killed if it still runs ``bound`` seconds later.

    SIGTERM, SIGINT or SIGHUP to this process stops the child first, then
    returns: the child never outlives the process that started it.
    """
    command = [sys.executable, "-m", "presa_trio", *without_reload(argv)]
    await Reloader(command, root, bound).run()


@attrs.define(eq=False)
class Reloader:
    """The reloading process: its child, started again after each change under ``root``."""

    # The child's command line.
    command: list[str]
    root: Path
    # Seconds from asking the child to stop to killing it.
    bound: float
    # This end of the running child's link; ``None`` between children, and on Windows.
    link: socket.socket | None = None
    # The restarts' scope: the first signal cancels it.
    restarts: trio.CancelScope = attrs.field(factory=trio.CancelScope)

    async def run(self) -> None:
        """Restart the child until a signal, then stop it; return once it has exited.

        Every signal is received here, for as long as the child may run, so
        none is left pending to end this process by its default action.

        Failure policy of the nursery: the watch of the signals raises nothing
        and ends with the restarts; a failure of the restarts (the files cannot
        be read, the child cannot be started) ends this process, its child
        asked to stop and killed past the bound first (:meth:`run_child`).
        """
        with trio.open_signal_receiver(*SHUTDOWN_SIGNALS) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.stop_on_signals, signals)
                with self.restarts:
                    await self.restarting()
                nursery.cancel_scope.cancel(reason="the child exited")

    async def stop_on_signals(self, signals: AsyncIterator[int]) -> None:
        """The first signal stops the restarts, and so asks the child to drain; each one
        after it asks the child again, which then stops at once, as a second signal
        stops a worker of ``--workers``."""
        async for received in signals:
            name = signal.Signals(received).name
            if not self.restarts.cancel_called:
                log.info("reload: %s; stopping", name)
                self.restarts.cancel(reason="signalled")
            else:
                log.warning("reload: %s again: the child stops now", name)
                if self.link is not None:
                    say(self.link)

    async def restarting(self) -> None:
        """The child, started again after each change under ``root``.

        Failure policy of each run's nursery: a child that exits by itself ends
        nothing (it starts again at the next change); a change cancels the
        child; a failure of either ends both, and the reloader.
        """
        log.info("reload: watching %s", self.root)
        files = await trio.to_thread.run_sync(snapshot, self.root)
        while True:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.run_child)
                files = await next_change(self.root, files)
                nursery.cancel_scope.cancel(reason="a watched file changed")

    async def run_child(self) -> None:
        """Run the child to its end; cancelled, ask it to stop, and kill it ``bound``
        seconds later if it still runs. This end of its link closes when the child has
        exited, or with this process, however it ends. Windows passes no descriptors to a
        child: there Trio ends it its own way.

        Failure policy of the nursery: it holds the process alone, and ends when
        the process exits; only a process that cannot be started raises."""
        if sys.platform == "win32":
            await trio.run_process(self.command, check=False)
            return
        childs_end, self.link = open_link()
        try:
            async with trio.open_nursery() as nursery:
                try:
                    await nursery.start(
                        partial(
                            trio.run_process,
                            self.command,
                            check=False,
                            pass_fds=(childs_end,),
                            env={**os.environ, LINK_FD_ENV: str(childs_end)},
                            deliver_cancel=partial(stop_child, self.link, self.bound),
                        )
                    )
                finally:
                    os.close(childs_end)
        finally:
            self.link.close()
            self.link = None


async def stop_child(link: socket.socket, bound: float, process: trio.Process) -> None:
    """How a cancelled child ends: asked over its link, then, past ``bound``, SIGKILL."""
    say(link)
    await trio.sleep(bound)
    process.kill()
