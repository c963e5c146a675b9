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
