"""Mirrored headers: ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*`` and the base64 form.

Wire §13.5 and §13.6 through the ASGI app: a header that is missing,
repeated, malformed or unlike the body is 400 -32020; whitespace around a
value is trimmed; values are case-sensitive; ``=?base64?…?=`` is decoded
before comparing, and only that exact form is.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.testing import McpClient, headers_for, request, running
from presa_trio.wire.errors import HEADER_MISMATCH, INVALID_PARAMS
from tests.expect import assert_still_serving, error_of, result_of

DEPLOY_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry_run": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "target": {
            "type": "object",
            "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
        },
    },
}


def header_server() -> Server:
    server = Server("headers", "1.0.0")

    @server.tool(description="Echoes its arguments.", input_schema=DEPLOY_SCHEMA)
    async def deploy(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return json.dumps(arguments, sort_keys=True)

    @server.prompt("café", description="A prompt whose name is not ASCII.")
    async def cafe(ctx: RequestContext) -> str:
        return "served"

    return server


@pytest.fixture
async def headers_client() -> AsyncIterator[McpClient]:
    async with running(McpApp.for_server(header_server())) as client:
        yield client


def sentinel(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def deploy(arguments: dict[str, Any]) -> dict[str, Any]:
    return request("tools/call", {"name": "deploy", "arguments": arguments})


async def post_with(
    client: McpClient, message: dict[str, Any], extra: list[tuple[str, str]], **drop: bool
) -> Any:
    """Post ``message`` with its correct headers, minus ``drop``, plus ``extra`` pairs."""
    headers = [(k, v) for k, v in headers_for(message).items() if not drop.get(k.replace("-", "_"))]
    return await client.post(message, headers + extra)


# --- Mcp-Method ------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [None, "prompts/list", "TOOLS/LIST", "tools/list/", ""],
    ids=["missing", "other-method", "other-case", "trailing-slash", "empty"],
)
async def test_an_mcp_method_unlike_the_body_is_header_mismatch(
    client: McpClient, value: str | None
) -> None:
    """Runner-scored (http-header-validation/sep-2243-server-reject-invalid-headers,
    unscored; H-16, H-21, E-06): a missing, different or differently-cased Mcp-Method is 400 -32020
    (streamable-http §Server Validation)."""
    message = request("tools/list")
    extra = [] if value is None else [("mcp-method", value)]
    response = await post_with(client, message, extra, mcp_method=True)
    error_of(response, 400, HEADER_MISMATCH)
    await assert_still_serving(client)


async def test_a_repeated_mcp_method_is_header_mismatch(client: McpClient) -> None:
    """Spec-mandated (streamable-http §Server Validation: duplicated is -32020; H-16, H-23)."""
    message = request("tools/list")
    error_of(await post_with(client, message, [("mcp-method", "tools/list")]), 400, HEADER_MISMATCH)


async def test_whitespace_around_a_header_value_is_trimmed(client: McpClient) -> None:
    """Runner-scored (http-header-validation/sep-2243-server-accepts-whitespace-header-value,
    unscored; H-22): ``Mcp-Name: "  <name>  "`` is accepted (RFC 9110 §5.5)."""
    message = request("tools/call", {"name": "a_header_probe", "arguments": {}})
    response = await post_with(
        client,
        message,
        [("mcp-method", "  tools/call "), ("mcp-name", "  a_header_probe  ")],
        mcp_method=True,
        mcp_name=True,
    )
    assert result_of(response)["content"] == [{"type": "text", "text": "ok"}]


@pytest.mark.parametrize(
    ("header", "value"),
    [("mcp-method", sentinel("tools/list")), ("mcp-protocol-version", sentinel("2026-07-28"))],
    ids=["mcp-method", "mcp-protocol-version"],
)
async def test_only_name_and_param_headers_are_base64_decoded(
    client: McpClient, header: str, value: str
) -> None:
    """Spec-mandated (streamable-http §Server Validation: "headers that permit the Base64
    sentinel encoding (``Mcp-Name`` and ``Mcp-Param-{Name}``)"; §Value Encoding; H-16,
    H-21): ``Mcp-Method`` and ``MCP-Protocol-Version`` are compared as sent, so a
    sentinel there is a value unlike the body, 400 -32020; a proxy routing on the
    header and the server reading the body must never see two different methods."""
    message = request("tools/list")
    response = await post_with(
        client, message, [(header, value)], **{header.replace("-", "_"): True}
    )
    error_of(response, 400, HEADER_MISMATCH)
    await assert_still_serving(client)


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("mcp-method", "tools/call\xa0"),
        ("mcp-method", "\x85tools/call"),
        ("mcp-name", "a_header_probe\xa0"),
        ("mcp-protocol-version", "2026-07-28\xa0"),
    ],
    ids=["method-nbsp", "method-nel", "name-nbsp", "version-nbsp"],
)
async def test_only_spaces_and_tabs_are_trimmed_from_a_header_value(
    client: McpClient, header: str, value: str
) -> None:
    """Spec-mandated (streamable-http §Server Validation: "A header value contains
    invalid characters" is 400 -32020; RFC 9110 §5.6.3: optional whitespace is space and
    tab; H-16, H-17, H-26): a value that ends in a latin-1 no-break space or next-line
    byte is not the body's value with whitespace around it, it is malformed."""
    message = request("tools/call", {"name": "a_header_probe", "arguments": {}})
    response = await post_with(
        client, message, [(header, value)], **{header.replace("-", "_"): True}
    )
    error_of(response, 400, HEADER_MISMATCH)
    await assert_still_serving(client)


