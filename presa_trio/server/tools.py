"""``tools/list`` and ``tools/call``: the boundary between a request and a tool.

One pipeline serves a plain call, the creation of a task and a recovered
task, in three seams:

- :func:`prepare_call` — params → tool → checked arguments → the round
  (:class:`PreparedCall`); a refusal is answered before anything runs;
- :func:`run_call` — the handler, in the call's nursery if the tool asked
  for one, and its outcome mapped by :func:`tool_outcome` (what it raised)
  and :func:`map_outcome` (what it returned);
- :func:`answer_call` — the outcome as this request's result.

The plain path is the three in a row (:func:`call_tool`). The Tasks
extension prepares, and its worker (``ToolJob``) runs the handler with
:func:`run_handler` in the task's own nursery and maps the outcome with
:func:`map_outcome`, then makes it the task's result.

The checks and mappings, in order:

1. :func:`find_tool` — an unknown tool is a protocol error, -32602;
2. :func:`check_arguments` — arguments that break the tool's ``inputSchema``
   are a tool execution error: a ``CallToolResult`` with ``isError: true``
   naming each failing path and rule, and the handler never runs (no task
   is created for it either);
3. :func:`tool_outcome` — what the handler raised, however deep in its own
   nurseries, mapped once (see there);
4. :func:`check_structured` — ``structuredContent`` that breaks the tool's
   ``outputSchema`` is the server's bug: -32603, the detail in the log.

Spec: 2026-07-28 server/tools §Error Handling, §Output Schema, §Security
Considerations ("Validate all tool inputs").
"""

from __future__ import annotations

import logging
import operator
import weakref
from typing import Any

import attrs

from presa_trio.server import rounds
from presa_trio.server.capabilities import require_needs
from presa_trio.server.context import RequestContext
from presa_trio.server.faults import HANDLER_FAILURES, leaves, report_fault
from presa_trio.server.pagination import only_page
from presa_trio.server.registered import RegisteredTool, ToolOutput
from presa_trio.server.registry import Server, ToolError
from presa_trio.server.results import call_result
from presa_trio.server.signatures import invalid_arguments
from presa_trio.wire import models
from presa_trio.wire.convert import to_wire
from presa_trio.wire.envelope import Encoded, encode
from presa_trio.wire.errors import InvalidParams, McpError
from presa_trio.wire.mrtr import InputPending, InputRequired

log = logging.getLogger(__name__)


#: Per server, the tools it last listed and their JSON. A registered
#: :class:`~presa_trio.wire.models.Tool` is frozen, so the same objects in the
#: same order always have the same wire form; registering, replacing or
#: removing a tool changes the objects and so the key.
_wire_tools: weakref.WeakKeyDictionary[Server, tuple[tuple[models.Tool, ...], Encoded]] = (
    weakref.WeakKeyDictionary()
)


def wire_tools(server: Server) -> Encoded:
    """The listed tools, converted and encoded once per set of registered tools."""
    tools = tuple(server.listed_tools())
    cached = _wire_tools.get(server)
    if (
        cached is None
        or len(cached[0]) != len(tools)
        or not all(map(operator.is_, cached[0], tools))
    ):
        cached = (tools, encode(to_wire(list(tools))))
        _wire_tools[server] = cached
    return cached[1]


