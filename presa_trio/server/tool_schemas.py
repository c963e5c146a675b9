"""A tool's schemas at registration: compiled once, and the arguments headers mirror.

Spec: 2026-07-28 server/tools §Tool; basic/transports/streamable-http
§Custom Headers from Tool Parameters (``x-mcp-header``).
"""

from __future__ import annotations

from typing import Any

from presa_trio.wire import models
from presa_trio.wire.models import JSONObject
from presa_trio.wire.schemas import CompiledSchema, SchemaError


def header_params(schema: JSONObject) -> dict[str, tuple[str, ...]]:
    """Find ``x-mcp-header`` properties: header name -> path of argument keys.

    Spec: tools §x-mcp-header — reachable through chains of ``properties`` only.
    """
    found: dict[str, tuple[str, ...]] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        properties = node.get("properties") if isinstance(node, dict) else None
        if not isinstance(properties, dict):
            return
        for key, child in properties.items():
            if isinstance(child, dict) and isinstance(child.get("x-mcp-header"), str):
                found[child["x-mcp-header"]] = (*path, key)
            walk(child, (*path, key))

    walk(schema, ())
    return found


def compile_tool_schemas(tool: models.Tool) -> tuple[CompiledSchema, CompiledSchema | None]:
    """Compile a tool's schemas once, at registration; refuse one that cannot be used.

    Spec: server/tools §Tool — ``inputSchema`` is a JSON Schema object with
    ``type: "object"`` (schema.ts ``Tool.inputSchema``); both schemas follow
    basic/index §JSON Schema Usage (see :mod:`presa_trio.wire.schemas`).
    A schema presa cannot validate with raises :class:`SchemaError` here,
    so the mistake shows when the server is built, not on the first call.
    """
    role = f"tool {tool.name!r}: inputSchema"
    if not isinstance(tool.input_schema, dict) or tool.input_schema.get("type") != "object":
        raise SchemaError(f'{role} must be an object schema with "type": "object"')
    arguments = CompiledSchema.compile(tool.input_schema, role=role)
    if tool.output_schema is None:
        return arguments, None
    structured = CompiledSchema.compile(
        tool.output_schema, role=f"tool {tool.name!r}: outputSchema"
    )
    return arguments, structured
