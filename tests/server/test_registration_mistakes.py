"""Every registration mistake is refused when the server is built, in one line.

presa-defined (docs/api.md, what registration refuses): each decorator
(``server.tool``, ``tasks.tool``, ``server.resource``,
``server.resource_template``, ``server.prompt``, ``server.completion``) refuses,
with a :class:`~presa_trio.server.SignatureError` naming what was registered and
the parameter: a first parameter that is not the request context, the decorator
used without calling it, a name registered twice, a plain ``def`` without
``thread=True``, a default its parameter's schema refuses, ``Field`` constraints
no value can meet (``Field(ge=10, le=1)``), a ``Field`` given as the default, a
hand-written ``input_schema=`` or ``output_schema=`` holding a subschema no
value meets (``minimum`` over ``maximum``), ``output_schema=`` that the declared
return type never meets (``-> int`` beside an object schema, ``-> str``), a
return type with no JSON Schema, or one no call could answer with
(``-> list[str]`` for a completion), a template handler taking one variable where
every variable comes in one dict, a URI template matching what an earlier one
matches, a URI template expression no URI would match, tool annotations that
schema ``$defs.ToolAnnotations`` refuses (``tools/list`` would send them).
``thread=True`` runs a plain ``def`` of every kind on a worker thread.
"""

from __future__ import annotations

import datetime
import enum
import functools
import math
import re
import types
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, cast

import pytest

from presa_trio.http.app import McpApp
from presa_trio.server import Field, RequestContext, SchemaError, Server, SignatureError
from presa_trio.tasks import Policy, TasksExtension
from presa_trio.testing import running
from presa_trio.wire import models
from tests.expect import result_of
from tests.server.mistakes import HEADER, MISTAKES
from tests.server.plain_handlers import resource, template, tool


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


def test_every_mistake_on_every_decorator_is_one_line_naming_it() -> None:
    """Each module of :data:`MISTAKES` fails at its mistake, with its own line."""
    wrong: dict[str, str] = {}
    for case, (source, says) in MISTAKES.items():
        module = types.ModuleType(case.replace(" ", "_").replace(".", "_"))
        with pytest.raises(SignatureError) as refused:
            exec(compile(HEADER + source, f"{module.__name__}.py", "exec"), module.__dict__)
        text = str(refused.value)
        if not text.startswith(says) or "\n" in text:
            wrong[case] = text
    assert wrong == {}


def test_a_refused_registration_registers_nothing() -> None:
    """The server is as it was before the refused decorator ran."""
    server = Server("mistakes", "1.0.0")
    with pytest.raises(SignatureError):

        @server.resource("note://today")
        def today(ctx: RequestContext) -> str:
            return "rain"

    assert server.resources == {}


@pytest.mark.parametrize("policy", ["optional", None, 1])
def test_a_task_policy_that_is_no_policy_is_refused_and_registers_nothing(policy: Any) -> None:
    """presa-defined (docs/api.md, ``TasksExtension.tool``): a policy is a ``Policy``
    or a function of the call; anything else would fail every call of the tool."""
    server = Server("mistakes", "1.0.0")
    tasks = server.add_extension(TasksExtension())

    async def add(ctx: RequestContext, x: int) -> int:
        """Adds one."""
        return x + 1

    async def by_request(ctx: RequestContext, params: dict[str, Any]) -> Policy:
        return Policy.SYNC

    says = f"tool 'add': the policy is {policy!r}; give Policy.SYNC"
    with pytest.raises(SignatureError, match=re.escape(says)):
        tasks.tool(policy)(add)
    with pytest.raises(SignatureError, match=re.escape(says)):
        tasks.set_policy("add", policy)
    with pytest.raises(SignatureError, match="tool 'add': the policy is <function"):
        tasks.set_policy("add", by_request)  # type: ignore[arg-type]
    assert (server.tools, tasks.policies) == ({}, {})


