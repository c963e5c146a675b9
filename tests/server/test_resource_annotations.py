"""``annotations`` and ``size`` of resources, ``annotations`` of resource templates.

Spec-mandated (server/resources §Annotations: "Resources, resource templates
and content blocks support optional annotations", with the page's example
resource; schema ``$defs.Resource`` and ``$defs.ResourceTemplate``). What
the listing could not carry is refused at registration.
"""

from __future__ import annotations

from typing import Any

import pytest

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server, SignatureError
from presa_trio.testing import running
from tests import wire_schema
from tests.expect import result_of
from tests.server.plain_handlers import resource, template

ANNOTATIONS = {"audience": ["user"], "priority": 0.8, "lastModified": "2025-01-12T15:00:58Z"}


def annotated() -> Server:
    server = Server("annotations", "1.0.0")

    @server.resource(
        "file:///project/README.md",
        name="README.md",
        title="Project Documentation",
        mime_type="text/markdown",
        annotations=ANNOTATIONS,
    )
    async def readme(ctx: RequestContext) -> str:
        return "# Project"

    @server.resource_template("file:///project/{name}", name="file", annotations=ANNOTATIONS)
    async def file(ctx: RequestContext, variables: dict[str, str]) -> str:
        return "text"

    return server


@pytest.mark.parametrize(
    ("method", "key"),
    [("resources/list", "resources"), ("resources/templates/list", "resourceTemplates")],
)
async def test_annotations_are_listed_as_given(method: str, key: str) -> None:
    async with running(McpApp.for_server(annotated())) as client:
        result = result_of(await client.call(method))
    assert result[key][0]["annotations"] == ANNOTATIONS
    assert wire_schema.result_problems(method, result) == []


@pytest.mark.parametrize(
    "annotations",
    [
        ["user"],
        {"priority": 5},
        {"priority": "high"},
        {"audience": ["bot"]},
        {"audience": "user"},
        {"lastModified": 20250112},
    ],
    ids=[
        "list",
        "priority-over-one",
        "priority-text",
        "audience-unknown",
        "audience-string",
        "last-modified-number",
    ],
)
@pytest.mark.parametrize("kind", ["resource", "resource_template"])
def test_annotations_the_schema_refuses_are_refused_at_registration(
    kind: str, annotations: Any
) -> None:
    server = Server("annotations", "1.0.0")
    registrations: dict[str, tuple[Any, Any]] = {
        "resource": (server.resource("test://r", name="r", annotations=annotations), resource),
        "resource_template": (
            server.resource_template("test://r/{id}", name="r", annotations=annotations),
            template,
        ),
    }
    decorator, handler = registrations[kind]
    with pytest.raises(SignatureError, match="annotations"):
        decorator(handler)
    assert (server.resources, server.templates) == ({}, [])


async def test_a_resources_size_is_listed() -> None:
    """Spec-mandated (server/resources §Resource: ``size``, optional, in bytes;
    schema ``$defs.Resource.size`` an integer)."""
    server = Server("size", "1.0.0")

    @server.resource("test://sized", name="sized", size=12)
    async def sized(ctx: RequestContext) -> bytes:
        return b"twelve bytes"

    async with running(McpApp.for_server(server)) as client:
        result = result_of(await client.call("resources/list"))
    assert result["resources"] == [{"uri": "test://sized", "name": "sized", "size": 12}]


@pytest.mark.parametrize("size", [-1, 1.5, "12", True])
def test_a_size_that_is_no_byte_count_is_refused(size: Any) -> None:
    """Spec-mandated (schema ``$defs.Resource.size``: an integer, a count of bytes)."""
    server = Server("size", "1.0.0")

    async def sized(ctx: RequestContext) -> str:
        return "text"

    with pytest.raises(SignatureError, match="size"):
        server.resource("test://sized", name="sized", size=size)(sized)
    assert server.resources == {}
