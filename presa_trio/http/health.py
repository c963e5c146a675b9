"""``GET /healthz`` and ``GET /readyz``: what a load balancer or an orchestrator polls.

- ``/healthz`` (liveness): the process serves; 200 while the server-lifetime
  nursery runs. Restart the process when it fails.
- ``/readyz`` (readiness): the process can serve tasks now; 200 unless it is
  draining (a shutdown has started), or an extension says it cannot serve
  (the Tasks extension: its runner stopped, or its store does not answer
  within ``--store-timeout``). Send it no new requests while it fails.

A failing check is 503 with its reason in one line of plain text. Both
paths sit outside MCP's admission rules (no JSON-RPC, no Accept or
Content-Type required, no bearer token: a health checker holds none), but
behind the same Host and Origin checks as the endpoint (DNS rebinding), so a
checker sends an allowed ``Host``. GET and HEAD are served (405 otherwise). A
check reads no request body and costs at most one keyed store read, so it can
be polled every second; checks that come while one reads the store share its
answer (:class:`Readiness`), so however many come at once (anyone who reaches
the port may send them), the store is read once at a time.

A draining process answers ``/readyz`` with 503 from the moment the shutdown
starts, for as long as it still accepts (``--drain-delay``), so a load
balancer takes it out before it stops accepting (docs/deployment.md).

presa chooses these paths and plain-text bodies after Kubernetes' own
``/healthz`` and ``/readyz`` (kubernetes.io, "Kubernetes API health endpoints").
"""

from __future__ import annotations

from typing import Protocol

import attrs
import trio
from hypercorn.typing import ASGISendCallable

from presa_trio.http.sse import send_whole
from presa_trio.server import Dispatcher
from presa_trio.wire.http_values import check_read_only

LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
#: The paths this module answers, whatever the MCP endpoint's path.
HEALTH_PATHS = frozenset({LIVENESS_PATH, READINESS_PATH})

#: A check's answer is never cached: the next poll must ask again.
NO_STORE = [(b"cache-control", b"no-store")]


class Checked(Protocol):
    """What the checks read of the application (:class:`~presa_trio.http.app.McpApp`)."""

    @property
    def draining(self) -> bool: ...
    @property
    def lifetime(self) -> trio.Nursery | None: ...
    @property
    def dispatcher(self) -> Dispatcher: ...
    @property
    def readiness(self) -> Readiness: ...


@attrs.define(eq=False)
class Asking:
    """One asking of the extensions: set once it is over, and what they answered."""

    over: trio.Event = attrs.field(factory=trio.Event)
    answered: bool = False
    reason: str | None = None


@attrs.define(eq=False)
class Readiness:
    """The extensions of one application asked whether they can serve, one asking at a
    time: a check that comes during an asking waits for its answer."""

    # The asking under way, if any.
    asking: Asking | None = None

    async def unready(self, app: Checked) -> str | None:
        """Why ``app`` cannot serve tasks now, in one line; ``None`` when it can.

        Draining and a stopped server answer without asking anything else; then
        each extension is asked in turn, and the first reason wins. An asking
        whose checker left (cancelled) answered nothing: a check that waited for
        it asks again.
        """
        if app.draining:
            return "draining"
        if app.lifetime is None:
            return "the server is not running"
        while self.asking is not None:
            asking = self.asking
            await asking.over.wait()
            if asking.answered:
                return asking.reason
        asking = self.asking = Asking()
        try:
            asking.reason = await extensions_unready(app)
            asking.answered = True
        finally:
            self.asking = None
            asking.over.set()
        return asking.reason


async def extensions_unready(app: Checked) -> str | None:
    """The first reason an extension of ``app`` gives for not serving, if any."""
    for extension in app.dispatcher.server.extensions:
        reason = await extension.unready()
        if reason is not None:
            return reason
    return None


async def answer_health(app: Checked, path: str, method: str, send: ASGISendCallable) -> None:
    """Answer ``/healthz`` or ``/readyz`` (``path``, one of :data:`HEALTH_PATHS`)."""
    check_read_only(method)
    if path == LIVENESS_PATH:
        reason = None if app.lifetime is not None else "the server is not running"
    else:
        reason = await app.readiness.unready(app)
    status, body = (200, b"ok\n") if reason is None else (503, f"{reason}\n".encode())
    await send_whole(send, status, body, b"text/plain; charset=utf-8", NO_STORE)