def test_a_task_tool_without_a_name_is_refused_naming_what_to_give() -> None:
    """presa-defined (docs/api.md, ``Server.tool``): an object with an
    ``async def __call__`` has no ``__name__``; ``tasks.tool`` asks for ``name=`` as
    ``server.tool`` does."""
    server = Server("mistakes", "1.0.0")
    tasks = server.add_extension(TasksExtension())

    class Adder:
        """Adds one."""

        async def __call__(self, ctx: RequestContext, x: int) -> int:
            return x + 1

    with pytest.raises(SignatureError, match="a tool: needs a name; give name="):
        tasks.tool(Policy.OPTIONAL)(Adder())
    tasks.tool(Policy.OPTIONAL, "add")(Adder())
    assert (list(server.tools), tasks.policies) == (["add"], {"add": Policy.OPTIONAL})


def test_a_method_decorated_in_its_class_is_refused_and_its_bound_method_serves() -> None:
    """presa-defined (docs/api.md, what registration refuses: the context first):
    decorated in the class body, a method gets ``self`` where the context goes and
    the context as an argument; the line says so, for a tool and a typed prompt.
    The bound method of an instance registers as a function does."""
    server = Server("mistakes", "1.0.0")
    says = "parameter 'ctx': the request context is the first parameter, and only the first"

    class Greeter:
        async def greet(self, ctx: RequestContext, name: str) -> str:
            """Greets someone."""
            return f"Hello, {name}!"

    with pytest.raises(SignatureError, match=f"tool 'greet', {says}"):
        server.tool()(Greeter.greet)  # type: ignore[type-var]
    with pytest.raises(SignatureError, match=f"prompt 'greet', {says}"):
        server.prompt()(Greeter.greet)  # type: ignore[type-var]
    server.tool()(Greeter().greet)
    server.prompt()(Greeter().greet)
    assert server.tools["greet"].tool.input_schema["required"] == ["name"]
    assert [argument.name for argument in server.prompts["greet"].prompt.arguments or ()] == [
        "name"
    ]


def test_a_partial_is_refused_saying_what_to_register_instead() -> None:
    """presa-defined (docs/api.md, what registration refuses): a ``functools.partial``
    has no hints of its own; every decorator says so in one line, rather than
    repeating what ``typing.get_type_hints`` says of it."""
    server = Server("mistakes", "1.0.0")

    async def greet(ctx: RequestContext, greeting: str, name: str) -> str:
        """Greets someone."""
        return f"{greeting}, {name}!"

    async def read(ctx: RequestContext, greeting: str) -> str:
        return greeting

    says = "a functools.partial has no hints to read a schema from; register an async def"
    with pytest.raises(SignatureError, match=f"tool 'hello': {says}"):
        server.tool("hello")(functools.partial(greet, greeting="Hello"))
    with pytest.raises(SignatureError, match=f"prompt 'hello': {says}"):
        server.prompt("hello")(functools.partial(greet, greeting="Hello"))
    with pytest.raises(SignatureError, match=f"resource 'note://hello': {says}"):
        server.resource("note://hello", name="hello")(functools.partial(read, greeting="Hi"))
    assert (server.tools, server.prompts, server.resources) == ({}, {}, {})


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (("hello", 1.0), "Server('hello', 1.0): the name and the version are strings"),
        ((None, "1.0.0"), "Server(None, '1.0.0'): the name and the version are strings"),
        (("hello", "1.0.0", 42), "Server('hello'): instructions= is 42, not a str"),
    ],
)
def test_a_server_whose_name_version_or_instructions_is_no_string_is_refused(
    arguments: tuple[Any, ...], says: str
) -> None:
    """Spec-mandated (schema.ts ``Implementation``: ``name`` and ``version`` are
    strings; ``DiscoverResult.instructions`` a string): every result's ``serverInfo``
    would carry them, so the server is refused when it is made, in one line."""
    with pytest.raises(SignatureError, match=re.escape(says)):
        Server(*arguments)
    assert Server("hello", "1.0.0", "Greets.").instructions == "Greets."


