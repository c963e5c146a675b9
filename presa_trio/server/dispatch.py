"""The method table and the path of one request through it.

Given a request that the edge has admitted (wire §13.2 rungs 1–10), the
dispatcher does the rest, in the spec's order:

11. the ``_meta`` protocol version is supported, else -32022;
12. the method is known, else -32601. The requests 2026-07-28 removed
    (``initialize``, ``ping``, ``logging/setLevel``, ``resources/subscribe``,
    ``resources/unsubscribe``; SEP-2575 §Deprecated and Removed RPCs) are
    simply absent from the table;
13. the handler checks its params and capabilities (-32602, -32021);
14. the handler runs; its result gets ``resultType`` and serverInfo ``_meta``.

An unexpected exception becomes -32603 with a generic message; the detail
goes to the log only (wire §12). Extensions add and wrap methods here
(:mod:`presa_trio.server.extensions`); the core methods know nothing of them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import attrs
import trio

from presa_trio.server import discover, listen, prompts, resources, tools
from presa_trio.server.context import RequestContext, Send
from presa_trio.server.extensions import MethodHandler
from presa_trio.server.registry import Server
from presa_trio.wire.envelope import Request, RequestId, dumps, error_response, result_response
from presa_trio.wire.errors import InternalError, McpError, MethodNotFound
from presa_trio.wire.meta import META_SERVER_INFO, RequestMeta, require_supported_version

log = logging.getLogger(__name__)

#: ``Mcp-Name`` rules of the core: method -> the params key the header mirrors.
CORE_NAME_PARAMS: Mapping[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
}


def core_methods(server: Server) -> dict[str, MethodHandler]:
    """The core method table; a capability's methods exist only when it is offered."""
    table: dict[str, MethodHandler] = {
        "server/discover": discover.discover,
        "subscriptions/listen": listen.listen,
    }
    if server.tools:
        table |= {"tools/list": tools.list_tools, "tools/call": tools.call_tool}
    if server.prompts:
        table |= {"prompts/list": prompts.list_prompts, "prompts/get": prompts.get_prompt}
    if server.resources or server.templates:
        table |= {
            "resources/list": resources.list_resources,
            "resources/templates/list": resources.list_templates,
            "resources/read": resources.read_resource,
        }
    if server.prompts or server.templates:
        table["completion/complete"] = prompts.complete
    return table


@attrs.define(eq=False, repr=False)
class Dispatcher:
    """Routes admitted requests to handlers; built once per served server."""

    server: Server
    table: dict[str, MethodHandler]
    name_params: dict[str, str]
    server_info: dict[str, str]

    @classmethod
    def for_server(cls, server: Server) -> Dispatcher:
        table = core_methods(server)
        name_params = dict(CORE_NAME_PARAMS)
        for extension in server.extensions:
            table |= extension.methods()
            name_params |= extension.name_params
        for extension in server.extensions:
            table = {method: extension.wrap(method, h) for method, h in table.items()}
        info = {"name": server.name, "version": server.version}
        return cls(server, table, name_params, info)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run every extension for the server's lifetime, e.g. in the ASGI lifespan."""
        async with trio.open_nursery() as nursery:
            for extension in self.server.extensions:
                await nursery.start(extension.run)
            task_status.started()

    def context(self, request: Request, meta: RequestMeta, send: Send) -> RequestContext:
        return RequestContext(request.id, request.method, meta, self.server, send)

    async def handle(self, request: Request, meta: RequestMeta, send: Send) -> dict[str, Any]:
        """Answer one request with a wire result, or raise an :class:`McpError`."""
        require_supported_version(meta.protocol_version)
        handler = self.table.get(request.method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {request.method}")
        ctx = self.context(request, meta, send)
        try:
            result = await handler(ctx, request.params)
        except McpError:
            raise
        except Exception as exc:
            log.exception("handler for %s failed", request.method)
            raise InternalError() from exc
        return self.stamp(result)

    async def respond(self, request: Request, meta: RequestMeta, send: Send) -> tuple[bytes, int]:
        """The final JSON-RPC response, encoded, with the HTTP status it calls for.

        Both edges write what this returns. A result JSON cannot hold (a
        handler's bug) becomes -32603, the detail going to the log only.
        """
        try:
            result = await self.handle(request, meta, send)
        except McpError as error:
            return encode_error(request.id, error)
        try:
            return dumps(result_response(request.id, result)), 200
        except (TypeError, ValueError, RecursionError):
            log.exception("the result of %s cannot be written as JSON", request.method)
            return encode_error(request.id, InternalError())

    def stamp(self, result: dict[str, Any]) -> dict[str, Any]:
        """Add ``resultType`` (default ``complete``) and serverInfo ``_meta`` (wire §2, §3)."""
        result.setdefault("resultType", "complete")
        result["_meta"] = {**result.get("_meta", {}), META_SERVER_INFO: self.server_info}
        return result


def encode_error(request_id: RequestId | None, error: McpError) -> tuple[bytes, int]:
    """A JSON-RPC error response, encoded, with its HTTP status (wire §12)."""
    return dumps(error_response(request_id, error)), error.http_status
