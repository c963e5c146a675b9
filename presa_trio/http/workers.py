"""``presa-trio serve --workers N``: N processes serving one address, supervised.

**One listening socket, shared.** The parent binds and listens once, then
starts N children (``python -m presa_trio serve … --workers 1``), each
inheriting the socket's file descriptor (named by ``PRESA_TRIO_LISTEN_FD``)
and accepting on it with its own hypercorn, its own server-lifetime nursery
and its own task runner, sharing the task store. presa chooses a shared
socket, as hypercorn's own ``--workers`` does (``hypercorn/run.py``), over
one ``SO_REUSEPORT`` socket per child: the socket outlives every child, so a
connection that arrives while one worker drains, restarts or was killed
waits in the queue for another, where a closing ``SO_REUSEPORT`` socket
resets the connections queued on it; and ``--port 0`` names one port for
all.

**Which stores.** Every worker must see every task: ``postgresql://`` does
(each change is announced to every process, docs/task-stores.md). ``memory:``
keeps tasks inside one process and ``sqlite:`` serves one process per file
(it locks the file, and announces changes only within the process), so both
are refused for more than one worker, in one line.

**Supervision.** The parent runs the children in a Trio nursery, one task
per worker slot (:meth:`Workers.keep`):

- a worker that exits by itself is logged and started again: at once if
  it lived :data:`LONGEST_RESTART_DELAY_S`, else after a pause of
  :data:`RESTART_DELAY_S`, doubled at each such death up to the longest, so
  a worker that cannot start does not spend a core on starting; its
  running tasks are recovered by lease, as after any crash. A worker that
  exits with status 2 at its slot's first start (a usage error: the target
  names no server, the store cannot be opened) stops them all: a new one
  would fail the same way. Started again, a worker whose store cannot be
  opened (the database is down) is started again until it can be, while
  the others serve on;
- every worker gets the same requestState key (one the parent makes,
  unless the operator gave one), so a multi round-trip retry may land on
  any worker;
- SIGTERM, SIGINT or SIGHUP to the parent is passed on to every worker
  over a link of its own (:mod:`~presa_trio.http.worker_link`), not as a
  signal: each drains (docs/deployment.md, "Draining") within
  ``--drain-delay`` and ``--shutdown-grace``, and the parent closes its
  copy of the socket (:meth:`Workers.release_listener`); a second signal is
  passed on too, and each worker stops at once (a first one that comes once a
  worker's usage error has stopped them, and they drain, asks nothing more); a worker still running
  :func:`stop_bound` seconds after the first signal is killed. A worker
  that a supervisor signals itself as well (systemd's default
  ``KillMode=control-group`` signals every process of the service) counts
  its own signal apart from its parent's request, and drains.

The children run in a session of their own, so a terminal's Ctrl-C reaches
the parent alone. The parent returns only once every child has exited: no
child outlives an orderly exit. A parent killed with SIGKILL cannot wait
for them, but its exit closes every link, and each worker drains and exits
by itself rather than serve on unsupervised.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import attrs
import trio
from hypercorn.config import Config, Sockets
from hypercorn.utils import repr_socket_addr

from presa_trio.http.worker_link import LINK_FD_ENV, open_link, say, wait_serving
from presa_trio.wire.http_values import authority

log = logging.getLogger(__name__)

#: The environment variable naming the listening socket a worker inherits.
LISTEN_FD_ENV = "PRESA_TRIO_LISTEN_FD"
#: The pause before a worker that died is started again, in seconds; doubled
#: at each death within :data:`LONGEST_RESTART_DELAY_S` of its start.
RESTART_DELAY_S = 1.0
#: The longest such pause; a worker that lived this long is started again at once.
LONGEST_RESTART_DELAY_S = 30.0
#: A worker's exit status that no restart can mend: a usage error.
EXIT_USAGE = 2
#: Time beyond its own bound a draining worker gets to exit, in seconds.
EXIT_MARGIN_S = 5.0
#: The directory of every worker's metric samples (prometheus_client's own variable).
MULTIPROCESS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: The name of a sample file there: its kind of metric (a gauge's with its mode) and
#: the pid of the process that writes it, as ``prometheus_client.values`` names it.
SAMPLE_FILE = re.compile(r"(?:counter|histogram|summary|gauge_[a-z]+)_\d+\.db")
#: The variable the command line reads requestState keys from (``--state-key``).
STATE_KEY_ENV = "PRESA_STATE_KEY"
#: The signals that end a server gracefully: a single server drains on them
#: (:func:`presa_trio.http.serving.serve_until_signalled`), the parent of workers
#: passes them on to every worker, and ``--reload`` stops its child. SIGHUP (the
#: terminal that started the server hung up) too: by default it would end the
#: process at once, cutting the requests in flight and losing the access lines not
#: yet written.
SHUTDOWN_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: What each store scheme allows more than one worker to share, and if not, why.
UNSHARED_STORES = {
    "memory": "memory: keeps tasks inside each process, so a task created on one "
    "worker would not be found on another",
    "sqlite": "a sqlite: store serves one process per file (each locks it, and "
    "announces its changes only within itself)",
}


#: Why ``--metrics`` cannot serve without its extra.
METRICS_MISSING = "--metrics needs prometheus_client: pip install 'presa-trio[metrics]'"


class ServeRefused(Exception):
    """Serving cannot start as asked; the message is one line for the operator.

    The command line prints it and exits with status 2.
    """


def worker_total(requested: int) -> int:
    """``--workers``: the number given, or one per core this process may run on for 0."""
    if requested:
        return requested
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def check_store(store: str, requested: int, total: int) -> None:
    """Refuse, in one line, a store that ``total`` workers cannot share.

    The line names ``--workers`` as given: ``0`` with the count of cores it
    came to, which the operator did not type.
    """
    why = UNSHARED_STORES.get(store.partition(":")[0])
    if total > 1 and why is not None:
        given = f"{requested} (one per core: {total})" if requested == 0 else f"{requested}"
        raise ServeRefused(f"--workers {given}: {why}; use --store postgresql://… or --workers 1")


def shared_metrics_directory() -> str | None:
    """``PROMETHEUS_MULTIPROC_DIR``, the directory of every process's metric samples, if
    set; one that names no directory, or one this process cannot make a file in, is
    refused in one line (prometheus_client's own refusal is a traceback, and its failure
    to write there would be read as the bind's: "cannot listen on …")."""
    directory = os.environ.get(MULTIPROCESS_DIR_ENV)
    if directory is None:
        return None
    if not os.path.isdir(directory):
        raise ServeRefused(f"--metrics: {MULTIPROCESS_DIR_ENV}={directory} names no directory")
    try:  # a file made and gone, as each process makes its samples' files there
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        reason = error.strerror or str(error)
        raise ServeRefused(
            f"--metrics: cannot write in {MULTIPROCESS_DIR_ENV}={directory}: {reason}"
        ) from None
    return directory


def clear_samples(directory: str) -> None:
    """Remove the sample files a previous run left in ``directory`` (``*.db``, one per
    process and kind of metric: prometheus_client's multiprocess mode).

    Called by the process that owns the directory, before any process of this run
    writes there: the parent of workers, or a lone server. Left there, the old
    run's counts would be added to the new one's, and the gauges of a process
    killed with SIGKILL (never marked dead) would count its streams open for
    ever; prometheus_client asks for the directory to be wiped before each start.

    Only sample files go. Any other ``*.db`` there (a ``sqlite:`` store kept beside
    them) is refused in one line, and left as it is: every scrape reads each
    ``*.db`` file of the directory as samples, and fails on one that is not.
    """
    paths = list(Path(directory).glob("*.db"))
    others = sorted(path.name for path in paths if not SAMPLE_FILE.fullmatch(path.name))
    if others:
        raise ServeRefused(
            f"--metrics: {MULTIPROCESS_DIR_ENV}={directory} holds {others[0]}, which is no "
            "sample file, and every scrape would read it as one: give the samples a "
            "directory of their own"
        )
    for path in paths:
        path.unlink(missing_ok=True)


def keep_inherited() -> None:
    """Keep the descriptors this process was given as a worker, its listening socket and
    its end of the link to its parent (:mod:`~presa_trio.http.worker_link`), to itself,
    before any of the user's code runs.

    ``pass_fds`` leaves them inheritable, and a process the worker starts (as the
    target is imported, or in a tool) would be given both, and hold them open after
    every worker has exited: the socket then queues connections no worker will
    accept, rather than refuse them. One that names no descriptor is refused where it
    is read (:func:`inherited_sockets`).
    """
    for name in (LISTEN_FD_ENV, LINK_FD_ENV):
        with contextlib.suppress(KeyError, ValueError, OSError):
            os.set_inheritable(int(os.environ[name]), False)


def inherited_sockets() -> Sockets | None:
    """The listening socket a worker was given by its parent; ``None`` in any other process.

    The variable is removed once read, so a process the worker starts in
    turn does not take itself for a worker.
    """
    fd = os.environ.pop(LISTEN_FD_ENV, None)
    if fd is None:
        return None
    return Sockets([], [socket.socket(fileno=int(fd))], [])


def listen(host: str, port: int) -> socket.socket:
    """Bind and listen on ``host:port`` as a single server would; a failure is one line."""
    config = Config()
    config.bind = [authority(host, port)]
    try:
        (sock,) = config.create_sockets().insecure_sockets
    except OSError as error:
        reason = error.strerror or str(error)
        raise ServeRefused(f"cannot listen on {host}:{port}: {reason}") from None
    sock.listen(config.backlog)
    return sock


def stop_bound(drain_delay: float, shutdown_grace: float, store_timeout: float) -> float:
    """Seconds after SIGTERM by which every worker has exited, or is killed."""
    return drain_delay + shutdown_grace + store_timeout + EXIT_MARGIN_S


async def kill_now(process: trio.Process) -> None:
    """How a cancelled worker ends: it was told to drain already; past the bound, SIGKILL."""
    process.kill()


@attrs.define(eq=False)
class Workers:
    """The parent of ``total`` workers serving ``listener``; see the module docstring."""

    # The command line each worker runs (it inherits the listener).
    command: Sequence[str]
    total: int
    listener: socket.socket
    # Seconds from the first signal to killing what still runs (:func:`stop_bound`).
    bound: float
    # What every worker finds in its environment besides the parent's.
    shared: Mapping[str, str] = attrs.field(factory=dict)
    # Slot -> the parent's end of the link to its running process
    # (:mod:`~presa_trio.http.worker_link`); a slot between two processes has none.
    links: dict[int, socket.socket] = attrs.field(factory=dict)
    # Set by the first signal or a worker's usage error: no more starts.
    stopping: trio.Event = attrs.field(factory=trio.Event)
    # Set once the first worker serves, its first process has ended otherwise, or
    # stopping: only then do the other slots start.
    opened: trio.Event = attrs.field(factory=trio.Event)
    # The parent's exit status.
    status: int = 0
    # The slots' scope, whose deadline is set once stopping.
    slots: trio.CancelScope = attrs.field(factory=trio.CancelScope)
    # Workers being started now, each handed the listener.
    starting: int = 0

    async def run(self) -> int:
        """Keep ``total`` workers running until a signal, then drain them; the exit status.

        The parent nursery's failure policy: a worker's exit ends nothing
        but its own process (:meth:`keep` starts another), unless it could
        not start at all (a usage error at its slot's first start, which
        stops every worker, drained); an error of the parent itself (it
        cannot start a process) propagates and cancels every slot, whose
        workers are then killed: the parent never leaves a child behind.
        """
        with trio.open_signal_receiver(*SHUTDOWN_SIGNALS) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self.stop_on_signals, signals)
                with self.slots:
                    async with trio.open_nursery() as slots:
                        for slot in range(1, self.total + 1):
                            slots.start_soon(self.keep, slot)
                nursery.cancel_scope.cancel(reason="every worker exited")
        if self.slots.cancelled_caught:
            log.warning("workers still running %.1f s after the signal were killed", self.bound)
            self.status = self.status or 1
        return self.status

    async def stop_on_signals(self, signals: AsyncIterator[int]) -> None:
        """Pass each of :data:`SHUTDOWN_SIGNALS` on to every worker, over its link.

        The first asks them to drain, unless they drain already, asked as a worker
        could not start (:meth:`keep`): then it asks nothing more, since a second
        request would stop them at once. Each signal after it is passed on.
        """
        received = 0
        async for signum in signals:
            received += 1
            name = signal.Signals(signum).name
            if received > 1:
                log.warning("%s received again: the workers stop now", name)
            elif self.stopping.is_set():
                log.info("%s received: the workers drain already", name)
                continue
            else:
                log.info("%s received: draining %d workers", name, len(self.links))
                self.stop()
            self.ask_all()

    def stop(self) -> None:
        """Start no worker again; kill what still runs after :attr:`bound` seconds."""
        self.stopping.set()
        self.opened.set()
        self.slots.deadline = trio.current_time() + self.bound
        self.release_listener()

    def release_listener(self) -> None:
        """Once stopping, and no worker is being handed it, close the parent's copy of
        the listening socket.

        The socket then closes when the last worker stops accepting, so a new
        connection is refused, as by one draining process, rather than queued
        for a worker that will never accept it.
        """
        if self.stopping.is_set() and not self.starting:
            self.listener.close()

    def ask_all(self) -> None:
        """Ask every running worker to stop, over its link: the first request drains it,
        a second stops it at once (:mod:`~presa_trio.http.worker_link`)."""
        for link in self.links.values():
            say(link)

    async def keep(self, slot: int) -> None:
        """Run worker ``slot``, and again each time it exits, until stopping.

        A usage error stops every worker only at the slot's first start: a
        worker started again cannot open what its first one did only while
        that is down (the database restarts), so it is started again too.
        Every slot but the first waits until the first worker serves: a worker
        that cannot start (a store that refuses, a target that names no
        server) says why in one line, and the others are never started to say
        it again. A first worker that dies otherwise lets them start all the same.
        """
        if slot > 1:
            await self.opened.wait()
        first = True
        pause = RESTART_DELAY_S
        while not self.stopping.is_set():
            started = trio.current_time()
            status = await self.run_worker(slot)
            if self.stopping.is_set():
                return
            if trio.current_time() - started >= LONGEST_RESTART_DELAY_S:
                pause = 0.0
            if status == EXIT_USAGE and first:
                log.error("worker %d cannot start (status %d): stopping every worker", slot, status)
                self.status = EXIT_USAGE
                self.stop()
                self.ask_all()
                return
            self.opened.set()
            log.warning(
                "worker %d exited with status %d: starting it again in %.1f s", slot, status, pause
            )
            first = False
            with trio.move_on_after(pause):
                await self.stopping.wait()
            pause = min(max(pause * 2, RESTART_DELAY_S), LONGEST_RESTART_DELAY_S)

    async def run_worker(self, slot: int) -> int:
        """Run one worker process to its end; its exit status.

        The nursery holds the process alone: it ends when the process exits,
        and fails only if the process cannot be started (that error ends the
        parent, see :meth:`run`). Cancelled past the bound, it kills the
        process (:func:`kill_now`). Its link is open before it starts, so a
        request to stop that comes meanwhile waits there for it; the parent's
        end lives as long as the process, or the parent, whose exit closes it.
        The first worker is waited for until it serves (:attr:`opened`).
        """
        # Open still: keep saw no stop, and there is no checkpoint from there to
        # ``starting`` counted, before which release_listener may close it.
        fd = self.listener.fileno()
        workers_end, self.links[slot] = open_link()
        try:
            async with trio.open_nursery() as nursery:
                self.starting += 1
                try:
                    process: trio.Process = await nursery.start(
                        partial(
                            trio.run_process,
                            list(self.command),
                            check=False,
                            pass_fds=(fd, workers_end),
                            env={
                                **os.environ,
                                **self.shared,
                                LISTEN_FD_ENV: str(fd),
                                LINK_FD_ENV: str(workers_end),
                            },
                            start_new_session=True,
                            deliver_cancel=kill_now,
                        )
                    )
                finally:
                    os.close(workers_end)
                    self.starting -= 1
                    self.release_listener()
                log.info("worker %d started (pid %d)", slot, process.pid)
                if not self.opened.is_set() and await wait_serving(self.links[slot], process):
                    self.opened.set()
        finally:
            self.links.pop(slot).close()
        if MULTIPROCESS_DIR_ENV in self.shared:  # its gauges of things under way are gone
            from prometheus_client.multiprocess import mark_process_dead

            # File-system I/O, off the thread that supervises the other workers.
            await trio.to_thread.run_sync(
                mark_process_dead, process.pid, self.shared[MULTIPROCESS_DIR_ENV]
            )
        return process.returncode or 0


