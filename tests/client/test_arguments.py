"""``key=value`` typed from the schema, and header values as a client writes them
(pure functions, no server)."""

from __future__ import annotations

import pytest

from presa_trio.client.arguments import parse_pairs, typed_value
from presa_trio.client.errors import UsageProblem
from presa_trio.wire.headers import header_params, header_value

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "on": {"type": "boolean"},
        "tags": {"type": "array"},
        "either": {"type": ["integer", "string"]},
        "region": {"type": "string", "x-mcp-header": "Region"},
    },
}


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("name=42", {"name": "42"}),
        ("count=42", {"count": 42}),
        ("count=42.0", {"count": 42}),
        ("ratio=0.5", {"ratio": 0.5}),
        ("on=yes", {"on": True}),
        ("on=false", {"on": False}),
        ('tags=["a",1]', {"tags": ["a", 1]}),
        ("either=7", {"either": 7}),
        ("either=seven", {"either": "seven"}),
        ('extra={"a":1}', {"extra": {"a": 1}}),
        ("extra=plain", {"extra": "plain"}),
        ("name:=null", {"name": None}),
        ("name=a=b", {"name": "a=b"}),
    ],
)
def test_values_are_typed_by_their_property(word: str, expected: dict[str, object]) -> None:
    assert parse_pairs([word], SCHEMA, "args") == expected


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["count=1.5"], "args: count: expected integer, got '1.5'"),
        (["on=maybe"], "args: on: expected boolean, got 'maybe'"),
        (["count"], "args: 'count' is not key=value"),
        (["name:=nope"], "args: name:= needs JSON, got 'nope'"),
        (["name=a", "name=b"], "args: name is given twice"),
    ],
)
def test_words_that_cannot_be_read(words: list[str], said: str) -> None:
    with pytest.raises(UsageProblem, match="^" + said.replace("(", r"\(").replace(")", r"\)")):
        parse_pairs(words, SCHEMA, "args")


def test_a_boolean_is_never_a_number() -> None:
    with pytest.raises(ValueError, match="expected integer"):
        typed_value("true", {"type": "integer"})


def test_mirrored_header_values_and_paths() -> None:
    """streamable-http §Value Encoding, and x-mcp-header found through properties."""
    assert header_value("eu-west") == "eu-west"
    assert header_value("Zürich") == "=?base64?WsO8cmljaA==?="
    assert header_value(" padded") == "=?base64?IHBhZGRlZA==?="
    assert header_params(SCHEMA) == {"Region": ("region",)}
