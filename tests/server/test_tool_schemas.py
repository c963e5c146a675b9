"""Tool schemas: compiled at registration, arguments and structured results checked per call."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.testing import McpClient, running
from presa_trio.wire import models
from presa_trio.wire.errors import INTERNAL_ERROR
from presa_trio.wire.schemas import SchemaError
from tests.expect import assert_still_serving, error_of, incident_of, result_of

AGE = {
    "type": "object",
    "properties": {
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "a/b~c": {"type": "boolean"},
    },
    "required": ["age"],
    "additionalProperties": False,
}
POINT = {
    "type": "object",
    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
    "required": ["x", "y"],
}


def build(calls: list[dict[str, Any]]) -> Server:
    server = Server("schemas", "1.0.0")

    @server.tool(description="Records its arguments", input_schema=AGE)
    async def record(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        calls.append(arguments)
        return "recorded"

    @server.tool(
        description="Returns the point it is given, or a broken one",
        input_schema={"type": "object"},
        output_schema=POINT,
    )
    async def point(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        if arguments.get("fail"):
            return models.CallToolResult([models.TextContent("no point")], is_error=True)
        if arguments.get("unstructured"):
            return "just text"
        return models.CallToolResult([models.TextContent("a point")], arguments.get("point"))

    return server


@pytest.fixture
def calls() -> list[dict[str, Any]]:
    return []


@pytest.fixture
async def client(calls: list[dict[str, Any]]) -> AsyncIterator[McpClient]:
    async with running(McpApp.for_server(build(calls))) as opened:
        yield opened


def refusal_text(result: dict[str, Any]) -> str:
    assert result["isError"] is True
    assert result["resultType"] == "complete"
    (block,) = result["content"]
    text: str = block["text"]
    return text


@pytest.mark.parametrize(
    ("arguments", "lines"),
    [
        ({}, ['- (root): "age" is a required property (rule /required)']),
        (
            {"age": -1, "tags": ["a", 2]},
            [
                "- /age: -1 is less than the minimum of 0 (rule /properties/age/minimum)",
                '- /tags/1: 2 is not of type "string" (rule /properties/tags/items/type)',
            ],
        ),
        (
            {"age": 1, "colour": "red"},
            [
                "- (root): Additional properties are not allowed ('colour' was unexpected)"
                " (rule /additionalProperties)"
            ],
        ),
        (
            {"age": 1, "a/b~c": "yes"},
            ['- /a~1b~0c: "yes" is not of type "boolean" (rule /properties/a~1b~0c/type)'],
        ),
    ],
    ids=["missing", "two-failures", "extra-property", "pointer-escapes"],
)
async def test_invalid_arguments_are_an_error_result_naming_path_and_rule(
    client: McpClient, calls: list[dict[str, Any]], arguments: dict[str, Any], lines: list[str]
) -> None:
    """Spec-mandated (server/tools §Error Handling: input validation errors are tool
    execution errors with ``isError``; §Security Considerations: validate all tool
    inputs; E-18): the handler never runs, and every failure names where and which
    rule."""
    result = result_of(await client.call("tools/call", {"name": "record", "arguments": arguments}))
    assert refusal_text(result).splitlines() == ["Invalid arguments for tool 'record':", *lines]
    assert calls == []


async def test_arguments_failing_many_times_name_the_first_ten_failures(
    client: McpClient, calls: list[dict[str, Any]]
) -> None:
    """presa-defined (server/tools §Error Handling leaves the wording to the server;
    ``MAX_VIOLATIONS`` in wire/schemas.py): a value breaking its schema a dozen times
    is refused naming the first ten failures, so the result the model reads stays
    short however bad the arguments."""
    arguments = {"age": 1, "tags": list(range(12))}
    result = result_of(await client.call("tools/call", {"name": "record", "arguments": arguments}))
    assert refusal_text(result).splitlines()[1:] == [
        f'- /tags/{index}: {index} is not of type "string" (rule /properties/tags/items/type)'
        for index in range(10)
    ]
    assert calls == []


async def test_arguments_failing_too_deep_to_explain_are_still_an_error_result(
    client: McpClient, calls: list[dict[str, Any]]
) -> None:
    """Spec-mandated (server/tools §Error Handling; E-18): a failing value nested
    deeper than the validator can copy into its report is refused like any other,
    never a -32603 for the client's input."""
    nested: Any = []
    for _ in range(300):
        nested = [nested]
    response = await client.call(
        "tools/call", {"name": "record", "arguments": {"age": 1, "tags": nested}}
    )
    assert refusal_text(result_of(response)).splitlines() == [
        "Invalid arguments for tool 'record':",
        "- (root): fails the schema, nested too deeply to say where",
    ]
    assert calls == []


async def test_valid_arguments_reach_the_handler_unchanged(
    client: McpClient, calls: list[dict[str, Any]]
) -> None:
    """Spec-mandated (E-18): arguments that fit the schema are the handler's."""
    arguments = {"age": 3, "tags": ["x"]}
    result = result_of(await client.call("tools/call", {"name": "record", "arguments": arguments}))
    assert result["content"] == [{"type": "text", "text": "recorded"}]
    assert calls == [arguments]


