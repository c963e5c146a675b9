"""Tool definitions with a malformed ``x-mcp-header`` are left out of what the client uses.

Spec: server/tools §x-mcp-header — clients over Streamable HTTP MUST reject
such definitions and exclude them from the ``tools/list`` result.
"""

from __future__ import annotations

from typing import Any

import pytest

from presa_trio.client.tool_headers import usable_tools
from presa_trio.wire.headers import header_problem


def schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


@pytest.mark.parametrize(
    ("tool_schema", "said"),
    [
        (schema(v={"type": "string", "x-mcp-header": ""}), "is not a non-empty string"),
        (schema(v={"type": "string", "x-mcp-header": "A B"}), "field-name token"),
        (schema(v={"type": "string", "x-mcp-header": "A:B"}), "field-name token"),
        (schema(v={"type": "string", "x-mcp-header": "Région"}), "field-name token"),
        (schema(v={"type": "string", "x-mcp-header": "A\nB"}), "field-name token"),
        (
            schema(
                a={"type": "string", "x-mcp-header": "Region"},
                b={"type": "string", "x-mcp-header": "region"},
            ),
            "not unique",
        ),
        (schema(v={"type": "number", "x-mcp-header": "N"}), "of type 'number'"),
        (schema(v={"type": "object", "x-mcp-header": "O"}), "of type 'object'"),
        (schema(v={"type": ["string", "null"], "x-mcp-header": "S"}), "of type ['string'"),
        (schema(v={"type": {"const": "string"}, "x-mcp-header": "S"}), "of type {'const'"),
        (schema(v={"x-mcp-header": "S"}), "of type None"),
        (
            schema(v={"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}),
            "not reached from the root",
        ),
        (
            {"type": "object", "anyOf": [schema(v={"type": "string", "x-mcp-header": "V"})]},
            "not reached from the root",
        ),
    ],
)
def test_a_malformed_annotation_is_named(tool_schema: dict[str, Any], said: str) -> None:
    """Spec-mandated (server/tools §x-mcp-header; streamable-http §Schema Extension: the
    annotation MUST be a unique field-name token on a parameter of type integer, string
    or boolean, reached through ``properties`` alone; H-34): each broken constraint is
    named, whatever JSON the parameter's ``type`` holds (a list, an object, nothing)."""
    problem = header_problem(tool_schema)
    assert problem is not None
    assert said in problem


def test_valid_annotations_nested_through_properties_pass() -> None:
    nested = schema(
        region={"type": "string", "x-mcp-header": "Region"},
        options=schema(debug={"type": "boolean", "x-mcp-header": "Debug"}),
        count={"type": "integer", "x-mcp-header": "Count"},
    )
    assert header_problem(nested) is None
    assert header_problem({"type": "object"}) is None


def test_values_in_instance_keywords_are_no_annotations() -> None:
    """An object held by ``const``, ``default``, ``enum`` or ``examples`` is an instance,
    not a schema: a key ``x-mcp-header`` in it annotates nothing."""
    instance = {"x-mcp-header": "Not a header"}
    value = {
        "type": "object",
        "const": instance,
        "default": instance,
        "enum": [instance],
        "examples": [instance],
    }
    assert header_problem(schema(value=value)) is None


def test_only_the_invalid_tools_are_left_out_each_with_a_warning() -> None:
    good = {"name": "good", "inputSchema": schema(r={"type": "string", "x-mcp-header": "R"})}
    bad = {"name": "bad", "inputSchema": schema(r={"type": "number", "x-mcp-header": "R"})}
    warnings: list[str] = []
    assert usable_tools([bad, good], warnings.append) == [good]
    assert warnings == [
        "left out the tool 'bad': x-mcp-header 'R' is on a parameter of type 'number'"
    ]
