"""A tool's schemas at registration, compiled once, and an ``outputSchema`` its return
type could never meet, refused.

Spec: 2026-07-28 server/tools §Tool, §Output Schema, §x-mcp-header; basic/index
§JSON Schema Usage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, Any, get_args, get_origin

from presa_trio.server.signatures import is_content, tool_hints
from presa_trio.wire import models
from presa_trio.wire.constraints import empty_length, empty_range
from presa_trio.wire.envelope import json_problem
from presa_trio.wire.headers import header_problem
from presa_trio.wire.hints import SignatureError, describe_hint, is_union, schema_for
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


def subschemas(schema: JSONObject, path: str = "") -> Iterator[tuple[str, JSONObject]]:
    """``schema`` and the plain subschemas under it, each with its JSON Pointer: through
    ``properties``, ``items`` and ``prefixItems`` (JSON Schema 2020-12 Core §10.3).

    Not inside ``not`` (a subschema no value meets is its point there), nor the
    branches of ``anyOf``, ``oneOf``, ``allOf``, ``if``/``then``/``else``, or
    ``$ref``/``$defs``, whose empty branch another may cover.
    """
    yield path, schema
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, member in properties.items():
            if isinstance(member, dict):
                pointer = str(name).replace("~", "~0").replace("/", "~1")
                yield from subschemas(member, f"{path}/properties/{pointer}")
    if isinstance(schema.get("items"), dict):
        yield from subschemas(schema["items"], f"{path}/items")
    if isinstance(schema.get("prefixItems"), list):
        for index, member in enumerate(schema["prefixItems"]):
            if isinstance(member, dict):
                yield from subschemas(member, f"{path}/prefixItems/{index}")


def refuse_unmeetable(where: str, **written: object) -> None:
    """Refuse a hand-written ``input_schema=`` or ``output_schema=`` holding a subschema
    whose own bounds or lengths contradict each other (``{"type": "integer",
    "minimum": 5, "maximum": 1}``, ``minLength`` over ``maxLength``): no value
    meets it, so every call giving it fails (:mod:`presa_trio.wire.constraints`;
    typed tools' ``Field`` constraints are refused where their schema is built).

    Spec: JSON Schema 2020-12 Validation §6.2-§6.4; basic/index §JSON Schema Usage.
    """
    for option, schema in written.items():
        if not isinstance(schema, dict):
            continue
        for path, member in subschemas(schema):
            problem = empty_range(member, written=True) or empty_length(member, written=True)
            if problem is not None:
                at = f" at {path}" if path else ""
                raise SignatureError(f"{where}, {option}{at}: {problem}")


#: Return types that can carry any ``structuredContent``: a result, or anything at all.
MAY_CARRY = (models.CallToolResult, Any, object)


def json_types(schema: JSONObject) -> set[str] | None:
    """The JSON types a schema admits, ``integer`` counted as ``number``; ``None`` if it
    does not say (no ``type``, or a ``type`` under only some of its ``anyOf``)."""
    kind = schema.get("type")
    if isinstance(kind, str | list):
        named = {kind} if isinstance(kind, str) else set(kind)
        return {"number" if name == "integer" else str(name) for name in named}
    if isinstance(schema.get("anyOf"), list):
        found = [json_types(member) for member in schema["anyOf"]]
        return None if any(part is None for part in found) else set().union(*found)  # type: ignore[arg-type]
    return None


def refuse_unmet_output(where: str, handler: Callable[..., Any], output_schema: object) -> None:
    """Refuse ``output_schema=`` that no value of the declared return type meets.

    With an ``outputSchema`` every successful result carries
    ``structuredContent`` that fits it (server/tools §Output Schema), and
    one that does not is -32603 (:func:`~presa_trio.server.tools.check_structured`):
    ``-> str`` returns text and never ``structuredContent``, ``-> int``
    never an object. Either would be listed and fail every call. A return
    type that may carry anything (``CallToolResult``, ``Any``, none
    declared) is left to the call.
    """
    if not isinstance(output_schema, dict):
        return
    hint = tool_hints(handler, where).get("return", Any)
    members = get_args(hint) if is_union(hint) else (hint,)
    members = tuple(get_args(m)[0] if get_origin(m) is Annotated else m for m in members)
    if any(member in MAY_CARRY for member in members):
        return
    valued = [m for m in members if not (m in (None, type(None)) or is_content(m))]
    if not valued:
        declared = "None" if hint is type(None) else describe_hint(hint)
        raise SignatureError(
            f"{where}: output_schema= asks every result for structuredContent, and "
            f"-> {declared} returns content (text, blocks or nothing), never structuredContent; "
            "return the value the schema describes, or a CallToolResult with structured_content="
        )
    found = [json_types(schema_for(member, f"{where}, return type")) for member in valued]
    wanted = json_types(output_schema)
    if wanted is None or any(part is None for part in found):
        return
    returned = set().union(*found)  # type: ignore[arg-type]
    if not returned & wanted:
        raise SignatureError(
            f"{where}: -> {describe_hint(hint)} returns a JSON {' or '.join(sorted(returned))}, "
            f"and output_schema= admits only {' or '.join(sorted(wanted))}, so every call "
            "would fail; make the two agree"
        )
