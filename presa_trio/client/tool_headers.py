"""Which tool definitions a client over Streamable HTTP may use: their ``x-mcp-header`` checked.

A tool whose ``inputSchema`` carries a malformed ``x-mcp-header`` must be
left out of what ``tools/list`` gave, with a warning naming it and why, so
that one bad definition does not take the other tools with it. The
constraints themselves are :func:`presa_trio.wire.headers.header_problem`,
which the server holds its own tools to at registration.

Spec: 2026-07-28 server/tools §x-mcp-header (the constraints, and "Clients
using the Streamable HTTP transport MUST reject tool definitions where any
``x-mcp-header`` value violates these constraints"); basic/transports/
streamable-http §Custom Headers from Tool Parameters (statically reachable).
"""

from __future__ import annotations

from collections.abc import Callable

from presa_trio.wire.headers import header_problem
from presa_trio.wire.models import JSONObject


def usable_tools(tools: list[JSONObject], warn: Callable[[str], None]) -> list[JSONObject]:
    """``tools`` without those whose ``x-mcp-header`` is invalid, each left out with a warning."""
    kept = []
    for tool in tools:
        problem = header_problem(tool.get("inputSchema")) if isinstance(tool, dict) else None
        if problem is None:
            kept.append(tool)
        else:
            warn(f"left out the tool {tool.get('name')!r}: {problem}")
    return kept
