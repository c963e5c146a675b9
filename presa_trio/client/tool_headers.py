"""Which tool definitions a client over Streamable HTTP may use: their ``x-mcp-header`` checked.

A tool whose ``inputSchema`` carries a malformed ``x-mcp-header`` must be
left out of what ``tools/list`` gave, with a warning naming it and why, so
that one bad definition does not take the other tools with it.

Spec: 2026-07-28 server/tools §x-mcp-header (the constraints, and "Clients
using the Streamable HTTP transport MUST reject tool definitions where any
``x-mcp-header`` value violates these constraints"); basic/transports/
streamable-http §Custom Headers from Tool Parameters (statically reachable).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator
from typing import Any

from presa_trio.wire.models import JSONObject

#: RFC 9110 §5.6.2 ``tchar``: what a header field name is made of.
TCHAR = frozenset(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~")
#: The types a mirrored parameter may have (``number`` is not one of them).
HEADER_TYPES = frozenset({"string", "integer", "boolean"})


def header_annotations(node: Any, reachable: bool = True) -> Iterator[tuple[Any, JSONObject, bool]]:
    """Every ``x-mcp-header`` below the schema ``node``: its value, the schema carrying
    it, and whether that schema is reached from the root through ``properties`` alone."""
    if not isinstance(node, dict):
        return
    for key, child in node.items():
        if key == "properties" and isinstance(child, dict):
            for schema in child.values():
                yield from carried(schema, reachable)
        else:
            for schema in child if isinstance(child, list) else [child]:
                yield from carried(schema, reachable=False)


def carried(schema: Any, reachable: bool) -> Iterator[tuple[Any, JSONObject, bool]]:
    """The annotation ``schema`` itself carries, if any, then those below it."""
    if isinstance(schema, dict):
        if "x-mcp-header" in schema:
            yield schema["x-mcp-header"], schema, reachable
        yield from header_annotations(schema, reachable)


def header_problem(schema: Any) -> str | None:
    """Why ``schema``'s ``x-mcp-header`` annotations are invalid, or None when they are not."""
    seen: set[str] = set()
    for name, carrier, reachable in header_annotations(schema):
        if not isinstance(name, str) or not name:
            return f"x-mcp-header {name!r} is not a non-empty string"
        if not set(name) <= TCHAR:
            return f"x-mcp-header {name!r} is not an HTTP field-name token"
        if name.lower() in seen:
            return f"x-mcp-header {name!r} is not unique (ignoring case)"
        seen.add(name.lower())
        if carrier.get("type") not in HEADER_TYPES:
            return f"x-mcp-header {name!r} is on a parameter of type {carrier.get('type')!r}"
        if not reachable:
            return f"x-mcp-header {name!r} is not reached from the root through properties"
    return None


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
