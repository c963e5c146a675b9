"""Typed elicitation forms: the schema a class gives, what the spec's subset refuses, answers."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from typing import Annotated, Any, Literal

import attrs
import pytest

from presa_trio.server import Field, SignatureError
from presa_trio.wire.elicitation import (
    Accepted,
    Cancelled,
    Declined,
    class_form,
    schema_form,
)
from presa_trio.wire.errors import InvalidParams
from presa_trio.wire.mrtr import ElicitResult


class Size(enum.Enum):
    SMALL = "s"
    LARGE = "l"


@attrs.frozen
class Order:
    item: Annotated[str, Field(title="Item", min_length=1)]
    quantity: Annotated[int, Field(ge=1, le=10)]
    gift: bool
    size: Size
    deliver_on: datetime.date
    email: str | None = None
    speed: Literal["normal", "express"] = "normal"
    extras: list[Literal["wrap", "card"]] = attrs.field(factory=list)
    weight: float = 1.5


def test_a_class_gives_a_flat_form_of_primitive_fields() -> None:
    """Spec-mandated (client/elicitation §Requested Schema; schema.ts
    PrimitiveSchemaDefinition): strings with formats, numbers, booleans, string
    enums single and multiple; ``T | None = None`` is ``T``, left out of required."""
    assert class_form(Order).schema == {
        "type": "object",
        "properties": {
            "item": {"type": "string", "title": "Item", "minLength": 1},
            "quantity": {"type": "integer", "minimum": 1, "maximum": 10},
            "gift": {"type": "boolean"},
            "size": {"type": "string", "enum": ["s", "l"]},
            "deliver_on": {"type": "string", "format": "date"},
            "email": {"type": "string"},
            "speed": {"type": "string", "enum": ["normal", "express"], "default": "normal"},
            "extras": {"type": "array", "items": {"type": "string", "enum": ["wrap", "card"]}},
            "weight": {"type": "number", "default": 1.5},
        },
        "required": ["item", "quantity", "gift", "size", "deliver_on"],
    }


@dataclasses.dataclass
class Nested:
    order: Order


@dataclasses.dataclass
class AtTime:
    at: datetime.time


@dataclasses.dataclass
class WithId:
    id: uuid.UUID


@dataclasses.dataclass
class Numbered:
    level: Literal[1, 2, 3]


@dataclasses.dataclass
class Tags:
    tags: list[str]


@dataclasses.dataclass
class Strict:
    code: Annotated[str, Field(pattern="^[A-Z]+$")]


@dataclasses.dataclass
class Either:
    value: int | str


@dataclasses.dataclass
class EitherOrNone:
    value: int | str | None = None


@dataclasses.dataclass
class RequiredMaybe:
    note: str | None


@pytest.mark.parametrize(
    ("form", "line"),
    [
        (Nested, "field 'order': an object is not a primitive field"),
        (AtTime, "field 'at': format 'time' is not one of email, uri, date, date-time"),
        (WithId, "field 'id': format 'uuid' is not one of email, uri, date, date-time"),
        (Numbered, "field 'level': enum is not allowed on integer fields"),
        (Tags, "field 'tags': a list is a multiple choice: its items are a string enum"),
        (Strict, "field 'code': pattern is not allowed on string fields"),
        (Either, "field 'value': a union is not a primitive field"),
        (RequiredMaybe, "field 'note': a union is not a primitive field"),
        (EitherOrNone, "field 'value': a union is not a primitive field"),
    ],
)
def test_a_class_outside_the_spec_subset_is_refused_in_one_line_naming_the_field(
    form: type, line: str
) -> None:
    """Spec-mandated (client/elicitation §Requested Schema: flat objects with
    primitive properties only; "complex nested structures, arrays of objects
    (beyond enums) ... are intentionally not supported")."""
    with pytest.raises(SignatureError) as refused:
        class_form(form)
    message = str(refused.value)
    assert message.startswith(f"elicitation form {form.__name__}, {line}; a form holds strings")
    assert "\n" not in message


def test_what_is_not_a_record_is_refused() -> None:
    """presa-defined (docs/api.md, typed elicitation): a typed form is a class with fields."""
    with pytest.raises(SignatureError, match=r"^elicitation form int: a typed form is an attrs"):
        class_form(int)


def test_a_hand_written_schema_is_held_to_the_same_subset() -> None:
    """Spec-mandated (client/elicitation §Requested Schema)."""
    titled = {
        "type": "string",
        "oneOf": [{"const": "#f00", "title": "Red"}, {"const": "#00f", "title": "Blue"}],
    }
    allowed = {"type": "object", "properties": {"colour": titled}, "required": ["colour"]}
    assert schema_form(allowed).schema is allowed
    nested = {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}
    with pytest.raises(SignatureError, match=r"^elicitation form, field 'a': an object"):
        schema_form(nested)
    with pytest.raises(SignatureError, match=r"^elicitation form: a form is an object schema"):
        schema_form({"type": "string"})


def one_field(field: dict[str, Any], **form: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"f": field}, **form}