@pytest.mark.parametrize(
    ("hint", "says"),
    [
        (
            Annotated[list[str], Field(min_length=1)],
            "Field(min_length=…) constrains strings, and this is a JSON array: it would not "
            "hold; a list's length is min_items and max_items",
        ),
        (Annotated[str, Field(ge=1)], "Field(ge=…) constrains numbers, and this is a JSON string"),
        (Annotated[int, Field(pattern="^1")], "Field(pattern=…) constrains strings"),
        (Annotated[str, Field(max_items=2)], "Field(max_items=…) constrains arrays"),
    ],
)
def test_a_field_constraint_its_type_makes_idle_is_refused(hint: Any, says: str) -> None:
    """presa-defined (docs/api.md: a constraint that would silently not hold is
    refused, as pydantic's ``Field`` is): JSON Schema applies ``minLength`` to strings,
    ``minimum`` to numbers, ``minItems`` to arrays (2020-12 Validation §6.2 to §6.4),
    so ``min_length`` on a list, pydantic's spelling, would check nothing."""
    server = Server("mistakes", "1.0.0")

    async def pick(ctx: RequestContext, choice: Any) -> str:
        """Picks."""
        return "ok"

    pick.__annotations__["choice"] = hint
    with pytest.raises(SignatureError, match=re.escape(f"tool 'pick', parameter 'choice': {says}")):
        server.tool()(pick)
    assert server.tools == {}


def test_a_field_constraint_on_its_own_type_or_a_union_is_kept() -> None:
    """presa-defined: each constraint on the type it holds for is in the schema, and
    on a union (``list[int] | None``) it stays, JSON Schema applying it to the arrays."""
    server = Server("mistakes", "1.0.0")

    @server.tool()
    async def pick(
        ctx: RequestContext,
        tags: Annotated[list[int] | None, Field(min_items=1)],
        name: Annotated[str, Field(min_length=1, pattern="^[a-z]+$")] = "a",
        count: Annotated[float, Field(gt=0)] = 1.0,
    ) -> str:
        """Picks."""
        return "ok"

    properties = server.tools["pick"].tool.input_schema["properties"]
    assert (properties["tags"]["minItems"], properties["name"]["minLength"]) == (1, 1)
    assert properties["count"]["exclusiveMinimum"] == 0


def test_a_name_uri_or_reference_that_is_no_string_is_refused_naming_it() -> None:
    """presa-defined (docs/api.md, what registration refuses): a number where a
    tool's name, a resource's URI, a template or a completion's reference belongs
    is one line naming it, as a string outside the rules is."""
    server = Server("mistakes", "1.0.0")

    async def today(ctx: RequestContext) -> str:
        """Today."""
        return "rain"

    async def note(ctx: RequestContext, variables: dict[str, str]) -> str:
        return "rain"

    async def days(ctx: RequestContext, argument: str, value: str, given: Any) -> Any:
        return None

    refusals: list[tuple[Callable[[], object], str]] = [
        (lambda: server.tool(cast(str, 42))(today), "tool 42: a tool name is 1 to 128"),
        (lambda: server.resource(cast(str, 42))(today), "resource 42: a resource's uri is a URI"),
        (
            lambda: server.resource_template(cast(str, 42), name="note")(note),
            "resource template 42: a resource template is a URI template",
        ),
        (
            lambda: server.completion("ref/prompt", cast(str, 42))(days),
            "completion of ref/prompt 42: the reference is a prompt's name",
        ),
    ]
    for register, says in refusals:
        with pytest.raises(SignatureError, match=re.escape(says)):
            register()
    assert (server.tools, server.resources, server.templates, server.completions) == (
        {},
        {},
        [],
        {},
    )


