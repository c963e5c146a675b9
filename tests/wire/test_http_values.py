"""HTTP values, sans-IO: request headers as the checks read them, a list header split
outside its quoted strings, and where an authorization server's metadata is looked
for, in the order the resource server and the client's sign-in both try
(authorization-server-discovery)."""

from __future__ import annotations

import pytest

from presa_trio.wire.http_values import (
    Headers,
    authorization_server_metadata_urls,
    is_loopback,
    split_unquoted,
)


@pytest.mark.parametrize(
    "raw",
    [
        [(b"mcp-method", b"tools/list")],
        [(b"Mcp-Method", b"tools/list")],
        [(b"MCP-METHOD", b"tools/list"), (b"accept", b"text/event-stream")],
    ],
    ids=["lowercase", "mixed-case", "upper-case"],
)
def test_a_header_is_read_by_its_name_in_any_case(raw: list[tuple[bytes, bytes]]) -> None:
    """Spec-mandated (RFC 9110 §5.1: field names are case-insensitive): an ASGI server
    that passes a name as the client spelt it (HTTP/1.1 allows any case) is read as
    one that lowercases it (RFC 9113 §8.2.1)."""
    headers = Headers.from_asgi(raw)
    assert headers.get("mcp-method") == "tools/list"
    assert headers.get_all("mcp-method") == ["tools/list"]


def test_a_header_sent_three_times_keeps_every_value_in_order() -> None:
    """Spec-mandated (RFC 9110 §5.3: a field line repeated is one list, in the order
    received): no value is dropped, however many times the name comes."""
    raw = [(b"accept", b"a/b"), (b"Accept", b"c/d"), (b"accept", b"e/f")]
    assert Headers.from_asgi(raw).get_all("accept") == ["a/b", "c/d", "e/f"]


@pytest.mark.parametrize("host", ["localhost", "LocalHost", "127.0.0.2", "[::1]", "::1"])
def test_loopback_names_and_addresses_in_any_case(host: str) -> None:
    """Spec-mandated (RFC 9110 §4.2.3 and RFC 3986 §3.2.2: a host name is
    case-insensitive): every spelling of loopback is loopback, 127.0.0.0/8 whole."""
    assert is_loopback(host)
    assert not is_loopback("example.com")


def test_a_value_is_trimmed_of_spaces_and_tabs_only() -> None:
    """Spec-mandated (RFC 9110 §5.5, §5.6.3: optional whitespace around a value is
    spaces and horizontal tabs, not part of it): a tab around a value is dropped, where
    a byte ``str.strip()`` would also take for a space (0xA0) stays for the checks to
    refuse."""
    headers = Headers.from_asgi([(b"mcp-method", b"\t tools/list \t"), (b"mcp-name", b"\xa0x")])
    assert headers.get("mcp-method") == "tools/list"
    assert headers.get("mcp-name") == "\xa0x"


@pytest.mark.parametrize(
    ("value", "pieces"),
    [
        ('a="x,y",b', ['a="x,y"', "b"]),
        ('a="x\\",y",b', ['a="x\\",y"', "b"]),
        ('a="x",b\\,c', ['a="x"', "b\\", "c"]),
    ],
    ids=["quoted-comma", "escaped-quote", "backslash-outside-quotes"],
)
def test_a_list_is_split_outside_its_quoted_strings(value: str, pieces: list[str]) -> None:
    """Spec-mandated (RFC 9110 §5.6.4: a quoted string may hold the separator, and a
    backslash escapes the next character only inside one): a backslash outside
    quotes is an ordinary character, which a comma after it still splits at."""
    assert split_unquoted(value, ",") == pieces


@pytest.mark.parametrize(
    ("issuer", "urls"),
    [
        (
            "https://auth.example.com/tenant1",
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ],
        ),
        (
            "https://auth.example.com",
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ],
        ),
        (
            "http://127.0.0.1:9000/",
            [
                "http://127.0.0.1:9000/.well-known/oauth-authorization-server",
                "http://127.0.0.1:9000/.well-known/openid-configuration",
            ],
        ),
    ],
)
def test_metadata_is_looked_for_at_the_spec_urls_in_its_order(issuer: str, urls: list[str]) -> None:
    """Spec-mandated (basic/authorization/authorization-server-discovery: an issuer
    with a path component, then one without): every URL, in priority order."""
    assert authorization_server_metadata_urls(issuer) == urls
