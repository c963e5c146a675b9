"""``icons`` on tools, resources, resource templates and prompts (schema ``$defs.Icon``).

Spec-mandated (server/tools §Tool, server/resources §Resource, server/prompts
§Listing Prompts: each lists ``icons``, an optional array of icons for
display in user interfaces; schema ``$defs.Icon``: ``src`` a URI, then an
optional ``mimeType``, ``sizes`` of strings and ``theme`` ``light`` or
``dark``). What ``tools/list`` could not carry is refused at registration.
"""

from __future__ import annotations

from typing import Any

import pytest

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server, SignatureError
from presa_trio.testing import running
from presa_trio.wire import models
from tests import wire_schema
from tests.expect import result_of
from tests.server.plain_handlers import prompt, resource, template, tool

ICONS = [
    models.Icon("https://example.com/icon.png", mime_type="image/png", sizes=["48x48"]),
    models.Icon("data:image/svg+xml;base64,PHN2Zy8+", sizes=["any"], theme="dark"),
]
WIRE_ICONS = [
    {"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]},
    {"src": "data:image/svg+xml;base64,PHN2Zy8+", "sizes": ["any"], "theme": "dark"},
]


def with_icons() -> Server:
    server = Server("icons", "1.0.0")

    @server.tool(description="Has icons", icons=ICONS)
    async def iconic(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return "ok"

    @server.resource("test://iconic", name="iconic", icons=ICONS)
    async def resource(ctx: RequestContext) -> str:
        return "ok"

    @server.resource_template("test://iconic/{id}", name="iconic-template", icons=ICONS)
    async def template(ctx: RequestContext, variables: dict[str, str]) -> str:
        return "ok"

    @server.prompt(description="Has icons", icons=ICONS)
    async def prompt(ctx: RequestContext, arguments: dict[str, str]) -> str:
        return "ok"

    @server.tool(description="Has none")
    async def plain(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return "ok"

    return server


@pytest.mark.parametrize(
    ("method", "key"),
    [
        ("tools/list", "tools"),
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
        ("prompts/list", "prompts"),
    ],
)
async def test_icons_are_listed_as_the_schema_has_them(method: str, key: str) -> None:
    async with running(McpApp.for_server(with_icons())) as client:
        result = result_of(await client.call(method))
    assert result[key][0]["icons"] == WIRE_ICONS
    assert wire_schema.result_problems(method, result) == []


async def test_without_icons_there_is_no_icons_key() -> None:
    async with running(McpApp.for_server(with_icons())) as client:
        tools = result_of(await client.call("tools/list"))["tools"]
    assert "icons" not in tools[1]


@pytest.mark.parametrize(
    "icons",
    [
        [models.Icon("")],
        [models.Icon("icon.png")],
        [models.Icon(5)],  # type: ignore[arg-type]
        [models.Icon("https://example.com/i.png", mime_type=5)],  # type: ignore[arg-type]
        [models.Icon("https://example.com/i.png", sizes="48x48")],  # type: ignore[arg-type]
        [models.Icon("https://example.com/i.png", sizes=[48])],  # type: ignore[list-item]
        [models.Icon("https://example.com/i.png", theme="blue")],  # type: ignore[arg-type]
        [{"src": "https://example.com/i.png"}],
        models.Icon("https://example.com/i.png"),
    ],
    ids=[
        "empty-src",
        "relative-src",
        "number-src",
        "number-mime-type",
        "sizes-string",
        "sizes-numbers",
        "unknown-theme",
        "dict",
        "not-a-list",
    ],
)
@pytest.mark.parametrize("kind", ["tool", "resource", "resource_template", "prompt"])
def test_icons_the_schema_refuses_are_refused_at_registration(kind: str, icons: Any) -> None:
    server = Server("icons", "1.0.0")
    registrations: dict[str, tuple[Any, Any]] = {
        "tool": (server.tool(description="d", icons=icons), tool),
        "resource": (server.resource("test://r", name="r", icons=icons), resource),
        "resource_template": (
            server.resource_template("test://r/{id}", name="r", icons=icons),
            template,
        ),
        "prompt": (server.prompt(description="d", icons=icons), prompt),
    }
    decorator, handler = registrations[kind]
    with pytest.raises(SignatureError, match="icons"):
        decorator(handler)
    assert (server.tools, server.resources, server.templates, server.prompts) == ({}, {}, [], {})
