"""A tool's or a prompt's call as one line: ``greet(name: string, times: integer = 1)``.

``list`` and ``describe`` show each tool by its parameters, read from its
``inputSchema`` (server/tools §Tool): the properties in the schema's order,
each with its JSON type, then ``= DEFAULT`` when the schema gives one; a
property that is neither required nor defaulted is marked ``name?``. The
types are those of JSON Schema, written as a reader of the schema would
say them:

===================================  =================
schema                               shown
===================================  =================
``{"type": "string"}``               ``string``
``{"type": ["string", "null"]}``     ``string | null``
``{"enum": ["a", "b"]}``             ``"a" | "b"``
``{"type": "array", "items": I}``    ``I[]``
``{"type": "string", "format": F}``  ``string<F>``
``{"anyOf": [A, B]}``                ``A | B``
``{"$ref": "#/$defs/point"}``        ``point``
no type                              ``any``
===================================  =================

A prompt's arguments are strings (server/prompts §Prompt): only their
names are shown, ``name?`` when not required. Defaults are JSON, as sent.

Spec: server/tools §Tool (``inputSchema``); server/prompts §Prompt;
basic/index §JSON Schema Usage.
"""

from __future__ import annotations

import json
from typing import Any

from presa_trio.client.transport import list_at
from presa_trio.wire.models import JSONObject


def type_text(schema: Any) -> str:
    """The JSON type ``schema`` describes, in a few words (the table above)."""
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("$ref"), str):
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if isinstance(schema.get("enum"), list):
        return " | ".join(json.dumps(value, ensure_ascii=False) for value in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(type_text(option) for option in schema[key])
    declared = schema.get("type")
    names = [declared] if isinstance(declared, str) else list_at(schema, "type")
    if not names:
        return "any"
    return " | ".join(named_type(str(name), schema) for name in names)


def named_type(name: str, schema: JSONObject) -> str:
    """One ``type`` name, with the items of an array and the format of a string."""
    if name == "array" and "items" in schema:
        items = type_text(schema["items"])
        return f"({items})[]" if " | " in items else f"{items}[]"
    if name == "string" and isinstance(schema.get("format"), str):
        return f"string<{schema['format']}>"
    return name


def parameter_text(name: str, schema: Any, required: bool) -> str:
    """``name: type``, ``name: type = default`` or ``name?: type``."""
    shown = type_text(schema)
    if isinstance(schema, dict) and "default" in schema:
        return f"{name}: {shown} = {json.dumps(schema['default'], ensure_ascii=False)}"
    return f"{name}: {shown}" if required else f"{name}?: {shown}"


def tool_signature(tool: JSONObject) -> str:
    """``name(parameter, …)`` from the tool's ``inputSchema``."""
    schema = tool.get("inputSchema")
    schema = schema if isinstance(schema, dict) else {}
    properties = schema.get("properties")
    listed = schema.get("required")
    required = listed if isinstance(listed, list) else []  # its names, or any JSON
    parameters = [
        parameter_text(name, property_schema, name in required)
        for name, property_schema in (properties if isinstance(properties, dict) else {}).items()
    ]
    return f"{tool.get('name')}({', '.join(parameters)})"


def prompt_signature(prompt: JSONObject) -> str:
    """``name(argument, optional?)`` from the prompt's ``arguments``."""
    arguments = prompt.get("arguments")
    names = [
        f"{argument.get('name', '?')}{'' if argument.get('required') else '?'}"
        for argument in (arguments if isinstance(arguments, list) else [])
        if isinstance(argument, dict)
    ]
    return f"{prompt.get('name')}({', '.join(names)})"
