"""Serving a :class:`~presa_trio.server.Server` over HTTP with hypercorn's Trio worker.

:func:`serve_http` binds first (so a port in use fails at once, as a plain
``OSError``), logs where it serves once it listens, logs one access line per
request (:mod:`presa_trio.http.access`; written in batches, at most a second
late, all of them by the time it returns), and shuts down gracefully:

1. SIGINT, SIGTERM or SIGHUP (or the caller's ``shutdown_trigger``; in a worker
   of ``--workers`` or the child of ``--reload``, also a request over the link to the
   process that started it: :mod:`presa_trio.http.worker_link`) starts it, once:
   ``GET /readyz`` answers 503 from now on (:mod:`presa_trio.http.health`);
2. after ``drain_delay`` seconds (time for a load balancer's health checks
   to take the process out), the listening socket closes, so no new
   connection is accepted;
3. every ``subscriptions/listen`` stream ends with its result
   (subscriptions §Graceful Closure);
4. requests in flight get ``shutdown_grace`` seconds to finish, then are
   cancelled; idle connections are closed;
5. the ASGI lifespan ends (the Tasks extension's workers stop) and
   :func:`serve_http` returns.

A second signal during the grace ends it at once, as does a second request
over the link (the two are counted apart: :func:`serve_until_signalled`). If the server-lifetime
nursery ends by itself (the task runner failed), the same shutdown starts,
and :func:`serve_http` raises :class:`ServerFailed` with one line: the
process exits non-zero and a supervisor restarts it.
"""

from __future__ import annotations

import logging
import signal
import socket
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import trio
from hypercorn.config import Config, Sockets
from hypercorn.trio.run import worker_serve
from hypercorn.typing import ASGIFramework
from hypercorn.utils import repr_socket_addr, wrap_app

from presa_trio.http import connection, protocols
from presa_trio.http.access import AccessLog, batched_lines
from presa_trio.http.admission import AdmissionPolicy
from presa_trio.http.app import (
    DEFAULT_KEEP_ALIVE_S,
    DEFAULT_MAX_BODY,
    DEFAULT_READ_TIMEOUT_S,
    McpApp,
)
from presa_trio.http.rate_limit import CallBudget
from presa_trio.http.target import RequestTarget
from presa_trio.http.transcript import TranscriptRecorder
from presa_trio.http.worker_link import hear_parent, inherited_link, say
from presa_trio.http.workers import (
    METRICS_MISSING,
    SHUTDOWN_SIGNALS,
    ServeRefused,
    clear_samples,
    inherited_sockets,
    shared_metrics_directory,
)
from presa_trio.server import Server
from presa_trio.server.faults import ServerFailed
from presa_trio.wire.http_values import LOOPBACK_HOSTS, authority, is_loopback

if TYPE_CHECKING:
    from presa_trio.auth.guard import ResourceGuard

log = logging.getLogger(__name__)

#: Default seconds requests in flight may run on after a shutdown starts.
DEFAULT_SHUTDOWN_GRACE_S = 10.0

ShutdownTrigger = Callable[[], Awaitable[None]]


async def first_of(*waits: Callable[[], Awaitable[None]]) -> None:
    """Return once the first of ``waits`` has returned; the others are cancelled.

    Failure policy: a wait that raises ends them all, and the raise is the caller's.
    """
    async with trio.open_nursery() as nursery:

        async def until(wait: Callable[[], Awaitable[None]]) -> None:
            await wait()
            nursery.cancel_scope.cancel(reason="another wait ended first")

        for wait in waits:
            nursery.start_soon(until, wait)