# --- Mcp-Name ----------------------------------------------------------------------


NAMED = [
    request("tools/call", {"name": "a_header_probe", "arguments": {}}),
    request("prompts/get", {"name": "test_simple_prompt"}),
    request("resources/read", {"uri": "test://static-text"}),
]


@pytest.mark.parametrize("message", NAMED, ids=lambda m: m["method"])
@pytest.mark.parametrize("value", [None, "wrong_name", ""], ids=["missing", "wrong", "empty"])
async def test_an_mcp_name_unlike_the_body_is_header_mismatch(
    client: McpClient, message: dict[str, Any], value: str | None
) -> None:
    """Spec-mandated (streamable-http §Standard Request Headers: Mcp-Name is required
    on tools/call, prompts/get and resources/read; streamable-http §Server Validation: a
    missing Mcp-Name while the body has the value is a mismatch; H-17)."""
    extra = [] if value is None else [("mcp-name", value)]
    error_of(await post_with(client, message, extra, mcp_name=True), 400, HEADER_MISMATCH)
    await assert_still_serving(client)


@pytest.mark.parametrize("message", NAMED, ids=lambda m: m["method"])
async def test_a_matching_mcp_name_is_accepted(client: McpClient, message: dict[str, Any]) -> None:
    """Spec-mandated (streamable-http §Server Validation; H-17): a matching header passes."""
    result_of(await client.post(message))


async def test_mcp_name_is_ignored_on_other_methods(client: McpClient) -> None:
    """Spec-mandated (streamable-http §Standard Request Headers: ignore Mcp-Name on other
    methods; H-18)."""
    message = request("tools/list")
    result_of(await post_with(client, message, [("mcp-name", "anything")]))


async def test_a_non_ascii_name_travels_base64_encoded(headers_client: McpClient) -> None:
    """Spec-mandated (streamable-http §Value Encoding: a name outside the safe set is
    carried as ``=?base64?…?=`` and servers MUST decode it before comparing; H-24)."""
    message = request("prompts/get", {"name": "café"})
    response = await post_with(
        headers_client, message, [("mcp-name", sentinel("café"))], mcp_name=True
    )
    assert result_of(response)["messages"][0]["content"]["text"] == "served"
    other = await post_with(
        headers_client, message, [("mcp-name", sentinel("cafe"))], mcp_name=True
    )
    error_of(other, 400, HEADER_MISMATCH)


async def test_a_name_that_is_not_a_string_is_invalid_params(client: McpClient) -> None:
    """presa-defined (spec-notes §12: with no string value in the body the header is not
    compared and the handler answers -32602; H-33)."""
    for name in (["a_header_probe"], {"n": 1}, 5, None):
        message = request("tools/call", {"name": name, "arguments": {}})
        error_of(await client.post(message), 400, INVALID_PARAMS)
    await assert_still_serving(client)


# --- Mcp-Param-* -----------------------------------------------------------------------


