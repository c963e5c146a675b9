"""The ASGI application: the one place that sees bytes and headers.

A POST to the endpoint climbs the admission ladder (spec-notes §10): rungs 1–5
here and in :mod:`presa_trio.http.admission`, the body and envelope (6–8,
shared with stdio: :mod:`presa_trio.wire.admission`), the mirrored headers
(9–10, :mod:`presa_trio.http.mirrored`); the
:class:`~presa_trio.server.Dispatcher` does 11–14. The first failing rung
answers; the server keeps serving. A request-target that is no path is 400
where an unknown path is 404 (:mod:`presa_trio.http.target`, which reads an
absolute-form target as its path and Host before any layer of the edge).

With authorization on (:mod:`presa_trio.auth`), the bearer token is checked
right after Host and Origin (401), and the token's scopes once the method
and tool are known (403); the Protected Resource Metadata is served beside
the endpoint (2026-07-28 basic/authorization §Access Token Usage, §Error
Handling).

The ASGI lifespan opens the server-lifetime nursery in which extensions run
(the Tasks extension keeps its workers there). Each exchange opens a nursery
of its own for its helpers, and leaves nothing behind
(:mod:`presa_trio.http.exchange`).

Spec: 2026-07-28 basic/transports/streamable-http §Sending Messages, §Receiving
Messages; basic/index §Error Codes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import attrs
import trio
from hypercorn.typing import (
    ASGIReceiveCallable,
    ASGISendCallable,
    HTTPScope,
    LifespanScope,
    Scope,
)

from presa_trio.auth.principal import Access, InsufficientScope, Principal
from presa_trio.http import admission, mirrored
from presa_trio.http.admission import AdmissionPolicy
from presa_trio.http.exchange import Exchange
from presa_trio.http.headers import HTTP1_VERSIONS, request_headers
from presa_trio.http.health import HEALTH_PATHS, Readiness, answer_health
from presa_trio.http.rate_limit import CallBudget
from presa_trio.http.sse import (
    ResponseState,
    ResponseWriter,
    send_accepted,
    send_json,
    send_whole,
)
from presa_trio.http.target import check_origin_form
from presa_trio.http.websocket import as_http, http_response_on
from presa_trio.server import Connection, Dispatcher, Server
from presa_trio.server.dispatch import encode_error
from presa_trio.server.faults import report_lifetime_failure
from presa_trio.server.open_streams import LONG_LIVED, MAX_LONG_LIVED_BODY
from presa_trio.wire import envelope
from presa_trio.wire.admission import AdmittedRequest, Refused, admit
from presa_trio.wire.errors import RETRY_AFTER_S, McpError
from presa_trio.wire.http_values import Headers, Rejection, check_read_only
from presa_trio.wire.meta import RequestMeta, require_supported_version

if TYPE_CHECKING:
    from presa_trio.auth.guard import Caller, ResourceGuard

log = logging.getLogger(__name__)

#: Default largest accepted body, in bytes.
DEFAULT_MAX_BODY = 4 * 1024 * 1024
#: Default seconds from the request head to the end of its body.
DEFAULT_READ_TIMEOUT_S = 30.0
#: Seconds an idle HTTP/1.1 connection is kept open for the client's next request
#: (hypercorn's own default).
DEFAULT_KEEP_ALIVE_S = 5.0


def connection_of(scope: HTTPScope) -> Connection:
    """The transport connection a request came on: the client's address, and its port.

    hypercorn gives every request of one TCP connection the same ``client``
    (address, port) in its ASGI scope: the many streams of an HTTP/2
    connection, and the requests an HTTP/1.1 connection carries one after
    another. Two connections never share it while both are open. A scope
    without ``client`` (a Unix socket) names no connection: each request is
    its own, from a peer of its own. presa chooses this over the principal
    (one client may hold many connections) for SEP-2694's "one active
    tasks/stream per task per connection", and the address for its limits
    per client without authorization (spec-notes §50).
    """
    client = scope.get("client")
    if client is None:
        return Connection(object())
    address, port = client
    return Connection(("http", address), port)


def peer_address(scope: HTTPScope) -> str:
    """The address a request came from, naming its client where no token does
    (``""`` for a scope without one: a Unix socket's peers are one client)."""
    client = scope.get("client")
    return "" if client is None else client[0]


def declares_more(digits: str, limit: int) -> bool:
    """Whether a Content-Length of ASCII ``digits`` names more than ``limit`` bytes.

    Any number of digits is a Content-Length (RFC 9110 §8.6), leading zeros
    too; one with more significant digits than ``limit`` is larger, and is
    never read as a number, which Python refuses past 4300 digits
    (``sys.get_int_max_str_digits``).
    """
    significant = digits.lstrip("0")
    return len(significant) > len(str(limit)) or int(significant or "0") > limit


def retry_after(status: int) -> list[tuple[bytes, bytes]] | None:
    """``Retry-After`` for a refusal that can succeed later: HTTP 429 and 503 only.

    A JSON-RPC error answers 429 or 503 only when trying again can succeed
    (:class:`~presa_trio.wire.errors.OverCapacity`).
    """
    if status in (429, 503):
        return [(b"retry-after", b"%d" % RETRY_AFTER_S)]
    return None


@attrs.define(eq=False, repr=False)
class McpApp:
    """An ASGI 3 application serving one :class:`Server` at one endpoint."""

    dispatcher: Dispatcher
    policy: AdmissionPolicy = attrs.field(factory=AdmissionPolicy)
    max_body: int = DEFAULT_MAX_BODY
    # The authorization rung; ``None`` (the default) serves every caller.
    auth: ResourceGuard | None = None
    read_timeout: float = DEFAULT_READ_TIMEOUT_S
    # Calls a second per client (``--rate-limit``); ``None`` (the default) counts none.
    rate_limit: CallBudget | None = None
    # The server-lifetime nursery while :meth:`run` runs; requests need it.
    lifetime: trio.Nursery | None = attrs.field(default=None, init=False)
    # Why the server-lifetime nursery ended by itself, in one line; None while it runs.
    failure: str | None = attrs.field(default=None, init=False)
    # Set when it did: the serving loop stops, and the process exits non-zero.
    failed: trio.Event = attrs.field(factory=trio.Event, init=False)
    # Set once a shutdown starts: ``/readyz`` answers 503 from then on.
    draining: bool = attrs.field(default=False, init=False)
    # ``/readyz``'s asking of the extensions, shared by the checks that come together.
    readiness: Readiness = attrs.field(factory=Readiness, init=False)

    @classmethod
    def for_server(cls, server: Server, **options: Any) -> McpApp:
        return cls(Dispatcher.for_server(server), **options)

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(scope, receive, send)
        elif scope["type"] == "http":
            await self.http(scope, receive, send)
        elif scope["type"] == "websocket":  # served as the request it also is: websocket.py
            await self.http(as_http(scope), receive, http_response_on(send))

    # --- lifespan ----------------------------------------------------------------

    async def lifespan(
        self, scope: LifespanScope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        """Run the server-lifetime nursery (:meth:`run`) between startup and shutdown.

        If it cannot start, startup fails (hypercorn stops); if it ends by
        itself later (the task runner failed), :attr:`failed` is set and the
        serving loop shuts down: the process exits with one line and a
        non-zero status, for a supervisor to restart it, and never lingers
        answering 503 (docs/tasks.md, the failure policy).
        """
        await receive()  # lifespan.startup
        started = False
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.run)
                started = True
                await send({"type": "lifespan.startup.complete"})
                await receive()  # lifespan.shutdown
                nursery.cancel_scope.cancel(reason="server shutdown")
        except Exception as error:
            self.failure = report_lifetime_failure(log, error)
            self.failed.set()
            if not started:
                await send({"type": "lifespan.startup.failed", "message": self.failure})
                return
            await receive()  # lifespan.shutdown, once the serving loop has stopped
        await send({"type": "lifespan.shutdown.complete"})

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The server-lifetime nursery: extensions and the token verifier.

        It runs until cancelled; requests are served only while it does.
        Nothing of a request runs here (:mod:`presa_trio.http.exchange`).

        Failure policy of the nursery: an extension or the token verifier that
        fails ends the server's lifetime (:meth:`lifespan` logs it and sets
        :attr:`failed`, and the process exits non-zero); no request is on it.
        """
        async with trio.open_nursery() as nursery:
            await nursery.start(self.dispatcher.run)
            if self.auth is not None:
                await nursery.start(self.auth.run)
            self.lifetime = nursery
            try:
                task_status.started()
                await trio.sleep_forever()
            finally:
                self.lifetime = None

    # --- one request -------------------------------------------------------------

    async def http(
        self, scope: HTTPScope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        """One request: rungs 1–5 on its head, with ``rate_limit`` the call's count
        (:mod:`presa_trio.http.rate_limit`), then the exchange in a nursery of its own.

        The exchange's nursery holds what runs beside its handler: the
        disconnect watcher and an event stream's keep-alive
        (:mod:`presa_trio.http.exchange`). Its cancel scope is the exchange's:
        a client that leaves cancels handler and helpers together. When
        :meth:`exchange` returns, the helpers have nothing left to do, so the
        scope is cancelled and the nursery waits for them: nothing started
        for a request outlives it.

        Failure policy of the exchange's nursery: a helper's failure ends
        only its request, never the server. Each helper catches its own
        ``Exception`` (the watcher then cancels the exchange, the keep-alive
        logs it and stops), so none reaches the nursery. An exception of the
        exchange itself leaves through it to hypercorn, which ends that one
        request; the server-lifetime nursery and the Tasks runtime are not
        on this path.
        """
        headers = request_headers(scope)
        close = scope["http_version"] in HTTP1_VERSIONS
        caller: Caller | None = None
        try:
            if scope["path"] in HEALTH_PATHS:  # outside MCP's admission rules (health.py)
                self.policy.check_host_and_origin(headers)
                await answer_health(self, scope["path"], scope["method"], send)
                return
            if self.lifetime is None:
                raise Rejection(503, "The server is not running")
            if scope["path"] != self.policy.path:
                if self.auth is None or scope["path"] not in self.auth.metadata_paths:
                    check_origin_form(scope["path"])
                    raise Rejection(404, "Not found")
                self.policy.check_host_and_origin(headers)
                await self.serve_metadata(self.auth, scope["method"], send)
                return
            self.policy.check_host_and_origin(headers)
            if self.auth is not None:
                token = self.auth.bearer_token(headers, scope["query_string"])
                # A token verified before is a lookup; only a new one takes a coroutine.
                caller = (token, self.auth.remembered(token) or await self.auth.authenticate(token))
            admission.check_method(scope["method"])
            admission.check_content_type(headers)
            admission.check_accept(headers)
            if self.rate_limit is not None:
                client = caller[1].access_scope if caller is not None else peer_address(scope)
                self.rate_limit.check(client, headers.get("mcp-method"), trio.current_time())
        except Rejection as rejection:
            await self.reject(send, rejection, close=close)
            return
        async with trio.open_nursery() as nursery:
            exchange = Exchange(receive, nursery, connection_of(scope))
            await self.exchange(exchange, headers, send, caller, close=close)
            nursery.cancel_scope.cancel(reason="exchange over")

    async def exchange(
        self,
        exchange: Exchange,
        headers: Headers,
        send: ASGISendCallable,
        caller: Caller | None,
        *,
        close: bool,
    ) -> None:
        """Rung 6 within ``read_timeout`` of the head's end, else 408; then the answer."""
        try:
            with trio.move_on_after(self.read_timeout) as reading:
                body = await self.read_body(headers, exchange.receive)
        except Rejection as rejection:
            await self.reject(send, rejection, close=close)
            return
        if reading.cancelled_caught:
            late = Rejection(408, "Request body not received in time")
            await self.reject(send, late, close=close)
            return
        await self.answer(body, headers, send, exchange, caller)

    async def serve_metadata(
        self, auth: ResourceGuard, method: str, send: ASGISendCallable
    ) -> None:
        """The Protected Resource Metadata document (RFC 9728 §3), to anyone, by GET."""
        check_read_only(method)
        await send_json(send, 200, auth.metadata_json())

    def body_limit(self, headers: Headers) -> int:
        """``max_body``; for a request whose ``Mcp-Method`` names a long-lived method (a
        listen, a task stream), at most :data:`~presa_trio.server.open_streams.MAX_LONG_LIVED_BODY`.

        A body whose method is not the header's is -32020 once read (rung 9),
        so no long-lived request is admitted with the larger limit.
        """
        if headers.get("mcp-method") in LONG_LIVED:
            return min(self.max_body, MAX_LONG_LIVED_BODY)
        return self.max_body

    async def read_body(self, headers: Headers, receive: ASGIReceiveCallable) -> bytes:
        """Rung 6: read at most :meth:`body_limit` bytes; :meth:`http` bounds the time
        it takes.

        More is 413, unread. A body not complete ``read_timeout`` after the
        exchange began is given up on and answered 408 (RFC 9110
        §15.5.9), and the connection is closed, so a client that stalls
        mid-body cannot hold it open. (hypercorn's own ``read_timeout`` would
        not do: it also ends every response the client waits for in silence,
        a listen stream or a long tool call.)
        """
        limit = self.body_limit(headers)
        declared = headers.get("content-length")
        # ASCII digits only: ``str.isdigit`` also admits latin-1's superscripts.
        if (
            declared is not None
            and declared.isascii()
            and declared.isdigit()
            and declares_more(declared, limit)
        ):
            raise Rejection(413, "Request body too large")
        chunks: list[bytes] = []
        size = 0
        while True:
            event = await receive()
            if event["type"] != "http.request":
                raise Rejection(400, "Client went away")
            chunk = event.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise Rejection(413, "Request body too large")
            chunks.append(chunk)
            if not event.get("more_body", False):
                return b"".join(chunks)

    async def reject(
        self, send: ASGISendCallable, rejection: Rejection, *, close: bool = False
    ) -> None:
        """Answer a plain HTTP rejection, sent before the body was read to its end.

        With ``close`` (HTTP/1.x), the response says ``Connection: close``: the
        unread body leaves the connection unable to carry another request, and
        a client that reused it would see it drop without a response
        (RFC 9112 §9.6). HTTP/2 streams carry no such header.
        """
        extra = [(b"connection", b"close")] if close else []
        await send_whole(
            send,
            rejection.status,
            rejection.reason.encode(),
            b"text/plain; charset=utf-8",
            [*rejection.headers, *extra],
        )

    async def answer(
        self,
        body: bytes,
        headers: Headers,
        send: ASGISendCallable,
        exchange: Exchange,
        caller: Caller | None = None,
    ) -> None:
        """Rungs 6–8 (:func:`~presa_trio.wire.admission.admit`), the header rungs, dispatch.

        With authorization on, the token's scopes are checked once the method
        (and tool) are known and their headers agree with the body: 403
        ``insufficient_scope``; a notification too, which is answered 202
        only for a token with the scopes every request needs. The request's
        :class:`Access` carries the scopes it needed and when its token lapses.
        """
        admitted = admit(body)
        access = None
        try:
            if isinstance(admitted, AdmittedRequest):
                mirrored.check_protocol_version(headers, admitted.meta.protocol_version)
                self.check_mirrored(headers, admitted.request)
                if self.auth is not None and caller is not None:
                    request = admitted.request
                    access = self.auth.authorize(caller, request.method, request.params)
            elif isinstance(admitted, envelope.Notification):
                self.check_notification(headers)
                if self.auth is not None and caller is not None:  # every request's scopes
                    self.auth.authorize(caller, admitted.method, admitted.params)
        except McpError as error:
            request_id = admitted.request.id if isinstance(admitted, AdmittedRequest) else None
            admitted = Refused(request_id, error)
        except Rejection as rejection:
            await self.reject(send, rejection)
            return
        if isinstance(admitted, Refused):
            data, status = encode_error(admitted.request_id, admitted.error)
            await send_json(send, status, data)
        elif isinstance(admitted, envelope.Notification):
            await send_accepted(send)
        else:
            principal = None if caller is None else caller[1]
            await self.stream(admitted.request, admitted.meta, send, exchange, principal, access)

    def check_notification(self, headers: Headers) -> None:
        """A client notification is accepted (202) unless its version header is unsupported.

        A version header sent more than once is malformed (-32020), as on a
        request: the first line alone must not decide.

        Spec: streamable-http §Sending Messages (item 5 and its Note) — the core
        defines no client notifications over HTTP.
        """
        version = mirrored.single(headers, "mcp-protocol-version")
        if version is not None:
            require_supported_version(version)

    def check_mirrored(self, headers: Headers, request: envelope.Request) -> None:
        """Rungs 9–10: ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``, as the method's row says."""
        mirrored.check_method_and_name(
            headers,
            request.method,
            request.params,
            self.dispatcher.name_params,
            name_required=self.dispatcher.name_required(request.method),
        )
        mirrored.check_param_headers(
            headers, request.params, self.dispatcher.param_headers(request.method, request.params)
        )

    async def stream(
        self,
        request: envelope.Request,
        meta: RequestMeta,
        send: ASGISendCallable,
        exchange: Exchange,
        principal: Principal | None = None,
        access: Access | None = None,
    ) -> None:
        """Run the handler in this task, writing as it goes; a client disconnect cancels it.

        The exchange's disconnect watcher starts here, and on an event stream
        its keep-alive: both in the exchange's own nursery, apart from the
        Tasks runtime, ended when the exchange ends
        (:mod:`presa_trio.http.exchange`). A handler that sends nothing
        before its result is answered with plain JSON (see
        :class:`~presa_trio.http.sse.ResponseWriter`). A handler that finds
        the token short of a scope its resource requires (a task's) is
        answered with the guard's 403, as ``tools/call`` would be. A request
        whose body was still being read when the server-lifetime nursery
        ended is answered 503, as :meth:`http` answers one that comes after.
        """
        if self.lifetime is None:  # it ended (the task runner failed) while the body was read
            await self.reject(send, Rejection(503, "The server is not running"))
            return
        writer = ResponseWriter(send, exchange.nursery, long_lived=request.method in LONG_LIVED)
        exchange.watch_disconnect(writer)
        writer.start()

        async def notify(message: dict[str, Any]) -> None:
            # Encoded here, in the handler: a value JSON cannot hold is its fault.
            await writer.notify(envelope.dumps(message))

        try:
            try:
                data, status = await self.dispatcher.respond(
                    request, meta, notify, principal, access, exchange.connection
                )
            except InsufficientScope as short:
                if self.auth is None or writer.state is not ResponseState.QUIET:
                    raise
                writer.close()
                await self.reject(send, self.auth.insufficient(short.method, short.needed))
                return
            await writer.finish(data, status, retry_after(status))
        finally:
            writer.close()
