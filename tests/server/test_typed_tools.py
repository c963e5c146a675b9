"""Typed tools: schemas from signatures, arguments structured into their types, defaults."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

import attrs
import pytest

from presa_trio.server import Field, RequestContext, Server, SignatureError
from presa_trio.testing import McpClient, connect
from presa_trio.wire.models import JSONObject, PromptArgument
from tests.expect import result_of, tools_by_name


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen
class Place:
    city: Annotated[str, "The city's name"]
    country: str = "FR"


@attrs.frozen
class Trip:
    origin: Place
    stops: list[Place] = attrs.field(factory=list)


class Weather(TypedDict):
    city: str
    celsius: float


@attrs.frozen
class Report:
    summary: str
    score: int


seen: list[dict[str, Any]] = []


def build() -> Server:
    server = Server("typed", "1.0.0")

    @server.tool()
    async def greet(ctx: RequestContext, name: str, times: int = 2) -> str:
        """Greets someone by name.

        Several times, if asked.
        """
        return " ".join([f"Hello, {name}!"] * times)

    @server.tool(description="Takes one of every supported kind")
    async def every(
        ctx: RequestContext,
        text: Annotated[str, Field(description="Some text", min_length=1, max_length=5)],
        count: Annotated[int, Field(ge=1, lt=10)],
        ratio: float,
        flag: bool,
        nothing: None,
        mode: Literal["fast", "slow"],
        colour: Colour,
        names: list[str],
        pair: tuple[int, str],
        many: tuple[int, ...],
        table: dict[str, int],
        either: int | str,
        maybe: Place | None,
        trip: Trip,
        anything: Any,
        note: str | None = None,
        colour_by_default: Colour = Colour.BLUE,
    ) -> str:
        seen.append(
            {
                "text": text,
                "count": count,
                "ratio": ratio,
                "flag": flag,
                "nothing": nothing,
                "mode": mode,
                "colour": colour,
                "names": names,
                "pair": pair,
                "many": many,
                "table": table,
                "either": either,
                "maybe": maybe,
                "trip": trip,
                "anything": anything,
                "note": note,
                "colour_by_default": colour_by_default,
            }
        )
        return "ok"

    @server.tool()
    async def weather(ctx: RequestContext, city: str) -> Weather:
        """Today's weather in a city."""
        return {"city": city, "celsius": 21.5}

    @server.tool()
    async def review(ctx: RequestContext, text: str) -> Report:
        """Scores a text."""
        return Report(summary=text[:10], score=len(text))

    @server.tool()
    async def square(ctx: RequestContext, n: int) -> int:
        """Squares a number."""
        return n * n

    @server.tool()
    async def letters(ctx: RequestContext, word: str) -> list[str]:
        """Spells a word."""
        return list(word)

    @server.tool()
    async def forget(ctx: RequestContext) -> None:
        """Does nothing, and says nothing."""

    @server.tool(
        description="Echoes its arguments, defaults filled in",
        input_schema={
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "default": 5},
                "given": {"type": "string", "default": "unused"},
                "page": {
                    "type": "object",
                    "properties": {"size": {"type": "integer", "default": 20}},
                },
            },
        },
    )
    async def listing(ctx: RequestContext, arguments: dict[str, Any]) -> JSONObject:
        return arguments

    return server


@pytest.fixture
async def typed() -> AsyncIterator[McpClient]:
    seen.clear()
    async with connect(build()) as client:
        yield client


async def test_the_schema_and_description_come_from_the_signature(typed: McpClient) -> None:
    """presa-defined (docs/api.md, typed tools): each parameter after ``ctx`` is a
    property, required unless it has a default, which is its ``default``; the
    docstring is the description."""
    greet = (await tools_by_name(typed))["greet"]
    assert greet["description"] == "Greets someone by name.\n\nSeveral times, if asked."
    assert greet["inputSchema"] == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "times": {"type": "integer", "default": 2}},
        "required": ["name"],
    }