async def test_param_headers_mirror_present_arguments(headers_client: McpClient) -> None:
    """Spec-mandated (streamable-http §x-mcp-header, §Value Encoding; H-19, H-20): strings as they
    are, integers in decimal, booleans lowercase, nested properties by path."""
    message = deploy({"region": "us-west1", "count": 42, "dry_run": False, "target": {"zone": "b"}})
    extra = [
        ("mcp-param-region", "us-west1"),
        ("mcp-param-count", "42"),
        ("mcp-param-dry-run", "false"),
        ("mcp-param-zone", "b"),
    ]
    result_of(await post_with(headers_client, message, extra))


@pytest.mark.parametrize("header", ["42", "42.0", "4.2e1", " 42 "])
async def test_integer_params_compare_numerically(headers_client: McpClient, header: str) -> None:
    """Spec-mandated (streamable-http §Server Validation: integers compare numerically,
    42.0 = 42; H-20)."""
    result_of(await post_with(headers_client, deploy({"count": 42}), [("mcp-param-count", header)]))


@pytest.mark.parametrize(("value", "header"), [(0.1, "0.1"), (2.675, "2.675"), (0.1, "1e-1")])
async def test_a_number_that_is_no_integer_agrees_by_its_decimal_and_is_the_body_s_fault(
    headers_client: McpClient, value: float, header: str
) -> None:
    """Spec-mandated (streamable-http §Server Validation: header and body compare
    numerically; spec-notes §10: the mirrored headers, rung 10, before the handler's
    checks): a fractional body value agrees with the decimal it was written as, not
    with the binary float it parses to, so the answer is the body's fault (no integer:
    a tool execution error, server/tools §Error Handling), never -32020."""
    response = await post_with(
        headers_client, deploy({"count": value}), [("mcp-param-count", header)]
    )
    result = result_of(response)
    assert result["isError"] is True
    assert 'is not of type "integer"' in result["content"][0]["text"]
    await assert_still_serving(headers_client)


@pytest.mark.parametrize(
    "header",
    [
        "43",
        "0x2A",
        "4_2",
        "forty-two",
        "NaN",
        "",
        "42abc",
        "1e9999999999999999999999",
        "1e-9999999999999999999999",
    ],
)
async def test_an_integer_param_with_another_value_is_header_mismatch(
    headers_client: McpClient, header: str
) -> None:
    """Spec-mandated (streamable-http §Server Validation: header and body MUST match; H-20):
    a number whose exponent no decimal can hold matches no body value, and is a mismatch
    like any other, not a fault of the server."""
    response = await post_with(headers_client, deploy({"count": 42}), [("mcp-param-count", header)])
    error_of(response, 400, HEADER_MISMATCH)
    await assert_still_serving(headers_client)


@pytest.mark.parametrize(("value", "header"), [(True, "false"), (True, "True"), (False, "0")])
async def test_a_boolean_param_is_lowercase_true_or_false(
    headers_client: McpClient, value: bool, header: str
) -> None:
    """Spec-mandated (streamable-http §Value Encoding: booleans as lowercase
    ``true``/``false``; H-20)."""
    response = await post_with(
        headers_client, deploy({"dry_run": value}), [("mcp-param-dry-run", header)]
    )
    error_of(response, 400, HEADER_MISMATCH)


async def test_a_missing_param_header_is_header_mismatch(headers_client: McpClient) -> None:
    """Runner-scored (http-custom-header-server-validation, unscored: a missing
    Mcp-Param-* while the body has the value rejects; H-19)."""
    message = deploy({"region": "eu"})
    without = headers_for(message)  # Mcp-Method and Mcp-Name, no Mcp-Param-*
    error_of(await headers_client.post(message, without), 400, HEADER_MISMATCH)
    result_of(await headers_client.post(message))  # the client's own headers include it


@pytest.mark.parametrize("arguments", [{}, {"region": None}], ids=["absent", "null"])
async def test_a_param_header_for_an_absent_argument_is_header_mismatch(
    headers_client: McpClient, arguments: dict[str, Any]
) -> None:
    """Spec-mandated (streamable-http §Server Behavior for Custom Headers: the header is
    present exactly when the argument is present and non-null; H-19)."""
    response = await post_with(headers_client, deploy(arguments), [("mcp-param-region", "eu")])
    error_of(response, 400, HEADER_MISMATCH)
    result_of(await headers_client.post(deploy(arguments)))


async def test_a_repeated_param_header_is_header_mismatch(headers_client: McpClient) -> None:
    """Spec-mandated (streamable-http §Server Validation: duplicated is -32020; H-23)."""
    extra = [("mcp-param-region", "eu"), ("mcp-param-region", "eu")]
    error_of(await post_with(headers_client, deploy({"region": "eu"}), extra), 400, HEADER_MISMATCH)