async def list_tools(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """All tools, in a stable order, with caching hints.

    Spec: tools §Listing Tools; caching §Cacheable Results.
    """
    return only_page(server, params, "tools", wire_tools(server))


def read_call_params(params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``name`` and ``arguments`` of a ``tools/call``, shape-checked (tools §Calling Tools).

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


def as_call_result(
    registered: RegisteredTool, output: ToolOutput
) -> models.CallToolResult | InputRequired:
    """Normalise what a tool returned into a valid ``CallToolResult`` (or a round), else -32603.

    The rules are :func:`presa_trio.server.results.call_result`'s.
    """
    return call_result(registered.tool.name, registered.returns, output)


def find_tool(server: Server, name: str) -> RegisteredTool:
    """The registered tool called ``name``; an unknown tool is -32602 (tools §Error Handling)."""
    registered = server.tools.get(name)
    if registered is None:
        raise InvalidParams(f"Unknown tool: {name}")
    return registered


def check_arguments(
    registered: RegisteredTool, arguments: dict[str, Any]
) -> models.CallToolResult | None:
    """The ``isError`` result for arguments that break ``inputSchema``; ``None`` if they fit.

    Spec: server/tools §Error Handling — input validation errors are tool
    execution errors, reported with ``isError: true`` so the model can
    correct itself; §Security Considerations — servers MUST validate all
    tool inputs. A string with a lone surrogate is refused the same way.
    """
    violations = registered.arguments.violations(arguments)
    if not violations:
        return None
    return invalid_arguments(registered.tool.name, (v.describe() for v in violations))


def check_structured(registered: RegisteredTool, result: models.CallToolResult) -> None:
    """-32603 unless a successful result's ``structuredContent`` fits ``outputSchema``.

    Spec: server/tools §Output Schema — if an output schema is provided,
    servers MUST provide structured results that conform to it. A result
    that does not (or has none) is the server's bug: the client gets a
    generic -32603 and the log gets the detail. ``isError`` results are
    not checked: they report a failure, not the tool's output.
    """
    if registered.structured is None or result.is_error:
        return
    name = registered.tool.name
    if result.structured_content is None:
        raise report_fault(
            log, "tool %s has an outputSchema but returned no structuredContent", name
        )
    violations = registered.structured.violations(result.structured_content)
    if violations:
        detail = "; ".join(violation.describe() for violation in violations)
        raise report_fault(
            log, "tool %s: structuredContent breaks its outputSchema: %s", name, detail
        )


def error_for(error: BaseException) -> McpError:
    """The JSON-RPC error for what a handler raised: its own spec error, else -32603.

    The first :class:`McpError` found depth-first answers, unless anything
    else was raised beside it: an unexpected exception is a server bug,
    -32603 with the whole of it logged, and is never hidden behind another
    answer. The task runner ends a failed job with this same function.
    """
    found = leaves(error)
    unexpected = [
        leaf for leaf in found if not isinstance(leaf, McpError | ToolError | InputPending)
    ]
    first = next((leaf for leaf in found if isinstance(leaf, McpError)), None)
    if unexpected or first is None:
        return report_fault(log, "handler failed", cause=error)
    return first


def tool_outcome(error: Exception) -> models.CallToolResult | InputRequired:
    """The one mapping of what a tool raised, on the plain path and in a task.

    A tool may raise directly or from a nursery of its own, so ``error`` may
    be an exception group, nested to any depth. Its leaves decide, the most
    serious kind first:

    1. anything unexpected: -32603, detail logged (a bug is never hidden);
    2. else a protocol error (:class:`McpError`, e.g. ``InvalidParams``):
       that error, the first one depth-first;
    3. else :class:`ToolError`: one ``isError`` result with each failure's
       message as its own text block (server/tools §Error Handling);
    4. else only pending input (:class:`InputPending`, from ``ask`` on a
       plain call): one ``input_required`` result asking for every key the
       leaves wait for.

    Raises the :class:`McpError` of rules 1 and 2.
    """
    found = leaves(error)
    if not all(isinstance(leaf, ToolError | InputPending) for leaf in found):
        # error_for logged whatever needs logging; the client sees only the code.
        raise error_for(error) from None
    failures = [leaf for leaf in found if isinstance(leaf, ToolError)]
    if failures:
        blocks: list[models.ContentBlock] = [models.TextContent(str(f)) for f in failures]
        return models.CallToolResult(blocks, is_error=True)
    return rounds.pending_round(found)


@attrs.frozen
class PreparedCall:
    """A ``tools/call`` that passed every check: what runs, on what, in which round."""

    registered: RegisteredTool
    arguments: dict[str, Any]
    target: rounds.RoundTarget


def prepare_call(
    server: Server, ctx: RequestContext, params: dict[str, Any]
) -> PreparedCall | models.CallToolResult:
    """The call ready to run, or the ``isError`` result that refuses its arguments.

    An unknown tool is -32602 (:func:`find_tool`); a multi round-trip retry
    is checked against the round it continues (:func:`~presa_trio.server.rounds.open_round`).
    """
    name, arguments = read_call_params(params)
    registered = find_tool(server, name)
    require_needs(registered.needs, ctx.capabilities)
    refused = check_arguments(registered, arguments)
    if refused is not None:
        return refused
    target = rounds.RoundTarget("tools/call", name, arguments)
    rounds.open_round(ctx, params, target)
    return PreparedCall(registered, arguments, target)


async def run_call(
    registered: RegisteredTool, ctx: RequestContext, arguments: dict[str, Any]
) -> models.CallToolResult | InputRequired:
    """Run a tool's handler on checked arguments and map its outcome.

    A tool registered with ``nursery=True`` runs with the call's nursery
    (``ctx.nursery``; in a task, the task's own), and the outcome is mapped
    once every child task it started there has ended. Any other tool runs
    straight in the caller's task: a nursery costs a cancel scope and a
    schedule point on every call, and a tool that starts no child has
    nothing for it to wait for.

    A child that asks (``ctx.ask`` on a plain call) waits for answers the
    client has not given: the call answers ``input_required`` for them, as
    when the tool itself asks, so the tool reads the same as in a task,
    where the child waits on the task (mrtr §Basic Workflow; spec-notes §47).
    """
    if registered.nursery:
        try:
            async with ctx.supervising():
                output = await run_handler(registered, ctx, arguments)
        except* InputPending as pending:
            output = rounds.pending_round(leaves(pending))
        except* HANDLER_FAILURES as error:
            # A child task in the call's nursery failed (or the tool exited): that
            # is not the tool's answer, so never an ``isError`` result; a task's
            # children alike. With it, a child's pending input is no answer either.
            raise error_for(error) from None
    else:
        output = await run_handler(registered, ctx, arguments)
    return map_outcome(registered, output)


def map_outcome(
    registered: RegisteredTool, output: ToolOutput
) -> models.CallToolResult | InputRequired:
    """The one mapping of what a handler gave: normalised, its ``structuredContent`` checked.

    ``output`` is what the handler returned, or :func:`tool_outcome` of what
    it raised; a task's worker maps its tool's outcome with this too.
    """
    outcome = as_call_result(registered, output)
    if isinstance(outcome, models.CallToolResult):
        check_structured(registered, outcome)
    return outcome


async def run_handler(
    registered: RegisteredTool, ctx: RequestContext, arguments: dict[str, Any]
) -> ToolOutput:
    """What the handler returned, or :func:`tool_outcome` of what it raised."""
    try:
        return await registered.handler(ctx, arguments)
    except Exception as error:
        return tool_outcome(error)


def param_headers(server: Server, params: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """The ``Mcp-Param-*`` headers of a ``tools/call``: header -> path into params.

    Spec: basic/transports/streamable-http §Custom Headers from Tool
    Parameters — the arguments a tool's ``inputSchema`` marks with
    ``x-mcp-header``. An unknown tool has none; the call itself answers for it.
    """
    name = params.get("name")
    registered = server.tools.get(name) if isinstance(name, str) else None
    if registered is None or not registered.header_params:
        return {}
    return {header: ("arguments", *path) for header, path in registered.header_params.items()}


def answer_call(
    ctx: RequestContext, call: PreparedCall, outcome: models.CallToolResult | InputRequired
) -> dict[str, Any]:
    """A plain call's result: the ``CallToolResult``, or the round that asks for input."""
    if isinstance(outcome, InputRequired):
        return rounds.close_round(ctx, outcome, call.target)
    result: dict[str, Any] = to_wire(outcome)
    return result


async def call_tool(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """Call a tool for this request: prepare, run, answer (with the round around it)."""
    call = prepare_call(server, ctx, params)
    if isinstance(call, models.CallToolResult):
        refused: dict[str, Any] = to_wire(call)
        return refused
    return answer_call(ctx, call, await run_call(call.registered, ctx, call.arguments))