async def test_every_supported_hint_has_its_schema(typed: McpClient) -> None:
    """presa-defined (docs/api.md, the type table): each hint maps as the table says,
    Annotated descriptions and Field constraints included."""
    schema = (await tools_by_name(typed))["every"]["inputSchema"]
    place = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city's name"},
            "country": {"type": "string", "default": "FR"},
        },
        "required": ["city"],
    }
    assert schema["properties"] == {
        "text": {"type": "string", "description": "Some text", "minLength": 1, "maxLength": 5},
        "count": {"type": "integer", "minimum": 1, "exclusiveMaximum": 10},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "nothing": {"type": "null"},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "colour": {"type": "string", "enum": ["red", "blue"]},
        "names": {"type": "array", "items": {"type": "string"}},
        "pair": {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "items": False,
            "minItems": 2,
            "maxItems": 2,
        },
        "many": {"type": "array", "items": {"type": "integer"}},
        "table": {"type": "object", "additionalProperties": {"type": "integer"}},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "maybe": {"anyOf": [place, {"type": "null"}]},
        "trip": {
            "type": "object",
            "properties": {"origin": place, "stops": {"type": "array", "items": place}},
            "required": ["origin"],
        },
        "anything": {},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "colour_by_default": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
    }
    assert schema["required"] == [
        *("text", "count", "ratio", "flag", "nothing", "mode", "colour", "names", "pair"),
        *("many", "table", "either", "maybe", "trip", "anything"),
    ]


EVERY = {
    "text": "hi",
    "count": 3,
    "ratio": 1,
    "flag": True,
    "nothing": None,
    "mode": "slow",
    "colour": "red",
    "names": ["a"],
    "pair": [1, "b"],
    "many": [1, 2],
    "table": {"x": 1},
    "either": 7,
    "maybe": {"city": "Lyon"},
    "trip": {"origin": {"city": "Paris", "country": "FR"}, "stops": [{"city": "Rome"}]},
    "anything": {"free": ["form"]},
}


async def test_arguments_arrive_structured_into_their_types(typed: McpClient) -> None:
    """presa-defined (docs/api.md, typed tools): cattrs turns the checked JSON into
    the declared types; a missing optional parameter gets the signature's default."""
    result = await typed.call_tool("every", EVERY)
    assert result["content"] == [{"type": "text", "text": "ok"}]
    (got,) = seen
    assert got == {
        **EVERY,
        "ratio": 1.0,
        "colour": Colour.RED,
        "pair": (1, "b"),
        "many": (1, 2),
        "maybe": Place("Lyon"),
        "trip": Trip(Place("Paris"), [Place("Rome", "FR")]),
        "note": None,
        "colour_by_default": Colour.BLUE,
    }
    assert type(got["ratio"]) is float
    assert type(got["either"]) is int


@pytest.mark.parametrize(
    ("change", "rule"),
    [
        ({"text": ""}, "minLength"),
        ({"count": 10}, "exclusiveMaximum"),
        ({"mode": "medium"}, "enum"),
        ({"colour": "green"}, "enum"),
        ({"pair": [1, "b", 3]}, "items"),
        ({"either": 1.5}, "anyOf"),
        ({"trip": {"stops": []}}, "required"),
    ],
)
async def test_arguments_that_break_the_derived_schema_never_reach_the_tool(
    typed: McpClient, change: dict[str, Any], rule: str
) -> None:
    """Spec-mandated (server/tools §Error Handling; E-18): the derived schema is
    enforced like a hand-written one, before structuring."""
    result = await typed.call_tool("every", {**EVERY, **change})
    assert result["isError"] is True
    assert f"rule /properties/{next(iter(change))}" in result["content"][0]["text"]
    assert rule in result["content"][0]["text"]
    assert seen == []


async def test_signature_defaults_apply(typed: McpClient) -> None:
    """presa-defined (docs/api.md, typed tools): ``times`` defaults to 2."""
    result = await typed.call_tool("greet", {"name": "Ada"})
    assert result["content"] == [{"type": "text", "text": "Hello, Ada! Hello, Ada!"}]


@attrs.define
class Basket:
    items: list[str] = attrs.field(factory=list)


