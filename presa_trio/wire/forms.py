"""The forms an elicitation may ask: the spec's restricted subset of JSON Schema.

A form is a flat object of primitive fields: strings (with the formats
``email``, ``uri``, ``date``, ``date-time``), numbers, integers, booleans,
and enums of strings, single or multiple choice, each keyword with a value
of the type the schema gives it. :func:`check_form` refuses anything else
in one line naming the field, a :class:`~presa_trio.wire.hints.SignatureError`:
a form outside the subset is the server's mistake, never sent. An accepted
answer's content is held to its form by :func:`check_content`, a -32602.

Spec: 2026-07-28 client/elicitation §Requested Schema, §Form Mode Security; schema.ts
``ElicitRequestFormParams.requestedSchema``, ``PrimitiveSchemaDefinition``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

from presa_trio.wire.errors import InvalidParams
from presa_trio.wire.hints import STRING_READERS, SignatureError
from presa_trio.wire.models import JSONObject
from presa_trio.wire.schemas import CompiledSchema
from presa_trio.wire.well_formed import are_strings, is_integer, is_number, is_text

#: The keywords each kind of field may carry (schema.ts ``PrimitiveSchemaDefinition``).
EVERY_FIELD = frozenset({"type", "title", "description", "default"})
KEYWORDS: Mapping[str, frozenset[str]] = {
    "string": EVERY_FIELD | {"minLength", "maxLength", "format", "enum", "oneOf", "enumNames"},
    "number": EVERY_FIELD | {"minimum", "maximum"},
    "integer": EVERY_FIELD | {"minimum", "maximum"},
    "boolean": EVERY_FIELD,
    "array": EVERY_FIELD | {"minItems", "maxItems", "items"},
}
#: The string formats a form may ask for (schema.ts ``StringSchema.format``).
STRING_FORMATS = ("email", "uri", "date", "date-time")
#: The keywords of the form itself (schema.ts ``ElicitRequestFormParams.requestedSchema``).
FORM_KEYWORDS = frozenset({"$schema", "type", "properties", "required"})
WHAT_A_FORM_HOLDS = (
    "a form holds strings (formats email, uri, date, date-time), numbers, integers, "
    "booleans and string enums"
)


def is_count(value: Any) -> bool:
    """A length or a number of items: an integer, not below zero."""
    return is_integer(value) and value >= 0


def is_boolean(value: Any) -> bool:
    return isinstance(value, bool)


#: What the value of each keyword is, and how it reads in a refusal (schema.ts
#: ``StringSchema``, ``NumberSchema``, ``BooleanSchema``, the enum schemas).
VALUES: Mapping[str, tuple[Callable[[Any], bool], str]] = {
    "title": (is_text, "a string"),
    "description": (is_text, "a string"),
    "minLength": (is_count, "a count"),
    "maxLength": (is_count, "a count"),
    "minItems": (is_count, "a count"),
    "maxItems": (is_count, "a count"),
    "minimum": (is_number, "a number"),
    "maximum": (is_number, "a number"),
    "enumNames": (are_strings, "a list of strings"),
}
#: What a field's ``default`` is, by the field's type.
DEFAULTS: Mapping[str, tuple[Callable[[Any], bool], str]] = {
    "string": (is_text, "a string"),
    "number": (is_number, "a number"),
    "integer": (is_number, "a number"),
    "boolean": (is_boolean, "a boolean"),
    "array": (are_strings, "a list of strings"),
}


def are_titled_choices(options: Any) -> bool:
    """``[{"const": "#FF0000", "title": "Red"}, …]``: choices with their display titles."""
    return isinstance(options, list) and all(
        isinstance(option, dict)
        and set(option) == {"const", "title"}
        and isinstance(option["const"], str)
        and isinstance(option["title"], str)
        for option in options
    )


def field_problem(field: Any) -> str | None:
    """What keeps ``field`` out of a form, or ``None`` if the spec allows it."""
    kind = field.get("type") if isinstance(field, dict) else None
    if not isinstance(kind, str) or kind not in KEYWORDS:
        return f"{describe_kind(field)} is not a primitive field"
    extra = sorted(set(field) - KEYWORDS[kind])
    if extra:
        return f"{', '.join(extra)} is not allowed on {kind} fields"
    for keyword, value in field.items():
        fits, what = DEFAULTS[kind] if keyword == "default" else VALUES.get(keyword, (None, ""))
        if fits is not None and not fits(value):
            return f"{keyword} is {what}, not {value!r}"
    if "format" in field and field["format"] not in STRING_FORMATS:
        return f"format {field['format']!r} is not one of {', '.join(STRING_FORMATS)}"
    if "enum" in field and not are_strings(field["enum"]):
        return "the values of an enum are strings"
    if "oneOf" in field and not are_titled_choices(field["oneOf"]):
        return "oneOf lists choices, each {const, title}"
    if kind == "array":
        items = field.get("items")
        enum = isinstance(items, dict) and set(items) == {"type", "enum"}
        enum = enum and items["type"] == "string" and are_strings(items["enum"])
        titled = isinstance(items, dict) and set(items) == {"anyOf"}
        if not (enum or (titled and are_titled_choices(items["anyOf"]))):
            return "a list is a multiple choice: its items are a string enum"
    return None


def describe_kind(field: Any) -> str:
    """How a field that is no primitive reads in a refusal: "an object", "a union"…"""
    if isinstance(field, dict) and "anyOf" in field:
        return "a union"
    kind = field.get("type") if isinstance(field, dict) else None
    if kind == "object":
        return "an object"
    return f"type {kind!r}" if kind else "a free value"


def check_form(schema: Any, where: str) -> None:
    """Refuse a requested schema outside the spec's subset, naming the field; else nothing."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise SignatureError(f'{where}: a form is an object schema, "type": "object"')
    extra = sorted(set(schema) - FORM_KEYWORDS)
    if extra:
        raise SignatureError(f"{where}: {', '.join(extra)} is not allowed on a form")
    if not isinstance(schema.get("$schema", ""), str):
        raise SignatureError(f"{where}: $schema is a string")
    if not are_strings(schema.get("required", [])):
        raise SignatureError(f"{where}: required is a list of property names")
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise SignatureError(f"{where}: a form needs its properties, an object")
    for name, field in properties.items():
        problem = field_problem(field)
        if problem is not None:
            raise SignatureError(f"{where}, field {name!r}: {problem}; {WHAT_A_FORM_HOLDS}")


