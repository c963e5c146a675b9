"""The mirrored headers a client writes, sans-IO: the server's check of them is
tests/http/test_mirrored.py.

Spec: basic/transports/streamable-http §Standard Request Headers, §Value Encoding.
"""

from __future__ import annotations

import pytest

from presa_trio.wire.headers import CORE_NAME_PARAMS, request_headers


@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("get_weather", "get_weather"),
        ("café", "=?base64?Y2Fmw6k=?="),
        (" padded", "=?base64?IHBhZGRlZA==?="),
        ("=?base64?abc?=", "=?base64?PT9iYXNlNjQ/YWJjPz0=?="),
    ],
    ids=["plain", "non-ascii", "outer-space", "looks-encoded"],
)
def test_mcp_name_is_written_literally_or_base64_encoded(name: str, header: str) -> None:
    """Spec-mandated (streamable-http §Standard Request Headers: if the ``Mcp-Name``
    source value cannot be safely represented as a plain ASCII header value, clients
    MUST encode it; §Value Encoding): a plain name is written as is, one with
    non-ASCII characters, outer whitespace or the sentinel's own form base64-encoded."""
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name}}
    headers = request_headers(message, CORE_NAME_PARAMS)
    assert (headers["mcp-method"], headers["mcp-name"]) == ("tools/call", header)


@pytest.mark.parametrize(
    ("arguments", "headers"),
    [
        ({"loc": {"region": "eu", "n": 3, "on": True}}, {"eu", "3", "true"}),
        ({"loc": {"n": 1e16}}, {"10000000000000000"}),
        ({"loc": {"n": -7.0}}, {"-7"}),
        ({"loc": {"region": "eu"}}, {"eu"}),
        ({"loc": "eu"}, set()),
        ({"loc": {"region": ["eu"], "n": {"x": 1}, "on": None}}, set()),
    ],
    ids=[
        "every-value",
        "integer-as-float",
        "negative-integer-as-float",
        "one-present",
        "path-through-a-string",
        "no-primitive-value",
    ],
)
def test_param_headers_carry_the_primitive_values_present(
    arguments: dict[str, object], headers: set[str]
) -> None:
    """Spec-mandated (streamable-http §Client Behavior: extract the value at each
    annotated property's exact path, omitting the header when no value is present;
    §Value Encoding: strings as is, integers in decimal, booleans ``true``/``false``):
    an integer the body holds as a float (``1e16`` given as JSON) is written in decimal
    digits, not ``1e+16``; a path through something that is no object finds no value,
    and a value that is no string, integer or boolean is not written."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "t", "arguments": arguments},
    }
    paths = {"Region": ("region",), "N": ("n",), "On": ("on",)}
    param_headers = {name: ("arguments", "loc", *path) for name, path in paths.items()}
    written = request_headers(message, CORE_NAME_PARAMS, param_headers)
    assert {value for name, value in written.items() if name.startswith("mcp-param-")} == headers


@pytest.mark.parametrize(
    ("declared", "header"),
    [
        ("2026-07-28", "2026-07-28"),
        ("2099-01-01", "2099-01-01"),
        (20990101, "2026-07-28"),
        ("2099\n01", "2026-07-28"),
    ],
    ids=["this-version", "another-version", "no-string", "no-header-text"],
)
def test_the_protocol_version_header_mirrors_the_version_the_body_declares(
    declared: object, header: str
) -> None:
    """Spec-mandated (streamable-http §Protocol Version Header: the header value MUST
    match the ``io.modelcontextprotocol/protocolVersion`` of the body's ``_meta``): a
    body that declares another version (``presa-trio request`` with a ``_meta`` of
    its own) is sent with that version in the header; one no header can carry, with
    this client's own."""
    meta = {"io.modelcontextprotocol/protocolVersion": declared}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    assert request_headers(message, CORE_NAME_PARAMS)["mcp-protocol-version"] == header
