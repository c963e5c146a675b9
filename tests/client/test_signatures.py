"""A tool's parameters as one typed line, read from its ``inputSchema`` (pure, no server)."""

from __future__ import annotations

from typing import Any

import pytest

from presa_trio.client.signatures import prompt_signature, tool_signature, type_text


@pytest.mark.parametrize(
    ("schema", "shown"),
    [
        ({"type": "string"}, "string"),
        ({"type": ["integer", "null"]}, "integer | null"),
        ({"type": "string", "enum": ["red", "green"]}, '"red" | "green"'),
        ({"const": 3}, "3"),
        ({"type": "array", "items": {"type": "number"}}, "number[]"),
        ({"type": "array", "items": {"type": ["string", "null"]}}, "(string | null)[]"),
        ({"type": "string", "format": "date-time"}, "string<date-time>"),
        ({"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/point"}]}, "integer | point"),
        ({}, "any"),
        (True, "any"),
    ],
)
def test_a_schema_reads_as_its_json_type(schema: Any, shown: str) -> None:
    """presa-defined (docs/client.md, list): the types as JSON Schema names them."""
    assert type_text(schema) == shown


def test_a_tool_signature_has_types_defaults_and_optional_marks() -> None:
    """presa-defined: required plain, defaulted ``= JSON``, optional otherwise ``name?``."""
    tool = {
        "name": "greet",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "times": {"type": "integer", "default": 1},
                "tone": {"type": "string", "default": "warm"},
                "note": {"type": "string"},
            },
            "required": ["name"],
        },
    }
    assert tool_signature(tool) == (
        'greet(name: string, times: integer = 1, tone: string = "warm", note?: string)'
    )
    assert tool_signature({"name": "bare", "inputSchema": "no schema"}) == "bare()"


def test_a_prompt_signature_marks_its_optional_arguments() -> None:
    """presa-defined: prompt arguments are strings; only their names are shown."""
    prompt = {
        "name": "review",
        "arguments": [{"name": "language", "required": True}, {"name": "framework"}],
    }
    assert prompt_signature(prompt) == "review(language, framework?)"