async def test_each_call_gets_a_fresh_default_of_the_declared_type() -> None:
    """presa-defined (docs/api.md, typed tools): an absent argument arrives as its
    default would if sent: a list or an instance made afresh for each call, so a
    tool that changes it changes nothing for the next call, and a default given
    by its JSON value (an ``Enum``'s value, an ``int`` for a ``float``) as the
    declared type."""
    server = Server("defaults", "1.0.0")
    got: list[tuple[Any, ...]] = []

    @server.tool()
    async def add(
        ctx: RequestContext,
        item: str,
        tags: list[str] = [],  # noqa: B006 - the mistake under test
        basket: Basket = Basket(),  # noqa: B008 - the mistake under test
        colour: Colour = "red",  # type: ignore[assignment]
        weight: float = 1,
    ) -> str:
        """Adds an item."""
        tags.append(item)
        basket.items.append(item)
        got.append((tags, basket, colour, weight))
        return "added"

    async with connect(server) as client:
        await client.call_tool("add", {"item": "pear"})
        await client.call_tool("add", {"item": "fig"})
    assert got == [
        (["pear"], Basket(["pear"]), Colour.RED, 1.0),
        (["fig"], Basket(["fig"]), Colour.RED, 1.0),
    ]
    assert type(got[0][3]) is float


async def test_a_literal_sent_as_an_equal_number_arrives_as_the_literal_itself() -> None:
    """presa-defined (docs/api.md, typed tools: a ``Literal`` gets "the value"): JSON
    Schema's ``enum`` admits ``2.0`` for ``2`` (2020-12 Validation §6.1.2, equal
    numbers), so such an argument passes the check; the tool gets the literal as
    declared, the ``int`` ``2``, never the float the client wrote, in a list too."""
    server = Server("literals", "1.0.0")
    got: list[tuple[Any, ...]] = []

    @server.tool()
    async def pick(ctx: RequestContext, level: Literal[1, 2], marks: list[Literal[0, "x"]]) -> str:
        """Picks a level."""
        got.append((level, marks))
        return "picked"

    async with connect(server) as client:
        result = await client.call_tool("pick", {"level": 2.0, "marks": [0.0, "x"]})
    assert result["content"] == [{"type": "text", "text": "picked"}]
    assert got == [(2, [0, "x"])]
    assert [type(value) for value in (got[0][0], *got[0][1])] == [int, int, str]


async def test_an_integral_number_for_an_int_in_a_union_arrives_as_the_int() -> None:
    """Spec-mandated (server/tools §Error Handling: an input validation error is one the
    schema finds): ``int | str`` lists ``anyOf`` of ``integer``, which admits
    ``2.0`` (JSON Schema 2020-12 Validation §6.1.1), so the call reaches the tool
    with the ``int`` ``2``, not an ``isError`` result saying it fits no member."""
    server = Server("unions", "1.0.0")
    got: list[Any] = []

    @server.tool()
    async def take(ctx: RequestContext, either: int | str) -> str:
        """Takes a number or a name."""
        got.append(either)
        return "taken"

    async with connect(server) as client:
        result = await client.call_tool("take", {"either": 2.0})
    assert result["content"] == [{"type": "text", "text": "taken"}]
    assert got == [2]
    assert type(got[0]) is int


@attrs.frozen
class Cat:
    kind: Literal["cat"]
    lives: int


@attrs.frozen
class Dog:
    kind: Literal["dog"]
    good: bool


async def test_a_union_of_records_returned_gives_an_output_schema_of_each() -> None:
    """Spec-mandated (server/tools §Output Schema: servers MUST provide structured
    results that conform to it; schema.ts ``Tool.outputSchema``, any JSON Schema):
    ``-> Cat | Dog`` always returns an object, so the tool's ``outputSchema`` is
    ``anyOf`` the two, and either one returned is its ``structuredContent``."""
    server = Server("pets", "1.0.0")

    @server.tool()
    async def adopt(ctx: RequestContext, kind: Literal["cat", "dog"]) -> Cat | Dog:
        """Adopts a pet."""
        return Cat("cat", 9) if kind == "cat" else Dog("dog", True)

    async with connect(server) as client:
        tools = await tools_by_name(client)
        cat = await client.call_tool("adopt", {"kind": "cat"})
        dog = await client.call_tool("adopt", {"kind": "dog"})
    listed = tools["adopt"]["outputSchema"]["anyOf"]
    assert [member["properties"]["kind"]["enum"] for member in listed] == [["cat"], ["dog"]]
    assert cat["structuredContent"] == {"kind": "cat", "lives": 9}
    assert dog["structuredContent"] == {"kind": "dog", "good": True}


