"""``tools/list`` and ``tools/call``.

Spec: 2026-07-28 server/tools; wire §5.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from presa_trio.server import rounds
from presa_trio.server.context import RequestContext
from presa_trio.server.pagination import only_page
from presa_trio.server.registry import RegisteredTool, Server, ToolError, ToolOutput
from presa_trio.wire import models
from presa_trio.wire.convert import to_wire
from presa_trio.wire.errors import InvalidParams
from presa_trio.wire.mrtr import InputRequired

log = logging.getLogger(__name__)


#: Per server, the tools it last listed and their wire form. A registered
#: :class:`~presa_trio.wire.models.Tool` is frozen, so the same objects in the
#: same order always have the same wire form; registering, replacing or
#: removing a tool changes the objects and so the key.
_wire_tools: weakref.WeakKeyDictionary[
    Server, tuple[tuple[models.Tool, ...], list[dict[str, Any]]]
] = weakref.WeakKeyDictionary()


def wire_tools(server: Server) -> list[dict[str, Any]]:
    """The listed tools as wire objects, converted once per set of registered tools."""
    tools = tuple(server.listed_tools())
    cached = _wire_tools.get(server)
    if (
        cached is None
        or len(cached[0]) != len(tools)
        or any(old is not new for old, new in zip(cached[0], tools, strict=True))
    ):
        cached = (tools, to_wire(list(tools)))
        _wire_tools[server] = cached
    return cached[1]


async def list_tools(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """All tools, in a stable order, with caching hints (wire §5.1, §14)."""
    return only_page(ctx, params, "tools", list(wire_tools(ctx.server)))


def read_call_params(params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``name`` and ``arguments`` of a ``tools/call``, shape-checked (wire §5.2).

    No ``arguments`` means ``{}``.
    """
    name = params.get("name")
    if not isinstance(name, str):
        raise InvalidParams("tools/call needs a string 'name'")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidParams("'arguments' must be an object")
    return name, arguments


def as_call_result(output: ToolOutput) -> models.CallToolResult | InputRequired:
    """Normalise what a tool returned into a ``CallToolResult`` (or a round)."""
    if isinstance(output, models.CallToolResult | InputRequired):
        return output
    if isinstance(output, str):
        return models.CallToolResult([models.TextContent(output)])
    if isinstance(output, list):
        return models.CallToolResult(output)
    return models.CallToolResult([output])


def find_tool(server: Server, name: str) -> RegisteredTool:
    """The registered tool called ``name``; an unknown tool is -32602 (wire §5.2)."""
    registered = server.tools.get(name)
    if registered is None:
        raise InvalidParams(f"Unknown tool: {name}")
    return registered


async def invoke_tool(
    server: Server, ctx: RequestContext, name: str, arguments: dict[str, Any]
) -> models.CallToolResult | InputRequired:
    """Run a tool's handler and map its outcome.

    A :class:`ToolError` is a failure the tool anticipated: an ``isError``
    result (runner tools-call-error). Any other exception propagates, and the
    dispatcher answers -32603 (wire §5.2). The Tasks extension runs tools in
    its workers through this same function, so both paths map alike.
    """
    registered = find_tool(server, name)
    try:
        output = await registered.handler(ctx, arguments)
    except ToolError as failure:
        return models.CallToolResult([models.TextContent(str(failure))], is_error=True)
    return as_call_result(output)


async def call_tool(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """Call a tool for this request, with the multi round-trip boundary around it."""
    name, arguments = read_call_params(params)
    binding = rounds.binding_for("tools/call", name, arguments)
    rounds.open_round(ctx, params, binding)
    outcome = await invoke_tool(ctx.server, ctx, name, arguments)
    if isinstance(outcome, InputRequired):
        return rounds.close_round(ctx, outcome, binding)
    result: dict[str, Any] = to_wire(outcome)
    return result