async def serve_http(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 3000,
    allow_hosts: frozenset[str] = frozenset(),
    transcript: Path | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    auth: ResourceGuard | Callable[[int], ResourceGuard] | None = None,
    read_timeout: float = DEFAULT_READ_TIMEOUT_S,
    keep_alive: float = DEFAULT_KEEP_ALIVE_S,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE_S,
    drain_delay: float = 0.0,
    metrics: bool = False,
    rate_limit: float | None = None,
    shutdown_trigger: ShutdownTrigger | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``server`` at ``http://host:port/mcp`` until shut down.

    With ``nursery.start`` it returns the endpoint URLs once listening, so
    ``port=0`` picks a free port. Host and Origin are checked against the
    loopback names plus ``allow_hosts`` (DNS rebinding); a body over
    ``max_body`` bytes is 413, one not received within ``read_timeout``
    seconds is 408. A connection idle ``keep_alive`` seconds between two
    requests is closed (a client or a proxy that reuses idle connections
    must stop reusing one first: RFC 9112 §9.5, "a client, server, or proxy
    MAY close the transport connection at any time", so the one that keeps
    it longer races the other's close). A shutdown keeps accepting for ``drain_delay`` seconds
    while ``/readyz`` says it is draining. With ``metrics``, ``GET /metrics``
    serves Prometheus text (:mod:`presa_trio.http.metrics`). With
    ``rate_limit``, each client may make that many ``tools/call`` and
    ``completion/complete`` a second (:mod:`presa_trio.http.rate_limit`). Without a
    ``shutdown_trigger``, SIGINT and SIGTERM start the graceful shutdown (the
    caller must be in the main thread).

    With ``auth`` every request needs an access token (:mod:`presa_trio.auth`):
    a guard, or a function that makes the guard for the port bound, so that a
    resource URI built from the port names the one ``port=0`` picked. Without
    it, a bind to a non-loopback address logs a warning (streamable-http
    §Security & Endpoint: servers SHOULD authenticate).
    """
    allowed = LOOPBACK_HOSTS | {name.lower() for name in allow_hosts}
    policy = AdmissionPolicy(allowed_hosts=allowed, allowed_origin_hosts=allowed)
    config = Config()
    config.bind = [authority(host, port)]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # our handlers, logged once
    config.graceful_timeout = shutdown_grace
    config.keep_alive_timeout = keep_alive
    protocols.install()
    connection.install()
    inherited = inherited_sockets()  # a worker's is given
    sockets = inherited or config.create_sockets()
    link = inherited_link()  # a worker's, to the process that started it
    try:
        bound_port = sockets.insecure_sockets[0].getsockname()[1]
        mcp = McpApp.for_server(
            server,
            policy=policy,
            max_body=max_body,
            read_timeout=read_timeout,
            auth=auth(bound_port) if callable(auth) else auth,
            rate_limit=None if rate_limit is None else CallBudget.per_second_of(rate_limit),
        )
        app: ASGIFramework = mcp
        if metrics:
            try:  # prometheus_client, only when asked for
                from presa_trio.http.metrics import Metered, Metrics
            except ImportError:
                raise ServeRefused(METRICS_MISSING) from None
            directory = await trio.to_thread.run_sync(shared_metrics_directory)
            if directory is not None and inherited is None:  # a lone server owns it
                await trio.to_thread.run_sync(clear_samples, directory)
            app = Metered(mcp, Metrics.create(shared=directory is not None))  # looked up once
        app = AccessLog(app)
        if transcript is not None:
            app = TranscriptRecorder(app, transcript, time.time)
        app = RequestTarget(app)  # before any layer reads the path or Host
        if auth is None and not is_loopback(host):
            log.warning(
                "serving %s without authorization: anyone who can reach it may call every "
                "tool (see --auth-issuer, --auth-token)",
                host,
            )
        for sock in sockets.insecure_sockets:
            sock.listen(config.backlog)
        urls = [
            f"http://{repr_socket_addr(sock.family, sock.getsockname())}{policy.path}"
            for sock in sockets.insecure_sockets
        ]

        async def serve(trigger: ShutdownTrigger) -> None:
            # Failure policy of the nursery: it holds hypercorn alone, which ends once
            # the shutdown is done; what it raises (a lifespan that failed to start)
            # ends serving, and is told apart below.
            async def shutdown() -> None:
                await first_of(trigger, mcp.failed.wait)
                mcp.draining = True
                log.info("draining: /readyz answers 503 from now on")
                if not mcp.failed.is_set():
                    await trio.sleep(drain_delay)  # still accepting, /readyz says 503
                server.changes.close()

            async with trio.open_nursery() as nursery:
                await nursery.start(
                    partial(
                        worker_serve,
                        wrap_app(app, config.wsgi_max_body_size, "asgi"),
                        config,
                        sockets=sockets,
                        shutdown_trigger=shutdown,
                    )
                )
                log.info("serving %s", " ".join(urls))
                if link is not None:
                    say(link)  # the parent starts the other workers
                task_status.started(urls)

        try:
            async with batched_lines():
                if shutdown_trigger is not None:
                    await serve(shutdown_trigger)
                else:
                    await serve_until_signalled(serve, link)
        except Exception:
            if mcp.failure is None:
                raise
            # hypercorn's own report of a failed startup: the cause is mcp.failure.
    finally:
        close(sockets)
        if link is not None:
            link.close()
    if mcp.failure is not None:
        raise ServerFailed(mcp.failure)
    log.info("stopped")


async def serve_until_signalled(
    serve: Callable[[ShutdownTrigger], Awaitable[None]], parent: socket.socket | None = None
) -> None:
    """Run ``serve`` with :data:`~presa_trio.http.workers.SHUTDOWN_SIGNALS` as its
    shutdown trigger; a second signal cancels it.

    While this runs, no such signal interrupts anything (no
    ``KeyboardInterrupt``); each is received here, and none is left pending.
    In a worker of ``--workers``, or the child of ``--reload``, ``parent`` is its end of
    the link to the process that started it: its requests start the shutdown too, and
    are counted apart from the signals (:mod:`presa_trio.http.worker_link`).

    Failure policy of the nursery: the watches of the signals and of the parent
    raise nothing and end with ``serve``; an error of ``serve`` propagates and
    ends them.
    """
    first = trio.Event()
    serving = trio.CancelScope()

    def heard(why: str, times: int) -> None:
        """The ``times``-th request to stop of one kind: the first drains, a second stops."""
        if times == 1 and not first.is_set():
            log.info("%s: shutting down gracefully", why)
            first.set()
        elif times == 2:
            log.warning("%s again: stopping now", why)
            serving.cancel(reason=f"{why} twice")

    with trio.open_signal_receiver(*SHUTDOWN_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                received = 0
                async for signum in signals:
                    received += 1
                    heard(f"{signal.Signals(signum).name} received", received)

            nursery.start_soon(watch)
            if parent is not None:
                nursery.start_soon(hear_parent, parent, heard)
            with serving:
                await serve(first.wait)
            nursery.cancel_scope.cancel(reason="served")


def close(sockets: Sockets) -> None:
    for sock in [*sockets.secure_sockets, *sockets.insecure_sockets, *sockets.quic_sockets]:
        sock.close()
