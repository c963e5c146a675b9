"""Field constraints that no value can meet, found when the schema is built.

``Annotated[int, Field(ge=10, le=1)]`` is a schema every value fails: the
tool would be listed, and every call answered "invalid arguments" (on a
return type, every result refused), for a mistake the signature alone
shows. :func:`unsatisfiable` says what is wrong, and
:func:`presa_trio.wire.hints.schema_for` refuses the hint with it, naming
where; a hand-written ``input_schema=`` or ``output_schema=`` is walked
by :func:`presa_trio.server.tool_schemas.refuse_unmeetable`, whose
problems name the schema's keywords (``written=True``). Only constraints
that contradict each other, or the type they are written on, are found: a
narrow range, or a long ``min_length``, is a choice the developer may mean.

Spec: JSON Schema 2020-12 Validation §6.2 (``minimum``, ``maximum`` and
their exclusive forms), §6.3 (``minLength``, ``maxLength``), §6.4
(``minItems``, ``maxItems``), §6.1.2 (``enum``); basic/index §JSON Schema
Usage (2020-12 by default).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from presa_trio.wire.models import JSONObject
from presa_trio.wire.schemas import CompiledSchema, SchemaError

#: Why every call would fail, said after each problem.
EVERY_CALL = "so every call would fail"


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


#: Each bound's keyword and ``Field``'s name for it, lower side then upper.
LOWER: Mapping[str, str] = {"minimum": "ge", "exclusiveMinimum": "gt"}
UPPER: Mapping[str, str] = {"maximum": "le", "exclusiveMaximum": "lt"}
#: ``Field``'s name for a bound, back to its schema keyword.
KEYWORD: Mapping[str, str] = {name: key for key, name in {**LOWER, **UPPER}.items()}


def types_of(schema: JSONObject) -> set[str]:
    """The JSON types a hand-written schema's ``type`` names; empty if it names none
    (then any type of value is valid, and no bound confines it: Validation §6.1.1)."""
    kind = schema.get("type")
    named = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    return {name for name in named if isinstance(name, str)}


def spelled(pairs: tuple[tuple[str, Any], ...], written: bool) -> str:
    """Two constraints as the developer wrote them: ``Field(ge=10, le=1)``, or for a
    hand-written schema its keywords, ``{"minimum": 10, "maximum": 1}``."""
    if written:
        return "{" + ", ".join(f'"{key}": {value!r}' for key, value in pairs) + "}"
    return "Field(" + ", ".join(f"{key}={value!r}" for key, value in pairs) + ")"


def tightest(
    schema: JSONObject, names: Mapping[str, str], pick: Callable[..., float]
) -> tuple[float, str] | None:
    """The tighter of a schema's bounds on one side, and ``Field``'s name for it.

    ``pick`` is ``max`` for the lower side, ``min`` for the upper; of two
    equal bounds, the exclusive one (``gt``, ``lt``) is the tighter.
    """
    found = [(schema[key], name) for key, name in names.items() if is_number(schema.get(key))]
    if not found:
        return None
    value = pick(number for number, _ in found)
    return value, [name for number, name in found if number == value][-1]


def empty_range(schema: JSONObject, *, written: bool = False) -> str | None:
    """Bounds no number meets (``ge=10, le=1``; ``gt=1, lt=1``), or, on an
    ``integer``, no integer meets (``gt=1, lt=2``).

    ``written``: the schema is hand-written, so the problem names its
    keywords, and is found only where its ``type`` admits numbers alone
    (bounds hold for numbers only: Validation §6.2, so ``{"minimum": 5,
    "maximum": 1}`` with no ``type`` still admits every string).
    """
    low, high = tightest(schema, LOWER, max), tightest(schema, UPPER, min)
    if low is None or high is None:
        return None
    numeric = types_of(schema)
    if written and not (numeric and numeric <= {"integer", "number"}):
        return None
    (least, above), (most, below) = low, high
    strict = above == "gt" or below == "lt"
    empty, what = least > most or (least == most and strict), "number"
    if not empty and schema.get("type") == "integer":
        first = math.floor(least) + 1 if above == "gt" else math.ceil(least)
        last = math.ceil(most) - 1 if below == "lt" else math.floor(most)
        empty, what = first > last, "integer"
    if not empty:
        return None
    if written:
        bounds = ((KEYWORD[above], least), (KEYWORD[below], most))
        return (
            f"no {what} meets {spelled(bounds, written)}; the lower bound (minimum, "
            "exclusiveMinimum) goes below the upper (maximum, exclusiveMaximum)"
        )
    return (
        f"no {what} meets {spelled(((above, least), (below, most)), written)}, {EVERY_CALL}; "
        "the lower bound (ge, gt) goes below the upper (le, lt)"
    )


#: The lengths a schema bounds: its keywords, ``Field``'s names for them, what they count.
LENGTHS = (
    ("minLength", "maxLength", "min_length", "max_length", "string"),
    ("minItems", "maxItems", "min_items", "max_items", "array"),
)


def empty_length(schema: JSONObject, *, written: bool = False) -> str | None:
    """A least length over the greatest (``min_length=5, max_length=2``).

    ``written``: as for :func:`empty_range`; a length holds for its own type
    only (Validation §6.3, §6.4), so it is found where ``type`` is that type.
    """
    for low, high, least, most, what in LENGTHS:
        bounded = is_number(schema.get(low)) and is_number(schema.get(high))
        if written and types_of(schema) != {what}:
            continue
        if bounded and schema[low] > schema[high]:
            if written:
                pairs = ((low, schema[low]), (high, schema[high]))
                return f"no {what} meets {spelled(pairs, written)}; {low} goes at or below {high}"
            pairs = ((least, schema[low]), (most, schema[high]))
            return (
                f"no {what} meets {spelled(pairs, written)}, {EVERY_CALL}; "
                f"{least} goes at or below {most}"
            )
    return None


def resized_tuple(base: JSONObject, field: Any) -> str | None:
    """``Field(min_items=…)`` or ``max_items=`` other than a fixed tuple's own length.

    ``tuple[int, int]`` holds exactly two items (its ``prefixItems``, and
    ``items: false``); another count admits arrays no such tuple is built
    from, or none at all.
    """
    prefix = base.get("prefixItems")
    if not isinstance(prefix, list) or base.get("items") is not False:
        return None
    for name in ("min_items", "max_items"):
        given = getattr(field, name, None)
        if given is not None and given != len(prefix):
            return (
                f"a tuple of {len(prefix)} items holds exactly {len(prefix)}, and "
                f"Field({name}={given!r}) would change that; drop it, or use tuple[T, ...]"
            )
    return None


def excluded_choices(schema: JSONObject, where: str) -> str | None:
    """A ``Literal`` or an ``Enum`` whose every value the constraints beside it exclude
    (``Annotated[Literal[1, 2], Field(ge=5)]``)."""
    choices = schema.get("enum")
    if not isinstance(choices, list):
        return None
    try:
        compiled = CompiledSchema.compile(schema, role=where)
    except SchemaError:
        return None  # refused where the whole schema is compiled, with its own reason
    if any(not compiled.violations(choice) for choice in choices):
        return None
    return (
        f"none of the values {choices!r} meets the Field constraints beside them, "
        f"{EVERY_CALL}; drop the constraints, or the values they exclude"
    )


def unsatisfiable(base: JSONObject, field: Any, schema: JSONObject, where: str) -> str | None:
    """Why no value meets ``schema``, made from ``base`` (the type's schema) by ``field``
    (a :class:`~presa_trio.wire.hints.Field`); ``None`` if some value can."""
    return (
        resized_tuple(base, field)
        or empty_range(schema)
        or empty_length(schema)
        or excluded_choices(schema, where)
    )
