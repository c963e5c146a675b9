"""``resources/list``, ``resources/templates/list`` and ``resources/read`` (resources)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from presa_trio.demo.core import PNG_BASE64
from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.testing import McpClient, running
from presa_trio.wire import models
from presa_trio.wire.errors import INVALID_PARAMS
from tests.expect import assert_handler_fault, assert_still_serving, error_of, result_of


async def test_resources_are_listed_with_uri_and_name(client: McpClient) -> None:
    """Runner-scored (resources-list/resources-list; caching reads ``resources[0]``)."""
    resources = result_of(await client.call("resources/list"))["resources"]
    assert resources[0]["uri"] == "test://static-text"
    assert all(r["uri"] and r["name"] for r in resources)


async def test_templates_are_listed(client: McpClient) -> None:
    """Spec-mandated (server/resources §Resource Templates)."""
    templates = result_of(await client.call("resources/templates/list"))["resourceTemplates"]
    assert templates[0]["uriTemplate"] == "test://template/{id}/data"


async def test_a_text_resource_reads_as_text(client: McpClient) -> None:
    """Runner-scored (resources-read-text/resources-read-text)."""
    result = result_of(await client.call("resources/read", {"uri": "test://static-text"}))
    assert result["contents"] == [
        {
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }
    ]


async def test_a_binary_resource_reads_as_a_base64_blob(client: McpClient) -> None:
    """Runner-scored (resources-read-binary/resources-read-binary)."""
    result = result_of(await client.call("resources/read", {"uri": "test://static-binary"}))
    (content,) = result["contents"]
    assert content["mimeType"] == "image/png"
    assert base64.b64decode(content["blob"]) == base64.b64decode(PNG_BASE64)


async def test_a_template_match_is_read(client: McpClient) -> None:
    """Runner-scored (resources-templates-read/resources-templates-read); spec-mandated
    (schema.ts ``ResourceTemplate.mimeType``: the MIME type of all resources that
    match the template, so the contents read carry it)."""
    uri = "test://template/123/data"
    (content,) = result_of(await client.call("resources/read", {"uri": uri}))["contents"]
    assert content["uri"] == uri
    assert content["mimeType"] == "application/json"
    assert json.loads(content["text"])["id"] == "123"


def variables_server(uri_template: str) -> Server:
    """One template whose handler answers the variables it was called with, as JSON."""
    server = Server("variables", "1.0.0")

    @server.resource_template(uri_template, name="echo")
    async def echo(ctx: RequestContext, variables: dict[str, str]) -> str:
        return json.dumps(variables, sort_keys=True)

    return server


@pytest.mark.parametrize(
    ("uri_template", "uri", "variables"),
    [
        ("note://{day}/{part}", "note://monday/noon", {"day": "monday", "part": "noon"}),
        ("note://{day.part}", "note://monday", {"day.part": "monday"}),
        ("note://{2nd}", "note://tuesday", {"2nd": "tuesday"}),
        ("note://{day}/{day}", "note://monday/monday", {"day": "monday"}),
        ("note://{day}/{day}", "note://monday/friday", None),
        ("note://today", "note://today", {}),
    ],
    ids=["two", "dotted-name", "digit-first", "twice-same", "twice-different", "no-variable"],
)
async def test_a_template_matches_every_level_one_variable_name(
    uri_template: str, uri: str, variables: dict[str, str] | None
) -> None:
    """Spec-mandated (server/resources §Resource Templates: RFC 6570 templates; RFC 6570
    §2.3 varname: letters, digits, ``_``, dots between): each name is matched and
    given to the handler; a name used twice matches the same text both times; a
    template without an expression (RFC 6570 §1.1: a template may hold literals only)
    matches its own text, with no variables."""
    async with running(McpApp.for_server(variables_server(uri_template))) as client:
        response = await client.call("resources/read", {"uri": uri})
    if variables is None:
        error_of(response, 400, INVALID_PARAMS)
    else:
        (content,) = result_of(response)["contents"]
        assert json.loads(content["text"]) == variables


@pytest.mark.parametrize(
    "uri",
    [
        "test://nonexistent-resource-for-conformance-testing",
        "test://template//data",
        "test://template/1/2/data",
    ],
)
async def test_an_unknown_resource_is_invalid_params_with_its_uri(
    client: McpClient, uri: str
) -> None:
    """Runner-scored (sep-2164-resource-not-found/sep-2164-no-empty-contents,
    sep-2164-error-code, sep-2164-data-uri; E-15): -32602 with ``data.uri``, never a
    result with empty contents (server/resources §Error Handling)."""
    error = error_of(await client.call("resources/read", {"uri": uri}), 400, INVALID_PARAMS)
    assert error["data"] == {"uri": uri}
    await assert_still_serving(client)


@pytest.mark.parametrize(
    "uri",
    [
        "test://template/a b/data",
        "test://template/a\r\nb/data",
        "test://template/a\x00b/data",
        "test://template/%/data",
        "test://template/%zz/data",
        "test://template/\u00e9/data",
        "test://template/../data",
        "test://template/./data",
        "test://template/%2E%2E/data",
        "test://template/.%2e/data",
        "test://template/%2E/data",
    ],
    ids=[
        "space",
        "crlf",
        "nul",
        "lone-percent",
        "bad-percent",
        "non-ascii",
        "dot-dot",
        "dot",
        "encoded-dot-dot",
        "half-encoded-dot-dot",
        "encoded-dot",
    ],
)
async def test_a_template_variable_matches_only_a_path_segment_of_a_uri(
    client: McpClient, uri: str
) -> None:
    """Spec-mandated (resources §Security Considerations: "Servers **MUST** validate all
    resource URIs", "**MUST** sanitize file paths to prevent directory traversal";
    schema ``$defs.ReadResourceRequestParams``: ``uri`` is ``format: uri``; RFC 3986
    §3.3 ``segment``, §5.2.4 dot segments): text no URI can hold, or a ``.`` or ``..``
    segment, is no value of a ``{name}``: the URI matches no template, -32602 with its
    URI, and no handler sees it or echoes it in ``contents``. A dot written as ``%2E``
    is the same dot (RFC 3986 §2.3: a percent-encoded unreserved character is
    equivalent to the character), so ``%2E%2E`` is a ``..`` segment too."""
    error = error_of(await client.call("resources/read", {"uri": uri}), 400, INVALID_PARAMS)
    assert error["data"] == {"uri": uri}


async def test_a_long_uri_against_adjacent_variables_is_answered_not_found() -> None:
    """Spec-mandated (resources §Error Handling: -32602 with ``data.uri``; §Security
    Considerations: validate all resource URIs): a URI that no split fits, against
    variables only a ``-`` apart, is refused without trying each split, which would
    hold the server for hours (presa-defined: tests/server/test_template_match.py)."""
    uri = "note://" + "-" * 20_000 + "/"
    async with running(McpApp.for_server(variables_server("note://{y}-{m}-{d}"))) as client:
        response = await client.call("resources/read", {"uri": uri})
        assert error_of(response, 400, INVALID_PARAMS)["data"] == {"uri": uri}
        await assert_still_serving(client)


@pytest.mark.parametrize(
    ("uri", "value"),
    [
        ("test://template/a%20b/data", "a%20b"),
        ("test://template/%C3%A9/data", "%C3%A9"),
        ("test://template/a:b@c!$&'()*+,;=-._~/data", "a:b@c!$&'()*+,;=-._~"),
        ("test://template/.../data", "..."),
    ],
    ids=["percent-encoded-space", "percent-encoded-utf8", "every-pchar", "three-dots"],
)
async def test_a_template_variable_matches_any_path_segment(
    client: McpClient, uri: str, value: str
) -> None:
    """Spec-mandated (server/resources §Resource Templates: RFC 6570; RFC 3986 §3.3
    ``pchar``): every character a path segment may hold, percent-encodings
    included, reaches the handler as sent."""
    (content,) = result_of(await client.call("resources/read", {"uri": uri}))["contents"]
    assert content["uri"] == uri
    assert json.loads(content["text"])["id"] == value


@pytest.mark.parametrize("params", [{}, {"uri": 5}, {"uri": None}])
async def test_a_read_without_a_string_uri_is_invalid_params(
    client: McpClient, params: dict[str, object]
) -> None:
    """Spec-mandated (schema $defs.ReadResourceRequestParams: uri is a required string)."""
    error_of(await client.call("resources/read", params), 400, INVALID_PARAMS)


@pytest.mark.parametrize(
    "output",
    [
        None,
        {"text": "x"},
        5,
        ["text"],
        [models.TextContent("a content block")],
        [models.TextResourceContents("note://a", 5)],  # type: ignore[arg-type]
        [models.TextResourceContents("note://a", None)],  # type: ignore[arg-type]
        [models.BlobResourceContents("note://a", b"raw bytes, not base64")],  # type: ignore[arg-type]
        [models.TextResourceContents("note://a", "t", mime_type=5)],  # type: ignore[arg-type]
        [models.BlobResourceContents("note://a", "raw text, not base64")],
        [models.BlobResourceContents("note://a", "AAA")],
    ],
    ids=[
        "none",
        "dict",
        "number",
        "strings",
        "content-blocks",
        "number-text",
        "text-none",
        "bytes-blob",
        "mime-type-number",
        "blob-not-base64",
        "blob-unpadded",
    ],
)
async def test_a_handler_returning_no_resource_contents_is_an_internal_error(
    caplog: pytest.LogCaptureFixture, output: Any
) -> None:
    """Spec-mandated (schema ``$defs.ReadResourceResult``; resources §Error Handling:
    -32603 for internal errors; E-05): what a handler returns becomes valid
    ``contents`` or a generic -32603, never a result the schema refuses; the log
    names the resource."""
    server = Server("resources", "1.0.0")

    @server.resource("test://broken", name="broken")
    async def broken(ctx: RequestContext) -> Any:
        return output

    async with running(McpApp.for_server(server)) as client:
        await assert_handler_fault(
            client,
            caplog,
            "resources/read",
            {"uri": "test://broken"},
            "resource test://broken returned",
        )