def check_content(schema: CompiledSchema, key: str, content: JSONObject) -> None:
    """-32602 unless accepted ``content`` fits the form it answers.

    A field of format ``date`` or ``date-time`` must also hold one, and a
    ``number`` one a number a double holds: a typed form reads them into a
    ``date``, a ``datetime``, a ``float``, so an answer is refused where it
    arrives, never once a task has taken it (spec-notes §63).

    Spec: client/elicitation §Form Mode Security — servers SHOULD validate
    that received data matches the requested schema.
    """
    violations = schema.violations(content)
    if violations:
        raise InvalidParams(
            f"inputResponses[{key!r}]: the content does not fit the requested schema "
            f"({violations[0].describe()})"
        )
    problem = unreadable_field(schema.schema, content)
    if problem is not None:
        raise InvalidParams(f"inputResponses[{key!r}]: {problem}")


#: The string formats a form's answer is read into values by, with what reads them:
#: the readers of a typed form's ``date`` and ``datetime`` fields.
READ_FORMATS: Mapping[str, tuple[Callable[[str], Any], str]] = {
    "date": STRING_READERS[datetime.date],
    "date-time": STRING_READERS[datetime.datetime],
}


def unreadable_field(form: JSONObject, content: JSONObject) -> str | None:
    """What keeps a field of ``content`` from being read as its form's field is read, if any.

    A string of a :data:`READ_FORMATS` format is read by its reader; a
    ``number`` field's value must fit a double, which a typed form's
    ``float`` field reads it into (RFC 8259 §6: the range that interoperates).
    """
    properties = form.get("properties")
    if not isinstance(properties, dict):
        return None
    for name, value in content.items():
        field = properties.get(name)
        if not isinstance(field, dict):
            continue
        kind = field.get("format")
        reader = READ_FORMATS.get(kind) if isinstance(kind, str) else None
        if reader is not None and isinstance(value, str):
            read, what = reader
            try:
                read(value)
            except (ValueError, ArithmeticError):
                return f"content.{name}: {value!r} is not {what}"
        if field.get("type") == "number" and is_number(value):
            try:
                float(value)
            except OverflowError:
                return f"content.{name}: the number is beyond the range of a double"
    return None