async def test_a_described_return_type_keeps_its_output_schema() -> None:
    """presa-defined (docs/api.md, typed tools: ``Annotated[T, "text"]`` is T with a
    ``description``): ``-> Annotated[Report, "…"]`` is a ``Report`` return, with
    its ``outputSchema`` described and the result's ``structuredContent``, as
    ``-> Report`` has, not a JSON text without either."""
    server = Server("described", "1.0.0")

    @server.tool()
    async def score(ctx: RequestContext, text: str) -> Annotated[Report, "The score"]:
        """Scores a text."""
        return Report(summary=text, score=len(text))

    async with connect(server) as client:
        tools = await tools_by_name(client)
        result = await client.call_tool("score", {"text": "abc"})
    assert tools["score"]["outputSchema"] == {
        "type": "object",
        "properties": {"summary": {"type": "string"}, "score": {"type": "integer"}},
        "required": ["summary", "score"],
        "description": "The score",
    }
    assert result["structuredContent"] == {"summary": "abc", "score": 3}


# The functional form holds the types themselves, not strings: Python sees the wrappers.
Filter = TypedDict("Filter", {"field": str, "value": NotRequired[str]})  # noqa: UP013
Sort = TypedDict("Sort", {"field": Required[str], "descending": bool}, total=False)  # noqa: UP013


async def test_typed_dict_keys_are_required_as_required_and_not_required_say() -> None:
    """presa-defined (docs/api.md, the type table): a TypedDict's ``NotRequired``
    key is an optional property, a ``Required`` one in a ``total=False`` class a
    required one, and a call without the optional keys reaches the tool."""
    server = Server("typed-dicts", "1.0.0")
    got: list[Any] = []

    @server.tool()
    async def search(ctx: RequestContext, where: Filter, order: Sort) -> str:
        """Searches."""
        got.append((where, order))
        return "found"

    properties = server.tools["search"].tool.input_schema["properties"]
    assert properties["where"] == {
        "type": "object",
        "properties": {"field": {"type": "string"}, "value": {"type": "string"}},
        "required": ["field"],
    }
    assert properties["order"] == {
        "type": "object",
        "properties": {"field": {"type": "string"}, "descending": {"type": "boolean"}},
        "required": ["field"],
    }
    async with connect(server) as client:
        result = await client.call_tool(
            "search", {"where": {"field": "a"}, "order": {"field": "b"}}
        )
    assert result["content"] == [{"type": "text", "text": "found"}]
    assert got == [({"field": "a"}, {"field": "b"})]


async def test_schema_defaults_are_filled_in_for_the_arguments_form(typed: McpClient) -> None:
    """presa-defined (docs/api.md, the arguments form): absent properties with a
    ``default`` get it, in nested objects too; given ones are kept."""
    result = await typed.call_tool("listing", {"given": "mine", "page": {}})
    assert result["structuredContent"] == {"limit": 5, "given": "mine", "page": {"size": 20}}
    bare = await typed.call_tool("listing", {})
    assert bare["structuredContent"] == {"limit": 5, "given": "unused"}


async def test_a_typed_dict_return_gives_an_output_schema_and_structured_content(
    typed: McpClient,
) -> None:
    """Spec-mandated (server/tools §Output Schema, §Structured Content; E-19): the
    return type is the outputSchema; the result carries structuredContent and its
    JSON as text."""
    tools = await tools_by_name(typed)
    assert tools["weather"]["outputSchema"] == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
        "required": ["city", "celsius"],
    }
    result = await typed.call_tool("weather", {"city": "Oslo"})
    assert result["structuredContent"] == {"city": "Oslo", "celsius": 21.5}
    assert result["content"] == [{"type": "text", "text": '{"city": "Oslo", "celsius": 21.5}'}]


@dataclasses.dataclass
class Order:
    """An order whose total the class computes."""

    price: int
    quantity: int = 1
    total: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.total = self.price * self.quantity


@attrs.define
class Invoice:
    """An invoice whose tax the class computes."""

    net: int
    tax: int = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.tax = self.net // 5