async def test_the_2020_12_fixture_schema_is_enforced(app: McpApp) -> None:
    """Spec-mandated (basic/index §JSON Schema Usage: 2020-12 by default; E-18):
    ``$ref`` into ``$defs``, ``if``/``then``/``else`` and ``allOf``/``anyOf`` of the
    conformance fixture's schema all decide."""

    async def call(fixture: McpClient, arguments: dict[str, Any]) -> dict[str, Any]:
        params = {"name": "json_schema_2020_12_tool", "arguments": arguments}
        return result_of(await fixture.call("tools/call", params))

    async with running(app) as fixture:
        ok = await call(fixture, {"name": "Ada", "contactMethod": "phone", "phone": "1"})
        wants_phone = await call(fixture, {"contactMethod": "phone", "email": "a@b"})
        bad_city = await call(fixture, {"email": "a@b", "address": {"city": 7}})
    assert ok["content"] == [{"type": "text", "text": "Schema accepted."}]
    assert '"phone" is a required property (rule /then/required)' in refusal_text(wants_phone)
    assert "- /address/city: 7 is not of type" in refusal_text(bad_city)
    assert "(rule /$defs/address/properties/city/type)" in refusal_text(bad_city)


async def test_a_conforming_structured_result_is_answered(client: McpClient) -> None:
    """Spec-mandated (server/tools §Output Schema; E-19)."""
    params = {"name": "point", "arguments": {"point": {"x": 1, "y": 2}}}
    result = result_of(await client.call("tools/call", params))
    assert result["structuredContent"] == {"x": 1, "y": 2}


@pytest.mark.parametrize(
    ("arguments", "logged"),
    [
        ({"point": {"x": 1}}, '"y" is a required property'),
        ({"point": {"x": 1, "y": "up"}}, '/y: "up" is not of type "number"'),
        ({"unstructured": True}, "returned no structuredContent"),
    ],
    ids=["missing-field", "wrong-type", "absent"],
)
async def test_a_structured_result_breaking_the_output_schema_is_an_internal_error(
    client: McpClient, caplog: pytest.LogCaptureFixture, arguments: dict[str, Any], logged: str
) -> None:
    """Spec-mandated (server/tools §Output Schema: servers MUST provide structured
    results that conform; E-19): the server's own bug is -32603 with a generic
    message; the detail is in the log only."""
    with caplog.at_level(logging.ERROR):
        response = await client.call("tools/call", {"name": "point", "arguments": arguments})
    incident_of(error_of(response, 500, INTERNAL_ERROR), caplog.text)
    assert logged in caplog.text
    await assert_still_serving(client)


async def test_an_error_result_is_not_checked_against_the_output_schema(
    client: McpClient,
) -> None:
    """Spec-mandated (server/tools §Error Handling, §Output Schema; E-19): an
    ``isError`` result reports a failure, not the tool's output."""
    result = result_of(await client.call("tools/call", {"name": "point", "arguments": {"fail": 1}}))
    assert result["isError"] is True