async def test_a_value_json_cannot_hold_is_refused_so_every_list_is_still_answered() -> None:
    """Spec-mandated (server/tools, server/resources §Capabilities: a server that declares
    the capability MUST answer ``tools/list``, ``resources/list`` with what it offers):
    a schema or ``annotations=`` holding a value with no JSON form (NaN, Infinity, a
    ``date``, a ``set``) is refused when registered, naming it, where it was taken and
    made every later list -32603; the server goes on listing what it does offer."""
    server = Server("mistakes", "1.0.0")

    nan_default = {"type": "object", "properties": {"x": {"type": "number", "default": math.nan}}}
    refusals: list[tuple[Callable[[], object], type[Exception], str]] = [
        (
            lambda: server.tool("nan", description="d", input_schema=nan_default)(tool),
            SchemaError,
            "tool 'nan': inputSchema holds a value JSON cannot carry",
        ),
        (
            lambda: server.tool("inf", description="d", output_schema={"const": math.inf})(tool),
            SchemaError,
            "tool 'inf': outputSchema holds a value JSON cannot carry",
        ),
        (
            lambda: server.tool(
                "dated", description="d", annotations={"x-since": datetime.date(2026, 7, 28)}
            )(tool),
            SignatureError,
            "tool 'dated': annotations= holds a value JSON cannot carry",
        ),
        (
            lambda: server.resource("note://a", annotations={"x-tags": {"a"}})(resource),
            SignatureError,
            "resource 'note://a': annotations= holds a value JSON cannot carry",
        ),
        (
            lambda: server.resource_template(
                "note://{day}", name="note", annotations={"x-weight": math.inf}
            )(template),
            SignatureError,
            "resource template 'note://{day}': annotations= holds a value JSON cannot carry",
        ),
    ]
    for register, kind, says in refusals:
        with pytest.raises(kind, match=re.escape(says)):
            register()
    server.tool("kept", description="d", annotations={"x-since": "2026-07-28"})(tool)
    server.resource("note://b", annotations={"x-tags": ["a"]})(resource)
    async with running(McpApp.for_server(server)) as client:
        tools = result_of(await client.call("tools/list"))["tools"]
        resources = result_of(await client.call("resources/list"))["resources"]
        templates = result_of(await client.call("resources/templates/list"))
    assert [listed["name"] for listed in tools] == ["kept"]
    assert [listed["uri"] for listed in resources] == ["note://b"]
    assert templates["resourceTemplates"] == []


@pytest.mark.parametrize("uri", ["", "today", "not a uri", "/notes/today.txt", "1note://a"])
def test_a_resource_uri_without_a_scheme_is_refused(uri: str) -> None:
    """Spec-mandated (schema.ts ``Resource.uri``, ``format: uri``; RFC 3986 §3):
    a name or a path is no URI; one with a scheme is accepted."""
    server = Server("mistakes", "1.0.0")

    async def today(ctx: RequestContext) -> str:
        return "rain"

    with pytest.raises(SignatureError, match="a resource's uri is a URI, starting with its scheme"):
        server.resource(uri)(today)
    server.resource("x-notes+v1.2:today")(today)
    assert list(server.resources) == ["x-notes+v1.2:today"]


@pytest.mark.parametrize("ref_type", ["prompt", "ref/tool", "ref/resources"])
def test_a_completion_of_an_unknown_reference_type_is_refused(ref_type: Any) -> None:
    """Spec-mandated (server/utilities/completion §Reference Types: ``ref/prompt``
    and ``ref/resource``): any other type could never be asked for."""
    server = Server("mistakes", "1.0.0")
    with pytest.raises(SignatureError, match="the reference type is 'ref/prompt' or 'ref/re"):
        server.completion(ref_type, "haiku")
    assert server.completions == {}


class Greeter:
    """Greets someone by name."""

    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    async def __call__(self, ctx: RequestContext, name: str) -> str:
        return f"{self.greeting}, {name}!"


class Motto:
    """Today's motto."""

    async def __call__(self, ctx: RequestContext) -> str:
        return "carpe diem"


