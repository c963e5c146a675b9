"""What a tool registration refuses: one line, naming the tool and the parameter."""

from __future__ import annotations

import dataclasses
import datetime
import math
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import attrs
import pytest

from presa_trio.server import Field, RequestContext, SchemaError, Server, SignatureError


@attrs.frozen
class Node:
    value: int
    children: list[Node]


class Row(TypedDict):
    id: int


async def takes_bytes(ctx: RequestContext, data: bytes) -> str:
    """Unsupported."""
    return "never"


async def takes_int_keys(ctx: RequestContext, table: dict[int, str]) -> str:
    """Unsupported."""
    return "never"


async def takes_a_tree(ctx: RequestContext, root: Node) -> str:
    """Recursive."""
    return "never"


async def takes_no_hint(ctx: RequestContext, name) -> str:  # type: ignore[no-untyped-def]
    """No hint."""
    return "never"


async def takes_star_args(ctx: RequestContext, *names: str) -> str:
    """Star args."""
    return "never"


async def takes_positional_only(ctx: RequestContext, name: str, /) -> str:
    """Positional only."""
    return "never"


async def takes_no_date_by_default(
    ctx: RequestContext,
    day: datetime.date = "someday",  # type: ignore[assignment]
) -> str:
    """A string the schema admits, since format is an annotation, but no date."""
    return "never"


@dataclasses.dataclass
class Page:
    size: Annotated[int, Field(ge=1)] = 0


@attrs.frozen
class Stamp:
    at: datetime.datetime = "noon"  # type: ignore[assignment]


async def takes_a_page(ctx: RequestContext, page: Page) -> str:
    """A field whose default breaks its own constraint."""
    return "never"


async def returns_a_stamp(ctx: RequestContext) -> Stamp:
    """An output field whose default is no date-time."""
    return Stamp()


class Query(TypedDict):
    text: str
    limit: NotRequired[int]  # a string under ``from __future__``: Python counts it required


async def takes_a_query(ctx: RequestContext, query: Query) -> str:
    """A NotRequired key Python cannot see."""
    return "never"


@attrs.frozen
class Ge:
    """Another library's constraint, as pydantic's ``Field(ge=1)`` is to presa."""

    bound: int


async def takes_a_foreign_constraint(ctx: RequestContext, n: Annotated[int, Ge(1)]) -> str:
    """A constraint presa cannot read, which must not silently not hold."""
    return "never"


async def takes_a_nan_default(ctx: RequestContext, ratio: float = math.nan) -> str:
    """A default JSON cannot write (RFC 8259 §6: no NaN)."""
    return "never"


async def takes_a_float_literal(ctx: RequestContext, mode: Literal[1.5, 2]) -> str:  # type: ignore[valid-type]
    """A Literal of a float, which Python's typing does not allow."""
    return "never"


async def returns_maybe(ctx: RequestContext) -> Row | None:
    """Maybe a row."""
    return None


async def returns_a_set(ctx: RequestContext) -> set[int]:
    """A set has no JSON form."""
    return set()


async def undescribed(ctx: RequestContext, name: str) -> str:
    return name


async def yields(ctx: RequestContext, name: str) -> AsyncIterator[str]:
    """Yields its answer."""
    yield name


def sync_tool(ctx: RequestContext, name: str) -> str:
    """Plain def."""
    return name


async def typed(ctx: RequestContext, name: str) -> str:
    """Typed and fine."""
    return name


