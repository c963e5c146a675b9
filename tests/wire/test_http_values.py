"""Where an authorization server's metadata is looked for, sans-IO: the order the
resource server and the client's sign-in both try (authorization-server-discovery)."""

from __future__ import annotations

import pytest

from presa_trio.wire.http_values import authorization_server_metadata_urls


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
