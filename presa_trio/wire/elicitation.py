"""Typed elicitation: a form from a class, and the user's answer as an instance of it.

``await ctx.elicit("Delete it?", Confirm)`` asks the user to fill in the
fields of ``Confirm``, an attrs class or a dataclass, and answers an
:class:`Accepted` holding a ``Confirm``, or :class:`Declined`, or
:class:`Cancelled` (:data:`Elicited`). The same call with a JSON Schema
dict instead of a class answers the accepted content as a dict.

A form is a flat object of primitive fields, the spec's restricted subset
of JSON Schema: strings (with the formats ``email``, ``uri``, ``date``,
``date-time``), numbers, integers, booleans, and enums of strings, single
or multiple choice. A class's schema is the one its hints give
(:func:`~presa_trio.wire.hints.schema_for`), with one change: a field
``x: T | None = None`` is ``T``, not required, since a form can leave a
field out but has no way to send ``null``. A schema outside the subset (a
nested class, a ``time``, a ``UUID``, a list of anything but choices, a
``pattern``, a keyword whose value is not of its type) is refused when the
tool asks (:func:`~presa_trio.wire.forms.check_form`), in one line naming the field:
the mistake is the server's, so the call fails with -32603 and the line
goes to the log.

The accepted content is checked against the schema it answers, then
structured into the class; content that does not fit is -32602 naming the
input key and the field, as any answer that cannot be read.

Spec: 2026-07-28 client/elicitation §Requested Schema (schema.ts
``ElicitRequestFormParams``, ``PrimitiveSchemaDefinition``), §Response
Actions; basic/patterns/mrtr §Error Handling.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Generic, Literal, TypeAlias, TypeVar

import attrs

from presa_trio.wire.errors import InvalidParams
from presa_trio.wire.forms import check_content, check_form
from presa_trio.wire.hints import (
    SignatureError,
    arguments_converter,
    describe_hint,
    is_record,
    schema_for,
    structuring_problems,
)
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import ElicitResult
from presa_trio.wire.schemas import CompiledSchema

T = TypeVar("T")


@attrs.frozen
class Accepted(Generic[T]):
    """The user submitted the form: ``data`` is the answer, of the type asked for."""

    data: T
    action: Literal["accept"] = "accept"


@attrs.frozen
class Declined:
    """The user explicitly declined ("No", "Reject"): offer another way, perhaps."""

    action: Literal["decline"] = "decline"
    data: None = None


@attrs.frozen
class Cancelled:
    """The user dismissed the form without choosing: ask again later, perhaps."""

    action: Literal["cancel"] = "cancel"
    data: None = None


#: The outcome of ``ctx.elicit``: check ``answer.action`` (or ``isinstance``),
#: and after ``answer.action == "accept"`` a type checker knows ``answer.data``.
Elicited: TypeAlias = Accepted[T] | Declined | Cancelled


def leave_out_none(field: JSONObject) -> JSONObject:
    """``T | None`` (default ``None``) as ``T``: a form leaves a field out, it never sends null."""
    members = field.get("anyOf")
    if not isinstance(members, list) or len(members) != 2 or {"type": "null"} not in members:
        return field
    (kept,) = [member for member in members if member != {"type": "null"}]
    outer = {k: v for k, v in field.items() if k != "anyOf" and not (k == "default" and v is None)}
    return {**kept, **outer}


def class_schema(cls: type) -> tuple[JSONObject, CompiledSchema]:
    """The form of an attrs class or a dataclass, checked and compiled.

    Built on each ask, not kept: an elicitation waits for a person, and a
    form built again costs nothing beside that wait.
    """
    where = f"elicitation form {describe_hint(cls)}"
    if not is_record(cls):
        raise SignatureError(f"{where}: a typed form is an attrs class or a dataclass")
    schema = dict(schema_for(cls, where))
    required = schema.get("required", [])
    schema["properties"] = {
        name: field if name in required else leave_out_none(field)
        for name, field in schema["properties"].items()
    }
    check_form(schema, where)
    return schema, CompiledSchema.compile(schema, role=where)


@attrs.frozen(eq=False)
class Form(Generic[T]):
    """A requested schema the spec allows, compiled, and how its accepted content is read."""

    schema: JSONObject
    compiled: CompiledSchema = attrs.field(repr=False)
    read: Callable[[JSONObject], T]

    def answer(self, key: str, result: ElicitResult) -> Elicited[T]:
        """The outcome of the elicitation under ``key``; -32602 for content that does not fit.

        Spec: client/elicitation §Response Actions — ``accept`` carries the
        content, ``decline`` and ``cancel`` none; mrtr §Error Handling — an
        answer the server cannot read is a protocol error.
        """
        if result.action == "decline":
            return Declined()
        if result.action == "cancel":
            return Cancelled()
        content = result.content or {}
        check_content(self.compiled, key, content)
        try:
            data = self.read(content)
        except Exception as error:
            problems = "; ".join(structuring_problems(error, "content"))
            raise InvalidParams(f"inputResponses[{key!r}]: {problems}") from None
        return Accepted(data)


def class_form(cls: type[T]) -> Form[T]:
    """The form of ``cls``, whose accepted content is structured into an instance of it."""
    schema, compiled = class_schema(cls)
    return Form(schema, compiled, functools.partial(arguments_converter.structure, cl=cls))


def schema_form(schema: JSONObject) -> Form[JSONObject]:
    """The form of a hand-written schema, checked like a class's; the content stays a dict."""
    where = "elicitation form"
    check_form(schema, where)
    return Form(schema, CompiledSchema.compile(schema, role=where), dict)