async def arguments_form(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    """Arguments object."""
    return "fine"


@pytest.mark.parametrize(
    ("handler", "options", "message"),
    [
        (
            takes_bytes,
            {},
            "tool 'takes_bytes', parameter 'data': no JSON Schema for bytes (supported:",
        ),
        (
            takes_int_keys,
            {},
            "tool 'takes_int_keys', parameter 'table': JSON object keys are strings",
        ),
        (
            takes_a_tree,
            {},
            "tool 'takes_a_tree', parameter 'root'.children: Node contains itself",
        ),
        (takes_no_hint, {}, "tool 'takes_no_hint', parameter 'name': needs a type hint"),
        (takes_star_args, {}, "tool 'takes_star_args', parameter 'names': *args and **kwargs"),
        (
            takes_positional_only,
            {},
            "tool 'takes_positional_only', parameter 'name': arguments are passed by name",
        ),
        (
            takes_no_date_by_default,
            {},
            "tool 'takes_no_date_by_default', parameter 'day': the default 'someday' does not "
            "fit its type (default: 'someday' is not an ISO 8601 date)",
        ),
        (
            takes_a_page,
            {},
            "tool 'takes_a_page', parameter 'page'.size: the default 0 does not fit its type "
            "((root): 0 is less than the minimum of 1 (rule /minimum))",
        ),
        (
            returns_a_stamp,
            {},
            "tool 'returns_a_stamp', return type.at: the default 'noon' does not fit its type "
            "(default: 'noon' is not an ISO 8601 date-time)",
        ),
        (
            takes_a_query,
            {},
            "tool 'takes_a_query', parameter 'query'.limit: Python cannot see NotRequired in "
            "Query under from __future__ import annotations; put the optional keys in a "
            "subclass with total=False",
        ),
        (
            takes_a_foreign_constraint,
            {},
            "tool 'takes_a_foreign_constraint', parameter 'n': Annotated holds Ge, which presa "
            "does not read; use a description string or presa_trio.server.Field",
        ),
        (
            takes_a_nan_default,
            {},
            "tool 'takes_a_nan_default', parameter 'ratio': the default nan has no JSON form",
        ),
        (
            takes_a_float_literal,
            {},
            "tool 'takes_a_float_literal', parameter 'mode': Literal values must be str, int, "
            "bool or None",
        ),
        (
            returns_maybe,
            {},
            "tool 'returns_maybe': a tool with an output schema must always return that object",
        ),
        (returns_a_set, {}, "tool 'returns_a_set', return type: no JSON Schema for set[int]"),
        (undescribed, {}, "tool 'undescribed': needs a description"),
        (sync_tool, {}, "tool 'sync_tool': the handler must be an async function (async def)"),
        (yields, {}, "tool 'yields': the handler is a generator (it yields); return the result"),
        (
            typed,
            {"input_schema": {"type": "object"}},
            "tool 'typed': input_schema= is for a handler (ctx, arguments)",
        ),
        (typed, {"name": "read file"}, "tool 'read file': a tool name is 1 to 128 of"),
        (typed, {"name": "a/b"}, "tool 'a/b': a tool name is 1 to 128 of"),
        (typed, {"name": ""}, "tool '': a tool name is 1 to 128 of"),
        (typed, {"name": "n" * 129}, f"tool '{'n' * 129}': a tool name is 1 to 128 of"),
        (
            typed,
            {"annotations": {"title": 5}},
            "tool 'typed': annotations['title'] is 5, not a str",
        ),
        (typed, {"annotations": ["readOnlyHint"]}, "tool 'typed': annotations= is a dict"),
        (arguments_form, {"needs": ["telepathy"]}, "tool 'arguments_form': needs=['telepathy']"),
        (arguments_form, {"thread": True}, "tool 'arguments_form': thread=True is for a plain def"),
    ],
    ids=lambda value: value.__name__ if callable(value) else None,
)
def test_a_refused_tool_is_one_line_naming_tool_and_parameter(
    handler: Callable[..., Any], options: dict[str, Any], message: str
) -> None:
    """presa-defined (docs/api.md, what registration refuses): the mistake shows
    when the server is built, in one line, and the tool is not registered."""
    server = Server("refusals", "1.0.0")
    with pytest.raises((SignatureError, ValueError)) as refused:
        server.tool(**options)(handler)
    text = str(refused.value)
    assert text.startswith(message), text
    assert "\n" not in text
    assert server.tools == {}


def test_a_bad_hand_written_schema_is_one_line_naming_the_tool() -> None:
    """Spec-mandated (E-20): an unusable schema is refused at registration."""
    server = Server("refusals", "1.0.0")
    schema = {"type": "object", "properties": {"n": {"type": "nope"}}}
    with pytest.raises(SchemaError) as refused:
        server.tool(input_schema=schema)(arguments_form)
    assert str(refused.value).startswith("tool 'arguments_form': inputSchema is not a usable")
    assert "\n" not in str(refused.value)


async def test_a_hand_written_schema_whose_bounds_some_value_meets_is_served() -> None:
    """presa-defined (docs/api.md, what registration refuses): contradictory bounds
    are refused only where ``type`` confines the value to what they bound (Validation
    §6.2-§6.4), and not inside ``not`` or one ``anyOf`` branch; these admit a value."""
    from presa_trio.testing import connect

    empty = {"minimum": 5, "maximum": 1}
    schema = {
        "type": "object",
        "properties": {
            "untyped": empty,
            "nullable": {"type": ["integer", "null"], **empty},
            "idle": {"type": "string", "minItems": 3, "maxItems": 1},
            "negated": {"not": {"type": "integer", **empty}},
            "either": {"anyOf": [{"type": "integer", **empty}, {"type": "string"}]},
        },
    }
    server = Server("bounds", "1.0.0")
    server.tool(input_schema=schema)(arguments_form)
    given = {"untyped": "text", "nullable": None, "idle": "ab", "negated": 3, "either": "x"}
    async with connect(server) as client:
        result = await client.call_tool("arguments_form", given)
    assert result["content"] == [{"type": "text", "text": "fine"}]
    assert not result.get("isError")


async def test_a_plain_def_runs_on_a_thread_when_asked() -> None:
    """presa-defined (docs/api.md): ``thread=True`` runs a plain def on a worker
    thread, with its typed arguments."""
    from presa_trio.testing import connect

    server = Server("threads", "1.0.0")
    server.tool(thread=True)(sync_tool)
    async with connect(server) as client:
        result = await client.call_tool("sync_tool", {"name": "Ada"})
    assert result["content"] == [{"type": "text", "text": "Ada"}]
