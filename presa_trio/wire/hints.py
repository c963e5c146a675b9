"""Type hints as JSON Schema, and JSON values back into the hinted types.

:func:`schema_for` is the table of which hints presa describes and how;
:data:`arguments_converter` structures checked JSON into those types and
unstructures them back. Both are used once per hint at registration
(:mod:`presa_trio.server.signatures`), per call only to structure a tool's
arguments or unstructure what it returns, and per answer to read a typed
elicitation (:mod:`presa_trio.wire.elicitation`).

Values JSON has no type for travel as strings, each with the JSON Schema
``format`` that names it (:data:`STRING_FORMS`). In 2020-12 a ``format`` is
an annotation, not an assertion, so the schema check lets any string
through; the check is structuring, which refuses a string that is not the
value its hint says (:func:`structuring_problems` names where).

Spec: basic/index §JSON Schema Usage (schemas are 2020-12 by default);
JSON Schema 2020-12 Validation §7 (``format``; ``date-time``, ``date``,
``time`` are RFC 3339's, ``uuid`` is RFC 4122's).
"""

from __future__ import annotations

import collections.abc
import copy
import dataclasses
import datetime
import decimal
import enum
import json
import pathlib
import types
import typing
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.v import format_exception, transform_error

from presa_trio.wire.constraints import unsatisfiable
from presa_trio.wire.models import JSONObject
from presa_trio.wire.schemas import CompiledSchema


class SignatureError(TypeError):
    """A handler's signature, or an elicitation form, that presa cannot turn into a schema.

    Raised at registration for a handler, when the tool asks for a form.
    """


@attrs.frozen
class Field:
    """What ``Annotated[T, Field(...)]`` adds to the schema of a parameter or an attrs field.

    Each set value becomes the JSON Schema keyword of the same meaning
    (``ge`` is ``minimum``, ``min_length`` is ``minLength``…); a plain
    string in ``Annotated`` is a description.
    """

    description: str | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    title: str | None = None

    def keywords(self) -> JSONObject:
        named = {
            "description": self.description,
            "minimum": self.ge,
            "exclusiveMinimum": self.gt,
            "maximum": self.le,
            "exclusiveMaximum": self.lt,
            "minLength": self.min_length,
            "maxLength": self.max_length,
            "pattern": self.pattern,
            "minItems": self.min_items,
            "maxItems": self.max_items,
            "title": self.title,
        }
        return {key: value for key, value in named.items() if value is not None}


#: The JSON types each constraint of :class:`Field` holds for, and what they are
#: called (JSON Schema 2020-12 Validation §6.2 to §6.4); on another, it holds nothing.
NUMBERS = (("integer", "number"), "numbers")
STRINGS = (("string",), "strings")
ARRAYS = (("array",), "arrays (lists, tuples)")
CONSTRAINED: Mapping[str, tuple[tuple[str, ...], str]] = {
    "ge": NUMBERS,
    "gt": NUMBERS,
    "le": NUMBERS,
    "lt": NUMBERS,
    "min_length": STRINGS,
    "max_length": STRINGS,
    "pattern": STRINGS,
    "min_items": ARRAYS,
    "max_items": ARRAYS,
}


def refuse_idle_constraints(field: Field, schema: JSONObject, where: str) -> None:
    """Refuse a :class:`Field` constraint that its type makes idle.

    ``Annotated[list[str], Field(min_length=1)]`` (pydantic's spelling of a
    list's least length) would be ``minLength`` on an array, which JSON
    Schema applies to strings only: the constraint would silently not hold.
    A schema of no single ``type`` (a union, ``Any``) is left as written.
    """
    kind = schema.get("type")
    if not isinstance(kind, str):
        return
    for name, (kinds, what) in CONSTRAINED.items():
        if getattr(field, name) is not None and kind not in kinds:
            hint = "; a list's length is min_items and max_items" if kind == "array" else ""
            raise SignatureError(
                f"{where}: Field({name}=…) constrains {what}, and this is a JSON {kind}: "
                f"it would not hold{hint}"
            )


