"""``tools/list`` and ``tools/call`` (tools; the fixture tools the runner's scenarios call)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from presa_trio.demo.core import PNG_BASE64 as PNG
from presa_trio.testing import McpClient
from presa_trio.wire.errors import INVALID_PARAMS
from tests.expect import assert_still_serving, error_of, result_of


async def test_every_tool_has_a_name_description_and_object_schema(client: McpClient) -> None:
    """Runner-scored (tools-list/tools-list, tools-name-format): each tool has a
    description and an inputSchema with ``type: object``; names are 1-128 characters
    of ``[A-Za-z0-9_.-]``."""
    tools = result_of(await client.call("tools/list"))["tools"]
    assert tools
    for tool in tools:
        assert re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", tool["name"])
        assert tool["description"]
        assert tool["inputSchema"]["type"] == "object"


async def test_the_tool_list_has_the_same_order_every_time(client: McpClient) -> None:
    """Runner-scored (tools-list/tools-list-deterministic-order)."""
    names = [
        [t["name"] for t in result_of(await client.call("tools/list"))["tools"]] for _ in range(3)
    ]
    assert names[0] == names[1] == names[2]
    assert names[0][0] == "a_header_probe"


async def test_a_2020_12_input_schema_is_returned_verbatim(client: McpClient) -> None:
    """Runner-scored (json-schema-2020-12, unscored): $schema, $defs, $ref and
    conditionals survive listing unchanged (SEP-2106)."""
    from presa_trio.demo.core import JSON_SCHEMA_2020_12

    tools = result_of(await client.call("tools/list"))["tools"]
    (tool,) = [t for t in tools if t["name"] == "json_schema_2020_12_tool"]
    assert tool["inputSchema"] == JSON_SCHEMA_2020_12


@pytest.mark.parametrize(
    ("tool", "content"),
    [
        (
            "test_simple_text",
            [{"type": "text", "text": "This is a simple text response for testing."}],
        ),
        ("test_image_content", [{"type": "image", "data": PNG, "mimeType": "image/png"}]),
    ],
)
async def test_a_tool_answers_with_content_blocks(
    client: McpClient, tool: str, content: list[dict[str, Any]]
) -> None:
    """Runner-scored (tools-call-simple-text, tools-call-image)."""
    result = result_of(await client.call("tools/call", {"name": tool, "arguments": {}}))
    assert result["content"] == content
    assert "isError" not in result


async def test_audio_and_embedded_resources_have_their_fields(client: McpClient) -> None:
    """Runner-scored (tools-call-audio, tools-call-embedded-resource, tools-call-mixed-content)."""
    audio = result_of(await client.call("tools/call", {"name": "test_audio_content"}))
    assert audio["content"][0]["mimeType"] == "audio/wav"
    embedded = result_of(await client.call("tools/call", {"name": "test_embedded_resource"}))
    assert embedded["content"][0]["resource"] == {
        "uri": "test://embedded-resource",
        "mimeType": "text/plain",
        "text": "This is an embedded resource content.",
    }
    mixed = result_of(await client.call("tools/call", {"name": "test_multiple_content_types"}))
    assert [block["type"] for block in mixed["content"]] == ["text", "image", "resource"]


async def test_an_unknown_tool_is_invalid_params(client: McpClient) -> None:
    """Spec-mandated (server/tools §Error Handling: unknown tool is -32602; spec-notes §5;
    E-13)."""
    error_of(await client.call("tools/call", {"name": "no_such_tool"}), 400, INVALID_PARAMS)
    await assert_still_serving(client)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"name": "test_simple_text", "arguments": []},
        {"name": "test_simple_text", "arguments": "x"},
        {"name": ["test_simple_text"]},
        {"name": {"name": "test_simple_text"}},
        {"name": 5},
    ],
    ids=[
        "no-name",
        "arguments-array",
        "arguments-string",
        "name-array",
        "name-object",
        "name-number",
    ],
)
async def test_malformed_call_params_are_invalid_params(
    client: McpClient, params: dict[str, Any]
) -> None:
    """Spec-mandated (schema $defs.CallToolRequestParams; tools §Calling Tools; E-04)."""
    error_of(await client.call("tools/call", params), 400, INVALID_PARAMS)
    await assert_still_serving(client)


async def test_unknown_call_params_are_ignored(client: McpClient) -> None:
    """Spec-mandated (tools §Calling Tools, schema $defs.CallToolRequestParams:
    unknown keys are ignored)."""
    params = {"name": "test_simple_text", "arguments": {}, "task": {"ttl": 1}, "extra": [1]}
    result_of(await client.call("tools/call", params))