async def test_an_object_with_an_async_call_is_a_handler_named_by_name() -> None:
    """presa-defined (docs/api.md, registering): an object whose ``__call__`` is an
    ``async def`` registers as a function does, its method's hints its schema and
    its class docstring its description; having no ``__name__``, it needs
    ``name=``, which is said in one line rather than failing in Python."""
    server = Server("objects", "1.0.0")
    server.tool("greet")(Greeter("Hello"))
    server.resource("note://motto", name="motto")(Motto())
    with pytest.raises(SignatureError, match=r"^a tool: needs a name; give name="):
        server.tool()(Greeter("Hi"))
    with pytest.raises(SignatureError, match=r"^resource 'note://other': needs a name; give name="):
        server.resource("note://other")(Motto())
    with pytest.raises(SignatureError, match=r"^a prompt: needs a name; give name="):
        server.prompt()(Motto())
    tool = server.tools["greet"].tool
    assert (tool.description, tool.input_schema["required"]) == (
        "Greets someone by name.",
        ["name"],
    )
    async with running(McpApp.for_server(server)) as client:
        params = {"name": "greet", "arguments": {"name": "Ada"}}
        greeted = result_of(await client.call("tools/call", params))
        read = result_of(await client.call("resources/read", {"uri": "note://motto"}))
    assert greeted["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert read["contents"][0]["text"] == "carpe diem"


def test_enum_and_literal_schemas_carry_their_type() -> None:
    """presa-defined (JSON Schema of a hint): ``enum`` comes with ``type``, which
    clients read to show or fill in a parameter; mixed values give a list of types."""
    server = Server("types", "1.0.0")

    @server.tool()
    async def paint(
        ctx: RequestContext, colour: Colour, size: Literal[1, 2], key: Literal["a", 1, None]
    ) -> str:
        """Paints."""
        return "painted"

    properties = server.tools["paint"].tool.input_schema["properties"]
    assert properties == {
        "colour": {"type": "string", "enum": ["red", "blue"]},
        "size": {"type": "integer", "enum": [1, 2]},
        "key": {"type": ["string", "integer", "null"], "enum": ["a", 1, None]},
    }


def threaded_server() -> Server:
    """One plain ``def`` of every kind, each registered with ``thread=True``."""
    server = Server("threads", "1.0.0")

    @server.tool(thread=True)
    def add(ctx: RequestContext, x: int, y: int = 1) -> int:
        """Adds."""
        return x + y

    @server.resource("note://today", thread=True)
    def today(ctx: RequestContext) -> str:
        return "rain"

    @server.resource_template("note://{day}", name="note", thread=True)
    def note(ctx: RequestContext, variables: dict[str, str]) -> str:
        return f"sun on {variables['day']}"

    @server.prompt(thread=True)
    def haiku(ctx: RequestContext, topic: str) -> str:
        """A haiku."""
        return f"Write a haiku about {topic}."

    @server.completion("ref/prompt", "haiku", thread=True)
    def topics(
        ctx: RequestContext, argument: str, value: str, known: dict[str, str]
    ) -> models.Completion:
        return models.Completion(values=[f"{value}s"], total=1, has_more=False)

    return server


async def test_thread_true_runs_a_plain_def_of_every_kind() -> None:
    """presa-defined (``thread=True``): tools, resources, templates, prompts and
    completions written as plain ``def`` answer as their async forms do."""
    async with running(McpApp.for_server(threaded_server())) as client:
        called = result_of(await client.call("tools/call", {"name": "add", "arguments": {"x": 2}}))
        read = result_of(await client.call("resources/read", {"uri": "note://today"}))
        matched = result_of(await client.call("resources/read", {"uri": "note://monday"}))
        prompt = result_of(
            await client.call("prompts/get", {"name": "haiku", "arguments": {"topic": "tea"}})
        )
        completed = result_of(
            await client.call(
                "completion/complete",
                {
                    "ref": {"type": "ref/prompt", "name": "haiku"},
                    "argument": {"name": "topic", "value": "cat"},
                },
            )
        )
    assert called["content"] == [{"type": "text", "text": "3"}]
    assert read["contents"][0]["text"] == "rain"
    assert matched["contents"][0]["text"] == "sun on monday"
    texts: list[Any] = [message["content"]["text"] for message in prompt["messages"]]
    assert texts == ["Write a haiku about tea."]
    assert completed["completion"]["values"] == ["cats"]


@pytest.mark.parametrize("uri_template", ["notes/{day}", "{day}.txt", "/notes/{day}", ""])
def test_a_resource_template_without_a_scheme_is_refused(uri_template: str) -> None:
    """Spec-mandated (schema.ts ``ReadResourceRequestParams.uri``, ``format: uri``;
    RFC 3986 §3): every URI a template matches must be a URI a client can send,
    so a template starts with its scheme; one that does is accepted."""
    server = Server("mistakes", "1.0.0")

    async def day(ctx: RequestContext, variables: dict[str, str]) -> str:
        return "rain"

    with pytest.raises(SignatureError, match="starting with its scheme"):
        server.resource_template(uri_template, name="day")(day)
    server.resource_template("notes:{day}", name="day")(day)
    assert [t.template.uri_template for t in server.templates] == ["notes:{day}"]


def declared_returns_server() -> Server:
    """Each kind of handler declaring a return type it may answer with, and a template's
    variables hinted as a mapping, ``Any``, or not at all."""
    server = Server("declared", "1.0.0")

    @server.resource("note://today")
    async def today(ctx: RequestContext) -> str | bytes:
        return "rain"

    @server.resource("note://log")
    async def log(ctx: RequestContext) -> list[models.ResourceContents]:
        return [models.TextResourceContents("note://log", "sun")]

    @server.resource_template("note://{day}", name="day")
    async def day(ctx: RequestContext, variables: Mapping[str, str]) -> Any:
        return variables["day"]

    @server.resource_template("any://{day}", name="any")
    async def anything(ctx: RequestContext, variables: Any) -> str:
        return str(variables["day"])

    @server.resource_template("bare://{day}", name="bare")
    async def bare(ctx: RequestContext, variables) -> str:  # type: ignore[no-untyped-def]
        return str(variables["day"])

    @server.prompt()
    async def haiku(ctx: RequestContext, topic: str) -> list[models.PromptMessage]:
        """A haiku."""
        return [models.PromptMessage("user", models.TextContent(f"A haiku about {topic}."))]

    @server.completion("ref/prompt", "haiku")
    async def topics(
        ctx: RequestContext, argument: str, value: str, context_arguments: dict[str, str]
    ) -> models.Completion:
        return models.Completion(values=[f"{value}s"])

    return server


async def test_a_handler_declaring_what_it_may_return_serves() -> None:
    """presa-defined (docs/api.md, Handler signatures): the return types and variables
    hints the registration reads (tests/server/mistakes.py refuses the others) are
    the ones each kind of handler answers with on the wire."""
    async with running(McpApp.for_server(declared_returns_server())) as client:

        async def read(uri: str) -> list[Any]:
            result = result_of(await client.call("resources/read", {"uri": uri}))
            return [contents["text"] for contents in result["contents"]]

        texts = [await read(uri) for uri in ("note://today", "note://log", "note://mon")]
        texts += [await read(f"{scheme}://tue") for scheme in ("any", "bare")]
        prompt = result_of(
            await client.call("prompts/get", {"name": "haiku", "arguments": {"topic": "tea"}})
        )
        completed = result_of(
            await client.call(
                "completion/complete",
                {
                    "ref": {"type": "ref/prompt", "name": "haiku"},
                    "argument": {"name": "topic", "value": "cat"},
                },
            )
        )
    assert texts == [["rain"], ["sun"], ["mon"], ["tue"], ["tue"]]
    assert prompt["messages"][0]["content"]["text"] == "A haiku about tea."
    assert completed["completion"]["values"] == ["cats"]
