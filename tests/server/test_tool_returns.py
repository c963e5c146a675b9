"""What a tool returns: a valid ``CallToolResult`` on the wire, or -32603; never invalid wire.

Every value is returned once on the plain path and once in a task, and the
two answers are compared with what the rules of
:mod:`presa_trio.server.results` say.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
from trio.testing import wait_all_tasks_blocked

from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TaskRunner, TasksExtension
from presa_trio.testing import DEFAULT_CAPABILITIES, TASKS_CAPABILITIES, McpClient, connect
from presa_trio.wire import models
from presa_trio.wire.errors import INTERNAL_ERROR
from tests.expect import error_of, incident_of


@attrs.frozen
class Point:
    x: int
    y: int


TEXT = models.TextContent("t")
WRONG: dict[str, Any] = {
    "int": 42,
    "none": None,
    "float": 1.5,
    "bool": True,
    "object": object(),
    "bytes": b"raw",
    "set": {1, 2},
    "list-of-ints": [42],
    "mixed-list": [TEXT, "text"],
    "nan-in-dict": {"x": math.nan},
    "int-keys": {1: "one"},
    "result-with-bad-content": models.CallToolResult([42]),  # type: ignore[list-item]
    "result-with-unencodable-structured": models.CallToolResult([TEXT], {"s": {1, 2}}),
    "result-with-string-is-error": models.CallToolResult([TEXT], is_error="yes"),  # type: ignore[arg-type]
    "a-prompt-message": models.PromptMessage("user", TEXT),
    "text-block-of-a-number": models.TextContent(42),  # type: ignore[arg-type]
    "image-of-raw-bytes": [models.ImageContent(b"\x89PNG", "image/png")],  # type: ignore[arg-type]
    "embedded-number": models.EmbeddedResource(models.TextResourceContents("a://b", 1)),  # type: ignore[arg-type]
    "result-with-number-text": models.CallToolResult([models.TextContent(1)]),  # type: ignore[arg-type]
    # Blocks whose fields the schema refuses: null where a string is required,
    # annotations out of range (schema $defs.Annotations), a _meta that is no object.
    "text-none": models.TextContent(None),  # type: ignore[arg-type]
    "image-without-mime-type": models.ImageContent("AAAA", None),  # type: ignore[arg-type]
    "link-without-name": models.ResourceLink("test://x", None),  # type: ignore[arg-type]
    "embedded-text-none": models.EmbeddedResource(
        models.TextResourceContents("test://x", None)  # type: ignore[arg-type]
    ),
    "priority-over-one": models.TextContent("t", annotations={"priority": 5}),
    "audience-unknown": [TEXT, models.TextContent("t", annotations={"audience": ["bot"]})],
    "meta-list": models.AudioContent("AAAA", "audio/wav", meta=[1]),  # type: ignore[arg-type]
    # Binary data that is no base64 (schema format byte; resources §Security Considerations).
    "image-not-base64": models.ImageContent("not base64!", "image/png"),
    "audio-not-base64": models.AudioContent("AAA", "audio/wav"),
    "embedded-blob-not-base64": models.EmbeddedResource(
        models.BlobResourceContents("test://x", "%%%%")
    ),
    "result-with-list-meta": models.CallToolResult([TEXT], meta=[1]),  # type: ignore[arg-type]
    "result-with-text-meta": models.CallToolResult([TEXT], meta="m"),  # type: ignore[arg-type]
    "link-size-negative": models.ResourceLink("test://x", "x", size=-1),
    "link-size-text": models.ResourceLink("test://x", "x", size="12"),  # type: ignore[arg-type]
    "link-icon-relative": models.ResourceLink("test://x", "x", icons=[models.Icon("i.png")]),
    "link-icons-dicts": models.ResourceLink("test://x", "x", icons=[{"src": "a:b"}]),  # type: ignore[list-item]
}
RIGHT: dict[str, tuple[Any, dict[str, Any]]] = {
    "str": ("hi", {"content": [{"type": "text", "text": "hi"}]}),
    "block": (TEXT, {"content": [{"type": "text", "text": "t"}]}),
    "blocks": ([TEXT, TEXT], {"content": [{"type": "text", "text": "t"}] * 2}),
    "tuple-of-blocks": ((TEXT,), {"content": [{"type": "text", "text": "t"}]}),
    "no-blocks": ([], {"content": []}),
    "block-with-annotations-and-meta": (
        models.ImageContent(
            "AAAA", "image/png", annotations={"priority": 0.5}, meta={"com.example/k": 1}
        ),
        {
            "content": [
                {
                    "type": "image",
                    "data": "AAAA",
                    "mimeType": "image/png",
                    "annotations": {"priority": 0.5},
                    "_meta": {"com.example/k": 1},
                }
            ]
        },
    ),
    "dict": (
        {"a": [1, None]},
        {
            "content": [{"type": "text", "text": '{"a": [1, null]}'}],
            "structuredContent": {"a": [1, None]},
        },
    ),
    "result-with-list-structured": (
        models.CallToolResult([TEXT], structured_content=[1]),
        {"content": [{"type": "text", "text": "t"}], "structuredContent": [1]},
    ),
    "link-with-size-and-icons": (
        models.ResourceLink(
            "test://x", "x", size=3, icons=[models.Icon("https://example.com/i.png")]
        ),
        {
            "content": [
                {
                    "type": "resource_link",
                    "uri": "test://x",
                    "name": "x",
                    "size": 3,
                    "icons": [{"src": "https://example.com/i.png"}],
                }
            ]
        },
    ),
    "attrs": (
        Point(1, 2),
        {
            "content": [{"type": "text", "text": '{"x": 1, "y": 2}'}],
            "structuredContent": {"x": 1, "y": 2},
        },
    ),
}


def build() -> Server:
    server = Server("returns", "1.0.0")
    tasks = TasksExtension(TaskRunner(ttl_ms=60_000))
    server.add_extension(tasks)

    @tasks.tool(Policy.OPTIONAL, description="Returns the value it is told to")
    async def give(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        kind = arguments["kind"]
        return WRONG[kind] if kind in WRONG else RIGHT[kind][0]

    return server


@pytest.fixture
async def client() -> AsyncIterator[McpClient]:
    async with connect(build()) as opened:
        yield opened


async def as_task(client: McpClient, kind: str) -> dict[str, Any]:
    created = await client.call_tool("give", {"kind": kind}, capabilities=TASKS_CAPABILITIES)
    await wait_all_tasks_blocked()
    return await client.get_task(created["taskId"])


@pytest.mark.parametrize("kind", list(WRONG))
async def test_a_wrong_return_is_an_internal_error_naming_tool_and_value(
    client: McpClient, caplog: pytest.LogCaptureFixture, kind: str
) -> None:
    """Spec-mandated (server/tools §Tool Result; E-24): no invalid result reaches
    the wire; the plain call is -32603 with an incident id, the task ends
    ``failed`` with it, and the log names the tool and what it returned."""
    with caplog.at_level(logging.ERROR):
        params = {"name": "give", "arguments": {"kind": kind}}
        plain = await client.call("tools/call", params, capabilities=DEFAULT_CAPABILITIES)
        incident_of(error_of(plain, 500, INTERNAL_ERROR), caplog.text)
        task = await as_task(client, kind)
    assert task["status"] == "failed"
    incident_of(task["error"], caplog.text)
    assert "tool give returned " + type(WRONG[kind]).__name__ in caplog.text
    assert "which is not a tool result" in caplog.text


@pytest.mark.parametrize("kind", list(RIGHT))
async def test_every_accepted_return_is_the_same_valid_result_on_both_paths(
    client: McpClient, kind: str
) -> None:
    """Spec-mandated (server/tools §Tool Result, §Structured Content; E-24): a
    JSON object or attrs instance is structuredContent with its JSON as text; a
    CallToolResult's structuredContent may be any JSON value (schema.ts); a block's
    fields go out under their wire names, ``mimeType`` and ``_meta`` (schema
    $defs.ImageContent)."""
    plain = await client.call_tool("give", {"kind": kind})
    task = await as_task(client, kind)
    expected = {**RIGHT[kind][1], "resultType": "complete"}
    assert {key: value for key, value in plain.items() if key != "_meta"} == expected
    assert (task["status"], task["result"]) == ("completed", expected)


async def test_a_dict_returned_by_a_tool_with_an_output_schema_is_its_structured_content() -> None:
    """Spec-mandated (server/tools §Output Schema; E-19, E-24): a returned dict is
    the structuredContent the schema checks."""
    server = Server("returns", "1.0.0")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    @server.tool(description="Counts", output_schema=schema)
    async def count(ctx: RequestContext, arguments: dict[str, Any]) -> dict[str, int]:
        return {"n": 3}

    async with connect(server) as client:
        result = await client.call_tool("count")
    assert result["structuredContent"] == {"n": 3}


USERS = {
    "type": "array",
    "items": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
}


async def test_a_tool_with_an_array_output_schema_returns_its_list_as_structured_content() -> None:
    """Spec-mandated (server/tools §Output Schema, §Structured Content; E-19): the
    page's array example, ``list_users``: an ``outputSchema`` may describe any
    JSON value, and ``structuredContent`` is the list that fits it, whether the
    tool is typed, takes the arguments object, or returns a CallToolResult."""
    server = Server("returns", "1.0.0")

    @server.tool(output_schema=USERS)
    async def list_users(ctx: RequestContext) -> list[dict[str, str]]:
        """Returns a list of all users."""
        return [{"id": "1"}]

    @server.tool(description="Returns a list of all users.", output_schema=USERS)
    async def list_all(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        return [{"id": "1"}]

    @server.tool(output_schema=USERS)
    async def list_said(ctx: RequestContext) -> models.CallToolResult:
        """Returns a list of all users, in words too."""
        return models.CallToolResult([TEXT], structured_content=[{"id": "1"}])

    async with connect(server) as client:
        results = [await client.call_tool(name) for name in ("list_users", "list_all", "list_said")]
    assert [result["structuredContent"] for result in results] == [[{"id": "1"}]] * 3
    assert [result["content"] for result in results] == [
        [{"type": "text", "text": '[{"id": "1"}]'}],
        [{"type": "text", "text": '[{"id": "1"}]'}],
        [{"type": "text", "text": "t"}],
    ]


async def test_an_empty_output_schema_is_listed_and_admits_any_structured_content() -> None:
    """Spec-mandated (server/tools §Output Schema: any JSON Schema 2020-12, and
    ``{}`` admits every JSON value): ``output_schema={}`` is the tool's
    outputSchema, not dropped as if it were absent."""
    server = Server("returns", "1.0.0")

    @server.tool(description="Returns anything.", output_schema={})
    async def anything(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        return [1, "two"]

    async with connect(server) as client:
        (listed,) = (await client.send_request("tools/list", {})).result["tools"]
        result = await client.call_tool("anything")
    assert listed["outputSchema"] == {}
    assert result["structuredContent"] == [1, "two"]