async def test_a_field_the_class_computes_is_neither_asked_for_nor_promised() -> None:
    """presa-defined (docs/api.md, Typed tools): a dataclass or attrs field with
    ``init=False`` is no argument (the class computes it) and no part of
    ``structuredContent`` (the converter writes only what ``__init__`` takes), so
    it is in neither schema: the call needs no value for it, and the result fits
    its outputSchema rather than failing every call."""
    server = Server("computed", "1.0.0")

    @server.tool()
    async def place(ctx: RequestContext, order: Order) -> Order:
        """Places an order."""
        return order

    @server.tool()
    async def bill(ctx: RequestContext, invoice: Invoice) -> Invoice:
        """Bills an invoice."""
        return invoice

    async with connect(server) as client:
        tools = await tools_by_name(client)
        order = {
            "type": "object",
            "properties": {
                "price": {"type": "integer"},
                "quantity": {"type": "integer", "default": 1},
            },
            "required": ["price"],
        }
        invoice = {
            "type": "object",
            "properties": {"net": {"type": "integer"}},
            "required": ["net"],
        }
        assert tools["place"]["inputSchema"]["properties"]["order"] == order
        assert (tools["place"]["outputSchema"], tools["bill"]["outputSchema"]) == (order, invoice)
        placed = await client.call_tool("place", {"order": {"price": 2, "quantity": 3}})
        billed = await client.call_tool("bill", {"invoice": {"net": 10}})
    assert (placed["structuredContent"], billed["structuredContent"]) == (
        {"price": 2, "quantity": 3},
        {"net": 10},
    )


async def test_an_attrs_return_gives_an_output_schema_and_structured_content(
    typed: McpClient,
) -> None:
    """Spec-mandated (server/tools §Output Schema; E-19)."""
    tools = await tools_by_name(typed)
    assert tools["review"]["outputSchema"]["required"] == ["summary", "score"]
    result = await typed.call_tool("review", {"text": "a fine text indeed"})
    assert result["structuredContent"] == {"summary": "a fine tex", "score": 18}


@attrs.frozen
class Span:
    bounds: tuple[int, str]
    steps: list[tuple[int, int]]
    gap: tuple[float, float] | None


@dataclasses.dataclass
class Route:
    legs: dict[str, tuple[str, int]]


async def test_a_fixed_length_tuple_in_a_returned_record_is_a_json_array() -> None:
    """Spec-mandated (server/tools §Output Schema: the server MUST provide structured
    results that conform to the schema; §Structured Content; E-19, E-24): a field
    typed ``tuple[A, B]`` is a ``prefixItems`` array in the outputSchema, and the
    tool's value of it reaches ``structuredContent`` as that array, wherever the
    tuple sits (a field, a list, a union, a dict), not -32603 on every call."""
    server = Server("tuples", "1.0.0")

    @server.tool()
    async def span(ctx: RequestContext) -> Span:
        """Measures a span."""
        return Span((1, "a"), [(2, 3)], (0.5, 1.5))

    @server.tool()
    async def route(ctx: RequestContext) -> Route:
        """Plans a route."""
        return Route({"first": ("Oslo", 2)})

    async with connect(server) as client:
        tools = await tools_by_name(client)
        spanned = await client.call_tool("span")
        routed = await client.call_tool("route")
    assert tools["span"]["outputSchema"]["properties"]["bounds"]["prefixItems"] == [
        {"type": "integer"},
        {"type": "string"},
    ]
    assert spanned["structuredContent"] == {
        "bounds": [1, "a"],
        "steps": [[2, 3]],
        "gap": [0.5, 1.5],
    }
    assert routed["structuredContent"] == {"legs": {"first": ["Oslo", 2]}}


async def test_none_from_a_tool_whose_return_type_admits_it_is_empty_content() -> None:
    """presa-defined (docs/api.md, the return table): ``-> str | None`` and
    ``-> int | None`` returning ``None`` answer empty content, as ``-> None`` does,
    and their other values as ever."""
    server = Server("maybe", "1.0.0")

    @server.tool()
    async def find(ctx: RequestContext, name: str) -> str | None:
        """Finds a name, if there is one."""
        return name or None

    @server.tool()
    async def count(ctx: RequestContext, name: str) -> int | None:
        """Counts a name's letters, if there is one."""
        return len(name) or None

    async with connect(server) as client:
        found = [
            (await client.call_tool(t, {"name": n}))["content"]
            for t in ("find", "count")
            for n in ("", "ab")
        ]
    assert found == [[], [{"type": "text", "text": "ab"}], [], [{"type": "text", "text": "2"}]]