def embedded(dialect: str) -> dict[str, Any]:
    """An object schema whose property ``a`` is an embedded schema resource in ``dialect``."""
    resource = {"$id": "https://example.com/a", "$schema": dialect, "type": "string"}
    return {"type": "object", "properties": {"a": resource}}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"input_schema": {"type": "array"}}, 'must be an object schema with "type": "object"'),
        (
            {"input_schema": {"type": "object", "properties": {"a": {"type": "nope"}}}},
            "inputSchema is not a usable JSON Schema",
        ),
        (
            {"input_schema": {"type": "object", "properties": {"a": {"pattern": "("}}}},
            "inputSchema is not a usable JSON Schema",
        ),
        (
            {"input_schema": {"$schema": "https://example.com/my-dialect", "type": "object"}},
            "Unknown meta-schema",
        ),
        (
            {"input_schema": {"type": "object", "$ref": "https://example.com/s.json"}},
            "presa does not fetch referenced schemas (https://example.com/s.json)",
        ),
        (
            {"input_schema": {"type": "object", "$ref": "#/$defs/missing"}},
            "'/$defs/missing' does not exist",
        ),
        ({"output_schema": {"type": 12}}, "outputSchema is not a usable JSON Schema"),
        (
            {"input_schema": embedded("http://json-schema.org/draft-03/schema#")},
            "declares the dialect 'http://json-schema.org/draft-03/schema#'",
        ),
        (
            {"input_schema": embedded("http://json-schema.org/draft-07/schema#")},
            "declares the dialect 'http://json-schema.org/draft-07/schema#'",
        ),
        (
            {
                "output_schema": {
                    "type": "object",
                    "anyOf": [{"$schema": "https://example.com/my-dialect"}],
                }
            },
            "outputSchema is not a usable JSON Schema: a subschema declares the dialect",
        ),
    ],
    ids=[
        "not-object",
        "bad-type",
        "bad-regex",
        "unknown-dialect",
        "remote-ref",
        "dangling-ref",
        "bad-output",
        "embedded-unknown-dialect",
        "embedded-other-dialect",
        "subschema-dialect",
    ],
)
def test_an_unusable_schema_is_refused_at_registration(
    options: dict[str, Any], message: str
) -> None:
    """Spec-mandated (basic/index §JSON Schema Usage: schemas MUST be valid in their
    dialect, unsupported dialects are an error, network ``$ref`` MUST NOT be
    dereferenced, an unresolved ``$ref`` SHOULD be rejected; E-20): the developer
    learns it when the server is built, and the tool is not registered. A subschema
    that declares a dialect other than its root's is refused too: its values would
    otherwise be checked by the root's dialect, not the one it declares."""
    server = Server("refusing", "1.0.0")

    async def handler(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return "never"

    with pytest.raises(SchemaError, match="tool 'broken'") as refused:
        server.tool("broken", description="x", **options)(handler)
    assert message in str(refused.value)
    assert server.tools == {}


def header_schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            header_schema(celsius={"type": "number", "x-mcp-header": "Celsius"}),
            "x-mcp-header 'Celsius' is on a parameter of type 'number'",
        ),
        (
            header_schema(v={"type": "array", "items": {"type": "string", "x-mcp-header": "I"}}),
            "x-mcp-header 'I' is not reached from the root through properties",
        ),
        (
            header_schema(
                a={"type": "string", "x-mcp-header": "Region"},
                b={"type": "string", "x-mcp-header": "region"},
            ),
            "x-mcp-header 'region' is not unique (ignoring case)",
        ),
        (
            header_schema(
                a={"type": "string", "x-mcp-header": "region"},
                b={"type": "string", "x-mcp-header": "REGION"},
            ),
            "x-mcp-header 'REGION' is not unique (ignoring case)",
        ),
        (
            {
                "type": "object",
                "patternProperties": {"^v": {"type": "string", "x-mcp-header": "P"}},
            },
            "x-mcp-header 'P' is not reached from the root through properties",
        ),
        (
            header_schema(v={"type": "string", "x-mcp-header": "Région"}),
            "x-mcp-header 'Région' is not an HTTP field-name token",
        ),
        (
            header_schema(v={"type": ["string", "null"], "x-mcp-header": "V"}),
            "x-mcp-header 'V' is on a parameter of type ['string', 'null']",
        ),
    ],
    ids=[
        "number",
        "under-items",
        "repeated",
        "repeated-upper-case",
        "under-pattern-properties",
        "not-a-token",
        "type-list",
    ],
)
def test_an_invalid_x_mcp_header_is_refused_at_registration(
    schema: dict[str, Any], message: str
) -> None:
    """Spec-mandated (server/tools §x-mcp-header: the annotation MUST be a unique
    field-name token on an integer, string or boolean parameter reached through
    ``properties`` alone; clients over Streamable HTTP MUST leave such a tool out of
    ``tools/list``, so no conforming client could call it; H-34): the developer learns
    it when the server is built, and the tool is not registered."""
    server = Server("refusing", "1.0.0")

    async def handler(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return "never"

    with pytest.raises(SchemaError, match="tool 'broken'") as refused:
        server.tool("broken", description="x", input_schema=schema)(handler)
    assert message in str(refused.value)
    assert server.tools == {}


def test_other_dialects_and_local_refs_are_accepted() -> None:
    """Spec-mandated (basic/index §Schema Dialect: an explicit dialect MAY be named;
    E-20): draft-07, a ``$ref`` to an ``$anchor`` of the schema, and a schema whose
    only ``$schema`` below the root names the root's own dialect compile."""
    server = Server("dialects", "1.0.0")

    async def handler(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return "ok"

    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
    anchored = {
        "type": "object",
        "$defs": {"n": {"$anchor": "num", "type": "number"}},
        "properties": {"n": {"$ref": "#num"}},
    }
    # A property named "$schema", a "$schema" inside a value, and an embedded
    # resource in its root's own dialect name no other dialect.
    same = {
        "type": "object",
        "properties": {
            "$schema": {"type": "string", "const": {"$schema": "x"}},
            "a": embedded("https://json-schema.org/draft/2020-12/schema")["properties"]["a"],
        },
        "examples": [{"$schema": "x"}],
    }
    server.tool("old", description="x", input_schema=draft7)(handler)
    server.tool("anchored", description="x", input_schema=anchored)(handler)
    # The dialect's URI with its empty fragment is the same dialect.
    fragment = embedded("https://json-schema.org/draft/2020-12/schema#")
    server.tool("same", description="x", input_schema=same)(handler)
    server.tool("fragment", description="x", input_schema=fragment)(handler)
    assert set(server.tools) == {"old", "anchored", "same", "fragment"}