JSON_TYPES: Mapping[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
    None: "null",
}
SEQUENCES = (list, collections.abc.Sequence, collections.abc.MutableSequence)
MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
#: A decimal number written out in full: what a ``Decimal`` is on the wire.
DECIMAL_PATTERN = r"^-?[0-9]+(\.[0-9]+)?$"
#: Types that travel as JSON strings, and the schema of each.
#:
#: presa chooses: a ``Decimal`` is a string of digits, not a JSON number.
#: Most JSON readers (JavaScript's, Python's ``json`` by default) read a
#: number as a binary float, so ``0.1`` would arrive as the nearest float,
#: not a tenth: a string keeps every digit to the tool and back, and its
#: ``pattern`` says which strings are decimals.
STRING_FORMS: Mapping[type, JSONObject] = {
    datetime.datetime: {"type": "string", "format": "date-time"},
    datetime.date: {"type": "string", "format": "date"},
    datetime.time: {"type": "string", "format": "time"},
    uuid.UUID: {"type": "string", "format": "uuid"},
    decimal.Decimal: {"type": "string", "pattern": DECIMAL_PATTERN},
    pathlib.Path: {"type": "string"},
}
SUPPORTED = (
    "str, int, float, bool, None, Any, Literal, Enum, list, tuple, dict[str, …], "
    "unions, attrs classes, dataclasses, TypedDict, datetime, date, time, UUID, "
    "Decimal, Path"
)


def is_union(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType)


def is_record(hint: Any) -> bool:
    """An attrs class or a dataclass: a class whose fields make a JSON object."""
    return isinstance(hint, type) and (attrs.has(hint) or dataclasses.is_dataclass(hint))


def is_structured(hint: Any) -> bool:
    """An attrs class, a dataclass, a TypedDict or a ``dict[str, …]``: an object with a shape."""
    if is_record(hint):
        return True
    return typing.is_typeddict(hint) or get_origin(hint) in MAPPINGS or hint is dict