@pytest.mark.parametrize(
    ("schema", "line"),
    [
        (one_field({"type": "string", "title": 5}), "field 'f': title is a string, not 5"),
        (one_field({"type": "string", "description": ["d"]}), "field 'f': description is a"),
        (one_field({"type": "string", "minLength": "3"}), "field 'f': minLength is a count"),
        (one_field({"type": "string", "maxLength": 2.5}), "field 'f': maxLength is a count"),
        (one_field({"type": "string", "minLength": -1}), "field 'f': minLength is a count"),
        (one_field({"type": "string", "default": 5}), "field 'f': default is a string"),
        (one_field({"type": "number", "minimum": "0"}), "field 'f': minimum is a number"),
        (one_field({"type": "integer", "default": True}), "field 'f': default is a number"),
        (one_field({"type": "boolean", "default": "yes"}), "field 'f': default is a boolean"),
        (
            one_field({"type": "string", "enum": ["a"], "enumNames": [1]}),
            "field 'f': enumNames is a list of strings",
        ),
        (
            one_field(
                {"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": "a"}
            ),
            "field 'f': default is a list of strings",
        ),
        (
            one_field(
                {"type": "array", "items": {"type": "string", "enum": ["a"]}, "maxItems": "2"}
            ),
            "field 'f': maxItems is a count",
        ),
        (one_field({"type": "string", "enum": ["a", 1]}), "field 'f': the values of an enum"),
        (one_field({"type": "string", "oneOf": [{"const": "a"}]}), "field 'f': oneOf lists"),
        (
            one_field({"type": "string", "oneOf": [{"const": 1, "title": "One"}]}),
            "field 'f': oneOf lists choices",
        ),
        (
            one_field({"type": "array", "items": {"type": "integer", "enum": ["a"]}}),
            "field 'f': a list is a multiple choice: its items are a string enum",
        ),
        (
            one_field({"type": "string"}, additionalProperties=False),
            "additionalProperties is not allowed on a form",
        ),
        (one_field({"type": "string"}, required="f"), "required is a list of property names"),
        (one_field({"type": "string"}, required=[1]), "required is a list of property names"),
        (one_field({"type": "string"}, **{"$schema": 7}), "$schema is a string"),
    ],
)
def test_a_keyword_of_the_wrong_type_is_refused(schema: dict[str, Any], line: str) -> None:
    """Spec-mandated (schema.ts ``StringSchema``, ``NumberSchema``, ``BooleanSchema``,
    the enum schemas, ``ElicitRequestFormParams.requestedSchema``): each keyword's value
    has the type the schema gives it, so a form that is sent validates: an enum's
    values are strings, and each titled choice (``TitledSingleSelectEnumSchema.oneOf``)
    a string ``const`` with its ``title``; a multiple choice's ``items`` are
    ``{"type": "string", "enum": [...]}`` (``UntitledMultiSelectEnumSchema``); the form
    itself holds ``$schema``, ``type``, ``properties`` and ``required`` only."""
    with pytest.raises(SignatureError) as refused:
        schema_form(schema)
    assert str(refused.value).startswith(
        f"elicitation form{',' if 'field' in line else ':'} {line}"
    )


ORDER = {"item": "tea", "quantity": 2, "gift": False, "size": "l", "deliver_on": "2026-07-28"}


def test_an_accepted_answer_is_an_instance_of_the_class() -> None:
    """presa-defined (docs/api.md, typed elicitation): the content structured into the
    class, defaults for what the form left out."""
    answer = class_form(Order).answer("k", ElicitResult("accept", {**ORDER, "extras": ["card"]}))
    assert answer == Accepted(
        Order("tea", 2, False, Size.LARGE, datetime.date(2026, 7, 28), extras=["card"])
    )


def test_declined_and_cancelled_carry_no_data() -> None:
    """Spec-mandated (client/elicitation §Response Actions)."""
    form = class_form(Order)
    assert form.answer("k", ElicitResult("decline")) == Declined()
    assert form.answer("k", ElicitResult("cancel")) == Cancelled()
    assert (Declined().data, Cancelled().data) == (None, None)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ({**ORDER, "quantity": 11}, "the content does not fit the requested schema (/quantity"),
        ({**ORDER, "deliver_on": "soon"}, "content.deliver_on: 'soon' is not an ISO 8601 date"),
        ({"item": "tea"}, "the content does not fit the requested schema ((root)"),
    ],
)
def test_content_that_does_not_fit_is_invalid_params_naming_the_key(
    content: dict[str, Any], said: str
) -> None:
    """Spec-mandated (basic/patterns/mrtr §Error Handling: information that cannot
    be parsed is a protocol error, -32602)."""
    with pytest.raises(InvalidParams) as refused:
        class_form(Order).answer("order", ElicitResult("accept", content))
    assert refused.value.message.startswith(f"inputResponses['order']: {said}")
