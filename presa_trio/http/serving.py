"""Serving a :class:`~presa_trio.server.Server` over HTTP with hypercorn's Trio worker."""

from __future__ import annotations

import ipaddress
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.typing import ASGIFramework

from presa_trio.http.admission import LOOPBACK_HOSTS, AdmissionPolicy
from presa_trio.http.app import DEFAULT_MAX_BODY, McpApp
from presa_trio.http.transcript import TranscriptRecorder
from presa_trio.server import Server

if TYPE_CHECKING:
    from presa_trio.auth.guard import ResourceGuard

log = logging.getLogger(__name__)


async def serve_http(
    server: Server,
    *,
    host: str = "127.0.0.1",
    port: int = 3000,
    allow_hosts: frozenset[str] = frozenset(),
    transcript: Path | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    auth: ResourceGuard | None = None,
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``server`` at ``http://host:port/mcp`` until cancelled.

    With ``nursery.start`` it returns the bound URLs once listening, so
    ``port=0`` picks a free port. Host and Origin are checked against the
    loopback names plus ``allow_hosts`` (DNS rebinding, wire §13.2 rung 2); a
    body over ``max_body`` bytes is refused with 413 before it is read whole.

    With ``auth`` every request needs an access token (:mod:`presa_trio.auth`);
    without it, a bind to a non-loopback address logs a warning
    (streamable-http §Security Warning: servers SHOULD authenticate).
    """
    if auth is None and not is_loopback(host):
        log.warning(
            "serving %s without authorization: anyone who can reach it may call every tool "
            "(see --auth-issuer, --auth-token)",
            host,
        )
    allowed = LOOPBACK_HOSTS | {name.lower() for name in allow_hosts}
    policy = AdmissionPolicy(allowed_hosts=allowed, allowed_origin_hosts=allowed)
    app: ASGIFramework = McpApp.for_server(server, policy=policy, max_body=max_body, auth=auth)
    if transcript is not None:
        app = TranscriptRecorder(app, transcript, time.time)
    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")  # our handlers, logged once
    await serve(app, config, mode="asgi", task_status=task_status)


def is_loopback(host: str) -> bool:
    """Whether a bind address is loopback-only (``localhost``, 127.0.0.0/8, ``::1``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"
