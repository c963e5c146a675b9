"""``key=value`` words typed from a JSON Schema, and checked against it before sending.

``presa-trio call URL add a=2 b=3`` sends ``{"a": 2, "b": 3}`` when the
tool's ``inputSchema`` says both are numbers, and ``{"a": "2"}`` when it says
``a`` is a string. A value is read by the type its property declares:

- ``string``: the text as it is;
- ``integer``, ``number``, ``boolean``, ``null``, ``array``, ``object``: the
  text as JSON, which must then be of that type (``true``/``false`` also as
  ``yes``/``no``);
- a list of types: JSON of one of them, else the text if ``string`` is one;
- no type: JSON when the text parses as a JSON object or array, else the text.

``key:=JSON`` takes the JSON as it is, whatever the schema says. The whole
arguments object is then checked against the schema with the server's own
validator (:class:`presa_trio.wire.schemas.CompiledSchema`), so a call that
does not fit never leaves the terminal. The same reading types an answer
typed into an elicitation form, and a prompt's arguments, which are strings
(:func:`prompt_schema`; a JSON value is sent as its text, :func:`as_strings`).

Spec: server/tools §Tool (``inputSchema``); client/elicitation §Requested Schema.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from presa_trio.client.errors import UsageProblem
from presa_trio.client.transport import list_at
from presa_trio.wire.envelope import parse_text
from presa_trio.wire.models import JSONObject
from presa_trio.wire.schemas import CompiledSchema, SchemaError

JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "null": type(None),
    "array": list,
    "object": dict,
    "string": str,
}
#: How much of what was typed an error quotes back.
QUOTED = 60
YES = {"true": True, "yes": True, "y": True, "false": False, "no": False, "n": False}


def quoted(text: str) -> str:
    """``text`` as an error line quotes it: its repr, cut short after :data:`QUOTED`
    characters (an argument of a megabyte is named, not shown)."""
    return repr(text) if len(text) <= QUOTED else f"{text[:QUOTED]!r}…"


def of_type(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    wanted = JSON_TYPES.get(name)
    return wanted is not None and isinstance(value, wanted)


def as_json(text: str) -> tuple[bool, Any]:
    """``text`` as JSON (:func:`~presa_trio.wire.envelope.parse_text`: none that could
    not be sent on, such as ``NaN``), and whether it is JSON at all."""
    try:
        return True, parse_text(text)
    except ValueError:
        return False, None


def typed_value(text: str, schema: Any) -> Any:
    """``text`` read as ``schema`` types it; ValueError saying what was expected."""
    declared = schema.get("type") if isinstance(schema, dict) else None
    listed = [declared] if isinstance(declared, str) else list_at(schema, "type")
    types = [name for name in listed if isinstance(name, str)]  # a type is named by a string
    if not types:
        parsed, value = as_json(text)
        return value if parsed and isinstance(value, dict | list) else text
    if types == ["string"]:
        return text
    if "boolean" in types and text.lower() in YES:
        return YES[text.lower()]
    parsed, value = as_json(text)
    if parsed and any(of_type(value, name) for name in types):
        return int(value) if types == ["integer"] and isinstance(value, float) else value
    if "string" in types:
        return text
    raise ValueError(f"expected {' or '.join(types)}, got {quoted(text)}")


def property_schema(schema: JSONObject, key: str) -> Any:
    properties = schema.get("properties")
    return properties.get(key) if isinstance(properties, dict) else None


def parse_pairs(words: Sequence[str], schema: JSONObject, what: str) -> JSONObject:
    """``key=value`` and ``key:=JSON`` words as the arguments object ``schema`` describes."""
    arguments: JSONObject = {}
    for word in words:
        key, equals, text = word.partition("=")
        if not equals or not key:
            raise UsageProblem(f"{what}: {quoted(word)} is not key=value")
        if key.endswith(":"):
            key = key[:-1]
            parsed, value = as_json(text)
            if not parsed:
                raise UsageProblem(f"{what}: {key}:= needs JSON, got {quoted(text)}")
        else:
            try:
                value = typed_value(text, property_schema(schema, key))
            except ValueError as error:
                raise UsageProblem(f"{what}: {key}: {error}") from None
        if key in arguments:
            raise UsageProblem(f"{what}: {key} is given twice")
        arguments[key] = value
    return arguments


def prompt_schema(prompt: JSONObject) -> JSONObject:
    """A prompt's ``arguments`` as a schema: an object of strings, the required ones
    required, no others (server/prompts §Prompt: arguments are named strings)."""
    listed = prompt.get("arguments")
    arguments = [a for a in (listed if isinstance(listed, list) else []) if isinstance(a, dict)]
    return {
        "type": "object",
        "properties": {str(a.get("name")): {"type": "string"} for a in arguments},
        "required": [str(a.get("name")) for a in arguments if a.get("required") is True],
        "additionalProperties": False,
    }


def given_arguments(
    text: str | None, words: Sequence[str], schema: JSONObject, what: str
) -> JSONObject:
    """``--args JSON`` and ``key=value`` words together; a key given in both is an error."""
    given = json_object(text, "--args") if text is not None else {}
    typed = parse_pairs(words, schema, what)
    if twice := given.keys() & typed.keys():
        raise UsageProblem(
            f"{what}: {', '.join(sorted(twice))} given both in --args and as KEY=VALUE"
        )
    return {**given, **typed}


def as_strings(arguments: JSONObject) -> dict[str, str]:
    """Arguments that must be strings (a prompt's, a completion's context): JSON as its text."""
    return {
        key: value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        for key, value in arguments.items()
    }


def json_object(text: str, what: str) -> JSONObject:
    """``--args '{…}'``: a JSON object, else a usage error."""
    parsed, value = as_json(text)
    if not parsed or not isinstance(value, dict):
        raise UsageProblem(f"{what} must be a JSON object, got {quoted(text)}")
    return value


def check(value: Any, schema: Any, what: str) -> None:
    """A usage error naming every way ``value`` breaks ``schema`` (a schema that
    cannot be compiled is the server's problem, and is not checked)."""
    try:
        compiled = CompiledSchema.compile(schema, role=what)
    except SchemaError:
        return
    violations = compiled.violations(value)
    if violations:
        said = "; ".join(violation.describe() for violation in violations)
        raise UsageProblem(f"{what}: not allowed by the schema: {said}")