def worker_command(argv: Sequence[str]) -> list[str]:
    """The command line of one worker: this one, serving alone on the inherited socket.

    ``--workers 1`` comes after every option given, so it is the one that
    counts, but before a ``--``, after which every word is MODULE:ATTR.
    """
    words = list(argv)
    end = words.index("--") if "--" in words else len(words)
    return [sys.executable, "-m", "presa_trio", *words[:end], "--workers", "1", *words[end:]]


async def serve_workers(argv: Sequence[str], args: argparse.Namespace) -> int:
    """``serve --workers N`` (``args``, parsed from ``argv``); the exit status.

    Each worker runs ``argv`` again with ``--workers 1``.
    """
    if args.reload:
        raise ServeRefused("--reload restarts one process: use it with --workers 1")
    total = worker_total(args.workers)
    check_store(args.store, args.workers, total)
    bound = stop_bound(args.drain_delay, args.shutdown_grace, args.store_timeout)
    listener = listen(args.host, args.port)
    with listener:
        async with shared_samples(args.metrics) as samples:
            where = repr_socket_addr(listener.family, listener.getsockname())
            log.info("serving http://%s/mcp with %d workers", where, total)
            shared = {**samples, **shared_key(args.state_key)}
            return await Workers(worker_command(argv), total, listener, bound, shared).run()


