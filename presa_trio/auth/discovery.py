"""Finding an authorization server's metadata: RFC 8414, then OpenID Connect Discovery.

presa reads the issuer's metadata for its ``jwks_uri`` (to check JWT access
tokens) and ``introspection_endpoint`` (for opaque ones). It tries the
well-known URIs in the order the MCP spec gives clients, and accepts a
document only when its ``issuer`` is exactly the issuer asked for.

Spec: authorization/authorization-server-discovery §Authorization Server
Metadata Discovery (RFC 8414 §3.1, §3.3; OpenID Connect Discovery §4.3).
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import attrs
import httpx

from presa_trio.auth.verifier import VerifierUnavailable, fetch_json


def metadata_urls(issuer: str) -> list[str]:
    """The well-known URIs to try for ``issuer``, in priority order.

    ``https://as.example/tenant1`` gives the RFC 8414 path-inserted URI, the
    OpenID path-inserted URI, and the OpenID path-appended URI; an issuer
    without a path gives the first two.
    """
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(well_known_path: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, well_known_path, "", ""))

    urls = [
        at("/.well-known/oauth-authorization-server" + path),
        at("/.well-known/openid-configuration" + path),
    ]
    if path:
        urls.append(at(path + "/.well-known/openid-configuration"))
    return urls


@attrs.frozen
class ServerMetadata:
    """What presa needs from an authorization server's metadata."""

    issuer: str
    jwks_uri: str | None
    introspection_endpoint: str | None


async def discover(http: httpx.AsyncClient, issuer: str) -> ServerMetadata:
    """The first valid metadata document of ``issuer``; none is :class:`VerifierUnavailable`."""
    failures: list[str] = []
    for url in metadata_urls(issuer):
        try:
            document = await fetch_json(http, url)
        except VerifierUnavailable as exc:
            failures.append(str(exc))
            continue
        if document.get("issuer") != issuer:
            failures.append(f"{url} names issuer {document.get('issuer')!r}, not {issuer!r}")
            continue
        jwks_uri = document.get("jwks_uri")
        introspection = document.get("introspection_endpoint")
        return ServerMetadata(
            issuer,
            jwks_uri if isinstance(jwks_uri, str) else None,
            introspection if isinstance(introspection, str) else None,
        )
    raise VerifierUnavailable(f"no metadata for issuer {issuer}: " + "; ".join(failures))
