"""A tool's schemas at registration, compiled once.

Spec: 2026-07-28 server/tools §Tool, §x-mcp-header; basic/index §JSON Schema Usage.
"""

from __future__ import annotations

from presa_trio.wire import models
from presa_trio.wire.envelope import json_problem
from presa_trio.wire.headers import header_problem
from presa_trio.wire.models import JSONObject
from presa_trio.wire.schemas import CompiledSchema, SchemaError


def compile_tool_schemas(tool: models.Tool) -> tuple[CompiledSchema, CompiledSchema | None]:
    """Compile a tool's schemas once, at registration; refuse one that cannot be used.

    Spec: server/tools §Tool — ``inputSchema`` is a JSON Schema object with
    ``type: "object"`` (schema.ts ``Tool.inputSchema``); both schemas follow
    basic/index §JSON Schema Usage (see :mod:`presa_trio.wire.schemas`).
    A schema presa cannot validate with raises :class:`SchemaError` here,
    so the mistake shows when the server is built, not on the first call;
    so does an ``x-mcp-header`` that breaks its constraints, since every
    client over Streamable HTTP MUST then leave the tool out of ``tools/list``
    (server/tools §x-mcp-header), and a value JSON cannot carry (a NaN
    ``default``), since no ``tools/list`` could then be written at all
    (server/tools §Capabilities: the server MUST answer it).
    """
    role = f"tool {tool.name!r}: inputSchema"
    if not isinstance(tool.input_schema, dict) or tool.input_schema.get("type") != "object":
        raise SchemaError(f'{role} must be an object schema with "type": "object"')
    problem = header_problem(tool.input_schema)
    if problem is not None:
        raise SchemaError(f"{role}: {problem}")
    arguments = compile_listed(tool.input_schema, role)
    if tool.output_schema is None:
        return arguments, None
    return arguments, compile_listed(tool.output_schema, f"tool {tool.name!r}: outputSchema")


def compile_listed(schema: JSONObject, role: str) -> CompiledSchema:
    """A schema ``tools/list`` will carry, compiled; one JSON cannot write is refused."""
    problem = json_problem(schema)
    if problem is not None:
        raise SchemaError(f"{role} holds a value JSON cannot carry: {problem}")
    return CompiledSchema.compile(schema, role=role)