def shared_key(given: Sequence[str]) -> dict[str, str]:
    """One requestState key for every worker, unless the operator gave them theirs.

    A worker without a key makes its own, valid in that process only
    (``--state-key``): a multi round-trip retry answered by another worker
    would be refused. So the parent makes one for all of them, passed in
    the environment as an operator's would be (never on a command line,
    which every user of the host can read).
    """
    if given or os.environ.get(STATE_KEY_ENV):
        return {}
    return {STATE_KEY_ENV: secrets.token_urlsafe(32)}


@asynccontextmanager
async def shared_samples(metrics: bool) -> AsyncIterator[dict[str, str]]:
    """With ``--metrics``, a directory for every worker's samples, as the workers' environment.

    prometheus_client's multiprocess mode (:mod:`presa_trio.http.metrics`):
    one ``PROMETHEUS_MULTIPROC_DIR`` the operator set is used, emptied of a
    previous run's samples first (:func:`clear_samples`), else a new one, private
    to the user (``tempfile``'s mode 0700), lives as long as the parent. Either way
    it is named in the workers' environment, where :meth:`Workers.run_worker`
    reads it. Its file-system I/O runs on a worker thread, as any does in this
    process; the new directory's removal is shielded, so it goes however the
    parent ends.
    """
    if not metrics:
        yield {}
        return
    try:  # every worker would refuse, each in a line of its own: refused once, here
        importlib.import_module("prometheus_client")
    except ImportError:
        raise ServeRefused(METRICS_MISSING) from None
    given = await trio.to_thread.run_sync(shared_metrics_directory)
    if given is not None:
        await trio.to_thread.run_sync(clear_samples, given)
        yield {MULTIPROCESS_DIR_ENV: given}
        return
    directory = await trio.to_thread.run_sync(partial(tempfile.mkdtemp, prefix="presa-metrics-"))
    try:
        yield {MULTIPROCESS_DIR_ENV: directory}
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(partial(shutil.rmtree, directory, ignore_errors=True))