async def test_other_declared_json_returns_are_their_json_text(typed: McpClient) -> None:
    """presa-defined (docs/api.md): ``-> int`` and ``-> list[str]`` send their JSON as
    text, no outputSchema (a list of strings is no list of content blocks);
    ``-> None`` sends empty content."""
    tools = await tools_by_name(typed)
    assert "outputSchema" not in tools["square"]
    assert "outputSchema" not in tools["letters"]
    assert (await typed.call_tool("square", {"n": 7}))["content"] == [
        {"type": "text", "text": "49"}
    ]
    assert (await typed.call_tool("letters", {"word": "ab"}))["content"] == [
        {"type": "text", "text": '["a", "b"]'}
    ]
    assert (await typed.call_tool("forget", {}))["content"] == []


async def test_a_typed_prompt_lists_its_string_parameters_and_renders_its_text() -> None:
    """Spec-mandated (server/prompts §Listing Prompts, §Getting a Prompt): the
    parameters are the arguments, required unless defaulted, an Annotated string
    their description; a returned string is one user message."""
    server = Server("prompts", "1.0.0")

    @server.prompt()
    async def summarise(
        ctx: RequestContext, text: Annotated[str, "What to summarise"], tone: str = "plain"
    ) -> str:
        """Asks the model to summarise a text."""
        return f"Summarise ({tone}): {text}"

    async with connect(server) as client:
        (listed_prompt,) = result_of(await client.call("prompts/list"))["prompts"]
        got = result_of(
            await client.call("prompts/get", {"name": "summarise", "arguments": {"text": "x"}})
        )
    assert listed_prompt["description"] == "Asks the model to summarise a text."
    assert listed_prompt["arguments"] == [
        {"name": "text", "description": "What to summarise", "required": True},
        {"name": "tone"},
    ]
    assert got["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Summarise (plain): x"}}
    ]


async def test_a_prompt_argument_is_described_by_a_field_and_refuses_its_constraints() -> None:
    """Spec-mandated (server/prompts §Listing Prompts: an argument is a name, a
    description and whether it is required): ``Field(description=…)`` describes
    it as a plain string does; a constraint, which nothing would check, is refused."""
    server = Server("prompts", "1.0.0")

    @server.prompt()
    async def haiku(
        ctx: RequestContext, topic: Annotated[str, Field(description="A theme")]
    ) -> str:
        """A haiku."""
        return topic

    async def short(ctx: RequestContext, topic: Annotated[str, Field(max_length=9)]) -> str:
        """A short haiku."""
        return topic

    assert server.prompts["haiku"].prompt.arguments == [
        PromptArgument("topic", "A theme", required=True)
    ]
    with pytest.raises(SignatureError, match=r"^prompt 'short', parameter 'topic': a prompt arg"):
        server.prompt()(short)


def test_a_typed_prompt_with_a_non_string_parameter_is_refused() -> None:
    """presa-defined (docs/api.md, what registration refuses): prompt arguments
    are strings on the wire."""
    server = Server("prompts", "1.0.0")

    async def count(ctx: RequestContext, n: int) -> str:
        """Counts."""
        return str(n)

    with pytest.raises(SignatureError, match=r"^prompt 'count', parameter 'n': prompt arguments"):
        server.prompt()(count)


async def test_a_boolean_stays_a_boolean_beside_an_equal_number() -> None:
    """presa-defined (docs/api.md, typed tools: a union takes the first member the value
    fits, a ``Literal`` gets the value): JSON ``true`` is no integer (JSON Schema
    2020-12 Validation §6.1.1, §4.2.2: ``true`` and ``1`` are different values),
    though Python compares ``True == 1``; so ``int | bool`` hands ``true`` over as
    ``True``, and ``Literal[True, 1]`` hands ``1`` over as ``1``."""
    server = Server("booleans", "1.0.0")
    got: list[Any] = []

    @server.tool()
    async def flag(ctx: RequestContext, either: int | bool, exact: Literal[True, 1]) -> str:
        """Takes a count or a switch, and one of two equal-looking values."""
        got.append((either, exact))
        return "flagged"

    async with connect(server) as client:
        result = await client.call_tool("flag", {"either": True, "exact": 1})
    assert result["content"] == [{"type": "text", "text": "flagged"}]
    assert got == [(True, 1)]
    assert [type(value) for value in got[0]] == [bool, int]