def json_default(value: Any) -> tuple[bool, Any]:
    """``(True, json)`` when a default has a JSON form to show in the schema."""
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        wire = arguments_converter.unstructure(value)
        json.dumps(wire, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False, None
    return True, wire


def checked_default(default: Any, hint: Any, schema: JSONObject, place: str) -> Any:
    """A default as JSON, refused unless it fits its parameter's or field's schema and hint.

    The default is what the handler gets when the value is absent, and the
    schema shows it as ``default``: both must be a value the schema admits
    (``x: int = "three"`` is a mistake, as is ``x: int = None``, and
    ``Annotated[int, Field(ge=0)] = -1``), and one the hint reads back
    (``day: date = "someday"`` passes the schema, a ``format`` being an
    annotation, but is no date). JSON Schema 2020-12 Validation §9.2
    recommends that a ``default`` be valid against its schema.
    """
    if isinstance(default, Field):  # pydantic's spelling, ``x: int = Field(ge=0)``
        raise SignatureError(
            f"{place}: a Field is the default here, and presa reads it from the hint: write "
            "Annotated[T, Field(...)], then = the default if there is one"
        )
    shown, value = json_default(default)
    if not shown:
        raise SignatureError(f"{place}: the default {default!r} has no JSON form")
    violations = CompiledSchema.compile(schema, role=place).violations(value)
    problem = violations[0].describe() if violations else None
    if problem is None:
        try:
            arguments_converter.structure(copy.deepcopy(value), hint)
        except Exception as error:
            problem = structuring_problems(error, "default")[0]
    if problem is not None:
        raise SignatureError(f"{place}: the default {default!r} does not fit its type ({problem})")
    return value


def schema_for(hint: Any, where: str, seen: tuple[type, ...] = ()) -> JSONObject:
    """The JSON Schema of a type hint; :class:`SignatureError` naming ``where`` if none.

    ============================== =========================================
    hint                           schema
    ============================== =========================================
    ``str`` ``int`` ``float``      ``{"type": "string"}``, ``integer``,
    ``bool`` ``None``              ``number``, ``boolean``, ``null``
    ``Any``                        ``{}`` (any JSON value)
    ``Literal["a", 1]``            ``{"type": ["string", "integer"],
                                   "enum": ["a", 1]}`` (:func:`enum_schema`)
    an ``Enum``                    ``{"type": …, "enum": [its values]}``
    ``list[T]``, ``tuple[T, ...]`` ``{"type": "array", "items": T}``
    ``tuple[A, B]``                ``prefixItems``, exactly that many
    ``dict[str, T]``               ``{"type": "object", "additionalProperties": T}``
    ``A | B``, ``Optional[A]``     ``{"anyOf": [A, B]}`` (``null`` for ``None``)
    an attrs class, a dataclass,   an object: its fields, required unless
    a TypedDict                    defaulted
    ``datetime``, ``date``,        ``{"type": "string", "format": …}``:
    ``time``, ``UUID``             ``date-time``, ``date``, ``time``, ``uuid``
    ``Decimal``                    a string of digits (:data:`STRING_FORMS`)
    ``Path``                       ``{"type": "string"}``
    ``Annotated[T, "text"]``       T with ``description``; with :class:`Field`, its keywords
    ============================== =========================================
    """
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        schema = dict(schema_for(args[0], where, seen))
        for extra in hint.__metadata__:
            if isinstance(extra, str):
                schema["description"] = extra
            elif isinstance(extra, Field):
                refuse_idle_constraints(extra, schema, where)
                base, schema = schema, {**schema, **extra.keywords()}
                problem = unsatisfiable(base, extra, schema, where)
                if problem is not None:
                    raise SignatureError(f"{where}: {problem}")
            else:  # pydantic's Field, say: its constraints would silently not hold
                raise SignatureError(
                    f"{where}: Annotated holds {type(extra).__name__}, which presa does not "
                    "read; use a description string or presa_trio.server.Field"
                )
        return schema
    if hint is Any:
        return {}
    if hint in JSON_TYPES:
        return {"type": JSON_TYPES[hint]}
    if hint in STRING_FORMS:
        return dict(STRING_FORMS[hint])
    if origin is Literal:
        if not all(type(value) in (str, int, bool, type(None)) for value in args):
            raise SignatureError(f"{where}: Literal values must be str, int, bool or None")
        return enum_schema(args)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [member.value for member in hint]
        if not values:
            raise SignatureError(f"{where}: enum {hint.__name__} has no members; no value fits it")
        if not all(type(value) in (str, int) for value in values):
            raise SignatureError(f"{where}: the values of enum {hint.__name__} must be str or int")
        return enum_schema(values)
    if is_union(hint):
        return {"anyOf": [schema_for(arg, where, seen) for arg in args]}
    if hint in (list, tuple) or origin in SEQUENCES:
        items = schema_for(args[0], where, seen) if args else {}
        return {"type": "array", "items": items}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": schema_for(args[0], where, seen)}
        prefix = [schema_for(arg, where, seen) for arg in args]
        return {
            "type": "array",
            "prefixItems": prefix,
            "items": False,
            "minItems": len(prefix),
            "maxItems": len(prefix),
        }
    if hint is dict or origin in MAPPINGS:
        if args and args[0] is not str:
            raise SignatureError(f"{where}: JSON object keys are strings; use dict[str, …]")
        inner = schema_for(args[1], where, seen) if args else {}
        return {"type": "object", "additionalProperties": inner}
    if is_record(hint) or typing.is_typeddict(hint):
        if hint in seen:
            raise SignatureError(f"{where}: {hint.__name__} contains itself; recursive types")
        return object_schema(hint, where, (*seen, hint))
    raise SignatureError(
        f"{where}: no JSON Schema for {describe_hint(hint)} (supported: {SUPPORTED})"
    )


def enum_schema(values: Sequence[Any]) -> JSONObject:
    """``enum`` with the ``type`` of its values, one name or a list of them.

    ``type`` is redundant beside ``enum`` for a validator, but a client that
    shows or fills in arguments reads a parameter's kind from ``type``
    alone (a form field, a typed signature), so presa always sends it.
    """
    kinds = list(dict.fromkeys(JSON_TYPES[type(value)] for value in values))
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": list(values)}


def describe_hint(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else repr(hint)


def record_fields(cls: type) -> Iterator[tuple[str, bool, Any]]:
    """Each field of an attrs class or a dataclass: its name, whether it is required, its default.

    The default is ``attrs.NOTHING`` when there is none, or when a factory
    makes it: the field is optional, but no one value shows in the schema.
    A field with ``init=False`` (one the class computes) is left out: the
    converter neither reads it from the arguments nor writes it into
    ``structuredContent``, so a schema naming it would ask the client for a
    value the tool never sees, and require in every result a key no result has.
    """
    if attrs.has(cls):
        for a in attrs.fields(cls):
            if not a.init:
                continue
            made = isinstance(a.default, attrs.Factory)  # type: ignore[arg-type]
            yield a.name, a.default is attrs.NOTHING, attrs.NOTHING if made else a.default
        return
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        default = attrs.NOTHING if f.default is dataclasses.MISSING else f.default
        yield f.name, default is attrs.NOTHING and f.default_factory is dataclasses.MISSING, default


def object_schema(cls: type, where: str, seen: tuple[type, ...]) -> JSONObject:
    """An attrs class, a dataclass or a TypedDict as an object schema, its fields in order.

    A TypedDict's keys are required as its ``__required_keys__`` say, which
    is also what structuring holds them to (:func:`typed_dict_value`).
    """
    hints = typing.get_type_hints(cls, include_extras=True)
    properties: JSONObject = {}
    required: list[str] = []
    if is_record(cls):
        for name, needed, default in record_fields(cls):
            hint, place = hints.get(name, Any), f"{where}.{name}"
            schema = dict(schema_for(hint, place, seen))
            if needed:
                required.append(name)
            elif default is not attrs.NOTHING and json_default(default)[0]:
                schema["default"] = checked_default(default, hint, schema, place)
            properties[name] = schema
    else:
        keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        for key, hint in hints.items():
            properties[key] = schema_for(
                typed_dict_value(cls, key, hint, where), f"{where}.{key}", seen
            )
        required = [key for key in hints if key in keys]
    whole: JSONObject = {"type": "object", "properties": properties}
    if required:
        whole["required"] = required
    return whole


def typed_dict_value(cls: type, key: str, hint: Any, where: str) -> Any:
    """The hint of a TypedDict's ``key`` without ``Required``/``NotRequired``.

    Python fills ``__required_keys__`` from those wrappers only when it can
    see them: under ``from __future__ import annotations`` (annotations are
    strings) it goes by ``total`` alone, and a ``NotRequired`` key counts as
    required, in the schema and in structuring alike. That disagreement is
    refused here rather than served.
    """
    marked = None
    while get_origin(hint) in (typing.Required, typing.NotRequired):
        marked = get_origin(hint) is typing.Required
        hint = get_args(hint)[0]
    if marked is not None and marked != (key in getattr(cls, "__required_keys__", ())):
        wrapper = "Required" if marked else "NotRequired"
        raise SignatureError(
            f"{where}.{key}: Python cannot see {wrapper} in {cls.__name__} under "
            "from __future__ import annotations; put the optional keys in a subclass "
            "with total=False"
        )
    return hint


# --- structuring the arguments --------------------------------------------------


def fits(value: Any, hint: Any) -> bool:
    """Whether a checked JSON value is meant for one member of a union (first wins).

    An ``int`` takes what JSON Schema's ``integer`` admits: ``2.0`` too (2020-12
    Validation §6.1.1, a number with a zero fractional part), structured as ``2``.
    """
    if hint in (None, type(None)):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        integral = isinstance(value, float) and value.is_integer()
        return integral or (isinstance(value, int) and not isinstance(value, bool))
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    try:
        arguments_converter.structure(value, hint)
    except Exception:
        return False
    return True


def string_reader(read: Callable[[str], Any], what: str) -> Callable[[Any, Any], Any]:
    """A structure hook reading a JSON string with ``read``; a ``ValueError`` saying ``what``."""

    def structure(value: Any, _: Any) -> Any:
        if not isinstance(value, str):  # a wrong JSON value is the caller's, as a bad string
            wrong = type(value).__name__
            raise ValueError(f"expected a string holding {what}, got {wrong}")  # noqa: TRY004
        try:
            return read(value)
        except (ValueError, ArithmeticError):
            raise ValueError(f"{value!r} is not {what}") from None

    return structure


def finite_decimal(text: str) -> decimal.Decimal:
    number = decimal.Decimal(text)
    if not number.is_finite():
        raise ValueError(text)
    return number


def with_upper_zone(read: Callable[[str], Any]) -> Callable[[str], Any]:
    """``read``, which takes UTC only as ``Z``, also taking RFC 3339's ``z``.

    The ``date-time`` and ``time`` formats are RFC 3339's (JSON Schema 2020-12
    Validation §7.3.1), whose §5.6 lets ``T`` and ``Z`` be lower case;
    Python's ``fromisoformat`` takes any separator but only an upper-case ``Z``.
    """

    def reading(text: str) -> Any:
        return read(text[:-1] + "Z" if text.endswith("z") else text)

    return reading


#: How each of :data:`STRING_FORMS` is read from its string: the reader, what it reads.
STRING_READERS: Mapping[type, tuple[Callable[[str], Any], str]] = {
    datetime.datetime: (with_upper_zone(datetime.datetime.fromisoformat), "an ISO 8601 date-time"),
    datetime.date: (datetime.date.fromisoformat, "an ISO 8601 date"),
    datetime.time: (with_upper_zone(datetime.time.fromisoformat), "an ISO 8601 time"),
    uuid.UUID: (uuid.UUID, "a UUID"),
    decimal.Decimal: (finite_decimal, "a finite decimal number"),
    pathlib.Path: (pathlib.Path, "a path"),
}
#: How each of :data:`STRING_FORMS` is written as its string.
STRING_WRITERS: Mapping[type, Callable[[Any], str]] = {
    datetime.datetime: datetime.datetime.isoformat,
    datetime.date: datetime.date.isoformat,
    datetime.time: datetime.time.isoformat,
    uuid.UUID: str,
    decimal.Decimal: lambda number: format(number, "f"),  # "100", never "1E+2"
    pathlib.Path: str,
}


def is_literal(hint: Any) -> bool:
    return get_origin(hint) is Literal


def literal_value(value: Any, hint: Any) -> Any:
    """The value of ``Literal[...]`` that ``value`` equals, as the ``Literal`` writes it.

    JSON Schema's ``enum`` admits ``2.0`` for ``2`` (2020-12 Validation
    §6.1.2: numbers are equal by value), so the tool gets the ``int`` it
    declared, not the float the client wrote; ``true`` never stands for ``1``.
    """
    for member in get_args(hint):
        if member == value and isinstance(member, bool) == isinstance(value, bool):
            return member
    raise ValueError(f"{value!r} is not one of {list(get_args(hint))!r}")


def make_arguments_converter() -> cattrs.Converter:
    """The converter between checked JSON and the declared types, both ways.

    Separate from the wire converter (:mod:`presa_trio.wire.convert`), which
    writes camelCase: arguments keep the names the schema gives them. A
    union takes the first member the value fits, so ``int | str`` hands an
    ``int`` over unchanged. Each of :data:`STRING_FORMS` is read from its
    string and written back as one. A tuple of any kind, ``tuple[A, B]``
    too, is written as a list: a JSON array, as its schema says.
    """
    converter = cattrs.Converter(unstruct_collection_overrides={tuple: list})
    for kind, (read, what) in STRING_READERS.items():
        converter.register_structure_hook(kind, string_reader(read, what))
        converter.register_unstructure_hook(kind, STRING_WRITERS[kind])

    def structure_union(value: Any, hint: Any) -> Any:
        for member in get_args(hint):
            if fits(value, member):
                return converter.structure(value, member)
        others = [member for member in get_args(hint) if member is not type(None)]
        if len(others) == 1:  # ``X | None``: X's own words say what is wrong
            return converter.structure(value, others[0])
        raise ValueError(f"{value!r} fits none of {hint!r}")

    converter.register_structure_hook_func(is_union, structure_union)
    converter.register_structure_hook_func(is_literal, literal_value)
    converter.register_structure_hook(Any, lambda value, _: value)
    converter.register_structure_hook(type(None), lambda value, _: None)
    return converter


arguments_converter = make_arguments_converter()


def describe_failure(error: BaseException, hint: Any) -> str:
    """One failure to structure: a ``ValueError``'s own words, else cattrs' description."""
    if isinstance(error, ValueError) and str(error):
        return str(error)
    return format_exception(error, hint)


def structuring_problems(error: BaseException, where: str) -> list[str]:
    """Each failure inside ``error`` as ``"where.field: what is wrong"``, one per line.

    ``error`` is what structuring a value for ``where`` raised: one
    exception, or cattrs' groups of them naming each field and index.
    """
    found = transform_error(error, path=where, format_exception=describe_failure)
    return [f"{path}: {what}" for what, _, path in (line.rpartition(" @ ") for line in found)]
