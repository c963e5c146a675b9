"""The path of one request through the method table.

Given a request that the edge has admitted (rungs 1–10 of the admission order, spec-notes §10), the
dispatcher does the rest, in the spec's order:

11. the ``_meta`` protocol version is supported, else -32022;
12. the method has a row whose capability is offered right now, else -32601
    (:mod:`presa_trio.server.methods`);
13. the handler checks its params and capabilities (-32602, -32021);
14. the handler runs; its result gets ``resultType`` and serverInfo ``_meta``.
    A result of ``input_required`` from a method whose row does not allow it
    is a server bug (basic/patterns/mrtr §Supported Requests), answered like any other: -32603.

An unexpected exception, or a handler's return value that is no result
object (or whose ``_meta`` is no object, schema ``$defs.Result``), becomes
-32603 with a generic message; the detail goes to the log
only (tools §Error Handling; spec-notes §1). The table is the core's rows
plus each extension's, every row passed through each extension's ``wrap``;
the core methods know nothing of extensions.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import attrs
import trio

from presa_trio.auth.principal import Access, InsufficientScope, Principal
from presa_trio.server import discover
from presa_trio.server.context import Connection, RequestContext, Send
from presa_trio.server.faults import HANDLER_FAILURES, report_fault
from presa_trio.server.methods import CORE_METHODS, name_params
from presa_trio.server.registry import Method, Server
from presa_trio.server.results import describe
from presa_trio.wire.envelope import Request, RequestId, dumps, error_response, result_response
from presa_trio.wire.errors import McpError, MethodNotFound
from presa_trio.wire.meta import (
    HANDSHAKE,
    META_SERVER_INFO,
    SUPPORTED_NAMED,
    RequestMeta,
    require_supported_version,
)

log = logging.getLogger(__name__)


def method_table(server: Server) -> dict[str, Method]:
    """The core's rows and every extension's, each wrapped by every extension."""
    table = {row.name: row for row in CORE_METHODS}
    for extension in server.extensions:
        table |= {row.name: row for row in extension.methods()}
    for row in table.values():
        if row.capability is not None and row.capability not in discover.CORE_CAPABILITIES:
            raise ValueError(f"{row.name}: no server capability is called {row.capability!r}")
    for extension in server.extensions:
        table = {
            name: attrs.evolve(row, handler=extension.wrap(name, row.handler))
            for name, row in table.items()
        }
    return table


@attrs.define(eq=False, repr=False)
class Dispatcher:
    """Routes admitted requests to handlers; built once per served server.

    Its table is fixed when it is built (the server then refuses new
    extensions), but whether a row is served is asked at each request: a
    tool, prompt or resource registered later is advertised and dispatched
    together.
    """

    server: Server
    # Method name -> its row (:func:`method_table`).
    table: dict[str, Method]
    # Method name -> the params key ``Mcp-Name`` mirrors; derived from the table.
    name_params: Mapping[str, str]
    server_info: dict[str, str]

    @classmethod
    def for_server(cls, server: Server) -> Dispatcher:
        server.mark_served()
        table = method_table(server)
        info = {"name": server.name, "version": server.version}
        return cls(server, table, name_params(table.values()), info)

    def serving(self, method: str) -> Method:
        """The row of ``method`` if the server serves it now, else -32601.

        A row whose capability is not offered is absent, exactly as
        ``server/discover`` leaves the capability out (:func:`discover.offered`).
        The -32601 of ``initialize`` names the supported versions
        (versioning §Backward Compatibility with Initialization-Based Versions).
        """
        row = self.table.get(method)
        if row is None or not (
            row.capability is None or discover.offered(self.server, row.capability)
        ):
            named = f"; {SUPPORTED_NAMED}" if method == HANDSHAKE else ""
            raise MethodNotFound(f"Method not found: {method}{named}")
        return row

    def name_required(self, method: str) -> bool:
        """Whether a request of ``method`` must carry its ``Mcp-Name`` (its row says)."""
        row = self.table.get(method)
        return row is None or row.name_required

    def param_headers(self, method: str, params: dict[str, Any]) -> Mapping[str, tuple[str, ...]]:
        """The ``Mcp-Param-*`` headers a request must carry: header -> path into params."""
        row = self.table.get(method)
        return {} if row is None else row.param_headers(self.server, params)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run every extension for the server's lifetime, e.g. in the ASGI lifespan.

        Failure policy of this nursery: an extension that fails ends the
        server's lifetime, and the process exits non-zero (the edges:
        :meth:`~presa_trio.http.app.McpApp.lifespan`, :mod:`presa_trio.stdio`).
        Each extension keeps its own parts running; the Tasks runner's loops
        and workers never end it (:mod:`presa_trio.tasks.runner`).
        """
        async with trio.open_nursery() as nursery:
            for extension in self.server.extensions:
                await nursery.start(extension.run)
            task_status.started()

    def context(
        self,
        request: Request,
        meta: RequestMeta,
        send: Send,
        principal: Principal | None = None,
        access: Access | None = None,
        connection: Connection | None = None,
    ) -> RequestContext:
        """The one place a request's context is built; handlers see the server as a view."""
        ctx = RequestContext(
            request.id,
            request.method,
            meta,
            self.server,
            send,
            principal=principal,
            connection=connection,
        )
        if access is not None:
            ctx.access = access
        return ctx

    async def handle(
        self,
        request: Request,
        meta: RequestMeta,
        send: Send,
        principal: Principal | None = None,
        access: Access | None = None,
        connection: Connection | None = None,
    ) -> dict[str, Any]:
        """Answer one request with a wire result, or raise an :class:`McpError`.

        ``principal`` is the caller the HTTP edge verified (``None`` without
        authorization), ``access`` what it granted, ``connection`` the
        transport connection the request came on; handlers find them on
        their context. :class:`InsufficientScope` goes back to the edge,
        which answers it with its 403.
        """
        require_supported_version(meta.protocol_version)
        row = self.serving(request.method)
        ctx = self.context(request, meta, send, principal, access, connection)
        try:
            result = await row.handler(self.server, ctx, request.params)
        except (McpError, InsufficientScope):
            raise
        except HANDLER_FAILURES as exc:
            raise report_fault(log, "handler for %s failed", request.method) from exc
        if not isinstance(result, dict):
            raise report_fault(
                log,
                "handler for %s returned %s, not a result object",
                request.method,
                describe(result),
            )
        if not isinstance(result.get("_meta", {}), dict):
            raise report_fault(
                log,
                "handler for %s returned a result whose _meta is %s, not an object",
                request.method,
                describe(result["_meta"]),
            )
        if not row.may_ask and result.get("resultType") == "input_required":
            raise report_fault(log, "%s may not answer input_required", request.method)
        return self.stamp(result)

    async def respond(
        self,
        request: Request,
        meta: RequestMeta,
        send: Send,
        principal: Principal | None = None,
        access: Access | None = None,
        connection: Connection | None = None,
    ) -> tuple[bytes, int]:
        """The final JSON-RPC response, encoded, with the HTTP status it calls for.

        Both edges write what this returns. A result JSON cannot hold (a
        handler's bug) becomes -32603, the detail going to the log only.
        """
        try:
            result = await self.handle(request, meta, send, principal, access, connection)
        except McpError as error:
            return encode_error(request.id, error)
        try:
            return dumps(result_response(request.id, result)), 200
        except (TypeError, ValueError, RecursionError):
            fault = report_fault(log, "the result of %s cannot be written as JSON", request.method)
            return encode_error(request.id, fault)

    def stamp(self, result: dict[str, Any]) -> dict[str, Any]:
        """Add ``resultType`` (default ``complete``) and serverInfo ``_meta``.

        Spec: basic/index §ResultType, §_meta.
        """
        result.setdefault("resultType", "complete")
        result["_meta"] = {**result.get("_meta", {}), META_SERVER_INFO: self.server_info}
        return result


def encode_error(request_id: RequestId | None, error: McpError) -> tuple[bytes, int]:
    """A JSON-RPC error response, encoded, with its HTTP status (basic/index §Error Codes).

    An error whose code is no integer or a reserved one the spec does not define,
    or whose message is no string (:meth:`McpError.is_well_formed`), or whose
    ``data`` JSON cannot hold (a handler's bug), becomes -32603, as an unwritable
    result does, the detail going to the log only.
    """
    try:
        if error.is_well_formed():
            return dumps(error_response(request_id, error)), error.http_status
    except (TypeError, ValueError, RecursionError):
        pass
    fault = report_fault(log, "the error %r cannot be written as a JSON-RPC error", error.code)
    return dumps(error_response(request_id, fault)), fault.http_status
