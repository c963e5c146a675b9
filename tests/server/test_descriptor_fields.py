"""What a ``*/list`` result could not carry is refused at registration.

Spec-mandated (schema ``$defs.Tool``, ``$defs.Resource``,
``$defs.ResourceTemplate``, ``$defs.Prompt``, ``$defs.PromptArgument``:
``name``, ``title``, ``description`` and ``mimeType`` are strings,
``required`` a boolean): a descriptor with a field of another type would go
out on every listing as a result the schema refuses, so the decorator
refuses it, in one line naming what was registered and the field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server, SignatureError
from presa_trio.testing import running
from presa_trio.wire import models
from tests import wire_schema
from tests.expect import result_of
from tests.server.plain_handlers import prompt, resource, template, tool

#: Each registers through a server typed ``Any``: the values are the wrong types on purpose.
Register = Callable[[Any], Any]
MISTAKES: dict[str, tuple[Register, str]] = {
    "tool-title": (lambda s: s.tool(description="d", title=5)(tool), "title"),
    "tool-description": (lambda s: s.tool(description=5)(tool), "description"),
    "resource-name": (lambda s: s.resource("a://b", name=5)(resource), "name"),
    "resource-title": (lambda s: s.resource("a://b", title=["t"])(resource), "title"),
    "resource-description": (
        lambda s: s.resource("a://b", description=1.5)(resource),
        "description",
    ),
    "resource-mime-type": (lambda s: s.resource("a://b", mime_type=5)(resource), "mime_type"),
    "template-name": (lambda s: s.resource_template("a://{b}", name=5)(template), "name"),
    "template-title": (
        lambda s: s.resource_template("a://{b}", name="b", title=5)(template),
        "title",
    ),
    "template-mime-type": (
        lambda s: s.resource_template("a://{b}", name="b", mime_type=True)(template),
        "mime_type",
    ),
    "prompt-title": (lambda s: s.prompt(description="d", title=5)(prompt), "title"),
    "prompt-description": (lambda s: s.prompt(description=5)(prompt), "description"),
    "prompt-argument-dict": (
        lambda s: s.prompt(description="d", arguments=[{"name": "a"}])(prompt),
        "arguments",
    ),
    "prompt-argument-alone": (
        lambda s: s.prompt(description="d", arguments=models.PromptArgument("a"))(prompt),
        "arguments",
    ),
    "prompt-argument-name": (
        lambda s: s.prompt(description="d", arguments=[models.PromptArgument(5)])(prompt),  # type: ignore[arg-type]
        "arguments",
    ),
    "prompt-argument-required": (
        lambda s: s.prompt(
            description="d",
            arguments=[models.PromptArgument("a", required="yes")],  # type: ignore[arg-type]
        )(prompt),
        "arguments",
    ),
    "prompt-argument-title": (
        lambda s: s.prompt(
            description="d",
            arguments=[models.PromptArgument("a", title=5)],  # type: ignore[arg-type]
        )(prompt),
        "arguments",
    ),
    "prompt-argument-description": (
        lambda s: s.prompt(
            description="d",
            arguments=[models.PromptArgument("a", description=5)],  # type: ignore[arg-type]
        )(prompt),
        "arguments",
    ),
}


@pytest.mark.parametrize("case", list(MISTAKES))
def test_a_field_the_schema_refuses_is_refused_at_registration(case: str) -> None:
    register, field = MISTAKES[case]
    server = Server("fields", "1.0.0")
    with pytest.raises(SignatureError, match=field):
        register(server)
    assert (server.tools, server.resources, server.templates, server.prompts) == ({}, {}, [], {})


async def test_a_prompt_argument_lists_its_title() -> None:
    """Spec-mandated (schema ``$defs.PromptArgument``: an optional ``title`` for display)."""
    server = Server("fields", "1.0.0")
    argument = models.PromptArgument("tz", "An IANA zone", required=True, title="Time zone")

    @server.prompt(description="d", arguments=[argument])
    async def clock(ctx: RequestContext, arguments: dict[str, str]) -> str:
        return arguments["tz"]

    async with running(McpApp.for_server(server)) as client:
        result = result_of(await client.call("prompts/list"))
    assert result["prompts"][0]["arguments"] == [
        {"name": "tz", "description": "An IANA zone", "required": True, "title": "Time zone"}
    ]
    assert wire_schema.result_problems("prompts/list", result) == []