@pytest.mark.parametrize(
    "value", [{"nested": "object"}, ["a", "list"], 10**400], ids=["object", "array", "huge-int"]
)
async def test_a_header_param_holding_a_non_header_value_is_refused_not_a_crash(
    headers_client: McpClient, value: Any
) -> None:
    """Spec-mandated (streamable-http §x-mcp-header: only primitive parameters are
    mirrored; §Server Validation: mismatches are 400 -32020; H-20): an argument no header
    can carry is a mismatch, and the server keeps serving."""
    for header in ("1", "x", '{"nested":"object"}', '["a","list"]'):
        response = await post_with(
            headers_client, deploy({"count": value}), [("mcp-param-count", header)]
        )
        error_of(response, 400, HEADER_MISMATCH)
    await assert_still_serving(headers_client)


async def test_a_huge_integer_matches_its_decimal_header(headers_client: McpClient) -> None:
    """Spec-mandated (streamable-http §Value Encoding: integers in decimal; H-20)."""
    big = 10**400
    response = await post_with(
        headers_client, deploy({"count": big}), [("mcp-param-count", str(big))]
    )
    result_of(response)


@pytest.mark.parametrize("raw", ["é", "bell\x07", "del\x7f"], ids=["latin-1", "control", "delete"])
async def test_a_plain_header_value_outside_visible_ascii_is_refused(
    headers_client: McpClient, raw: str
) -> None:
    """Spec-mandated (streamable-http §Server Behavior for Custom Headers: servers MUST
    reject a recognized Mcp-Param header that contains invalid characters; such
    values travel base64-encoded; H-26)."""
    message = deploy({"region": raw})
    error_of(
        await post_with(headers_client, message, [("mcp-param-region", raw)]), 400, HEADER_MISMATCH
    )
    result_of(await post_with(headers_client, message, [("mcp-param-region", sentinel(raw))]))


# --- the base64 sentinel (streamable-http §Value Encoding) ----------------------------------


@pytest.mark.parametrize(
    ("value", "header"),
    [
        ("Hello", "=?base64?SGVsbG8=?="),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("", "=?base64??="),
    ],
    ids=["hello", "non-ascii", "padded", "newline", "sentinel-lookalike", "empty"],
)
async def test_a_base64_header_is_decoded_before_comparing(
    headers_client: McpClient, value: str, header: str
) -> None:
    """Spec-mandated (streamable-http §Value Encoding, its examples table; runner
    http-custom-header-server-validation, unscored; H-24)."""
    message = deploy({"region": value})
    result_of(await post_with(headers_client, message, [("mcp-param-region", header)]))


@pytest.mark.parametrize(
    "header",
    [
        "=?base64?SGVsbG8?=",
        "=?base64?SGVs!!!bG8=?=",
        "=?base64?SGVsbG9=?=",
        "=?base64?/w==?=",
        "=?base64?SGVs bG8=?=",
    ],
    ids=["no-padding", "bad-alphabet", "non-canonical", "not-utf8", "inner-space"],
)
async def test_a_malformed_base64_header_is_header_mismatch(
    headers_client: McpClient, header: str
) -> None:
    """Spec-mandated (streamable-http §Value Encoding; SEP-2243 §Base64 Decoding: RFC 4648
    alphabet, padding, canonical, UTF-8; else -32020; H-25). Runner probes (unscored): no
    padding and ``!!!`` reject."""
    message = deploy({"region": "Hello"})
    error_of(
        await post_with(headers_client, message, [("mcp-param-region", header)]),
        400,
        HEADER_MISMATCH,
    )


@pytest.mark.parametrize("literal", ["=?BASE64?SGVsbG8=?=", "SGVsbG8=", "=?base64?SGVsbG8="])
async def test_only_the_exact_sentinel_is_decoded(headers_client: McpClient, literal: str) -> None:
    """Spec-mandated (streamable-http §Value Encoding: the markers are case-sensitive
    and MUST appear exactly; H-24): anything else is a literal value."""
    as_literal = deploy({"region": literal})
    result_of(await post_with(headers_client, as_literal, [("mcp-param-region", literal)]))
    as_hello = deploy({"region": "Hello"})
    error_of(
        await post_with(headers_client, as_hello, [("mcp-param-region", literal)]),
        400,
        HEADER_MISMATCH,
    )
