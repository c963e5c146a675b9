"""Every registration mistake is refused when the server is built, in one line.

presa-defined (docs/api.md, what registration refuses): each decorator
(``server.tool``, ``tasks.tool``, ``server.resource``,
``server.resource_template``, ``server.prompt``, ``server.completion``)
refuses, with a :class:`~presa_trio.server.SignatureError` naming what was
registered and the parameter: a first parameter that is not the request
context, the decorator used without calling it, a name registered twice, a
plain ``def`` without ``thread=True``, a default its parameter's schema
refuses, a return type with no JSON Schema, a URI template expression no URI
would match, tool annotations that schema ``$defs.ToolAnnotations`` refuses
(``tools/list`` would send them). ``thread=True`` runs a plain
``def`` of every kind on a worker thread.
"""

from __future__ import annotations

import enum
import types
from typing import Any, Literal

import pytest

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server, SignatureError
from presa_trio.testing import running
from presa_trio.wire import models
from tests.expect import result_of
from tests.server.mistakes import HEADER, MISTAKES


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
