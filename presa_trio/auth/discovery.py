"""Finding an authorization server's metadata: RFC 8414, then OpenID Connect Discovery.

presa reads the issuer's metadata for its ``jwks_uri`` (to check JWT access
tokens), ``introspection_endpoint`` and the client authentication methods
that endpoint takes (for opaque ones). It tries the well-known URIs in the
order the MCP spec gives clients, and accepts a document only when its
``issuer`` is exactly the issuer asked for, character for character (RFC
8414 §3.3): clients compare it so, and a ``--auth-issuer`` that differs
(a trailing slash, ``localhost`` for ``127.0.0.1``) would send every client
away. Such a difference is :class:`~presa_trio.auth.verifier.Misconfigured`,
named in one sentence; only an issuer that cannot be reached (no
connection, HTTP 5xx) is :class:`~presa_trio.auth.verifier.VerifierUnavailable`.

Spec: authorization/authorization-server-discovery §Authorization Server
Metadata Discovery (RFC 8414 §3.1, §3.3; OpenID Connect Discovery §4.3).
"""

from __future__ import annotations

import time

import attrs
import httpx

from presa_trio.auth.verifier import Misconfigured, VerifierUnavailable, ask, json_object
from presa_trio.wire.http_values import authorization_server_metadata_urls


@attrs.frozen
class ServerMetadata:
    """What presa needs from an authorization server's metadata."""

    issuer: str
    jwks_uri: str | None
    introspection_endpoint: str | None
    # ``introspection_endpoint_auth_methods_supported``; None when not stated.
    introspection_auth_methods: tuple[str, ...] | None = None

    @classmethod
    def from_document(cls, document: dict[str, object]) -> ServerMetadata:
        def text(name: str) -> str | None:
            value = document.get(name)
            return value if isinstance(value, str) else None

        methods = document.get("introspection_endpoint_auth_methods_supported")
        return cls(
            str(document["issuer"]),
            text("jwks_uri"),
            text("introspection_endpoint"),
            tuple(m for m in methods if isinstance(m, str)) if isinstance(methods, list) else None,
        )


#: How long a failed discovery is answered from memory before the issuer is asked again.
RETRY_DISCOVERY_S = 10.0


@attrs.define(eq=False)
class Discovery:
    """One issuer's metadata, fetched once; a failure is repeated for
    ``RETRY_DISCOVERY_S`` without asking again, so no caller can make presa ask
    the issuer on every request."""

    issuer: str
    _found: ServerMetadata | None = None
    # Until when (monotonic seconds) the last failure stands, and the failure.
    _failed: tuple[float, VerifierUnavailable | Misconfigured] | None = None

    async def metadata(self, http: httpx.AsyncClient) -> ServerMetadata:
        if self._found is not None:
            return self._found
        if self._failed is not None and time.monotonic() < self._failed[0]:
            raise self._failed[1]
        try:
            self._found = await fetch_metadata(http, self.issuer)
        except (VerifierUnavailable, Misconfigured) as failure:
            self._failed = (time.monotonic() + RETRY_DISCOVERY_S, failure)
            raise
        return self._found


async def fetch_metadata(http: httpx.AsyncClient, issuer: str) -> ServerMetadata:
    """The first valid metadata document of ``issuer``.

    None reachable is :class:`VerifierUnavailable`; documents that all name
    another issuer, or none at any well-known URI, is :class:`Misconfigured`.
    """
    failures: list[str] = []
    unreachable = False
    for url in authorization_server_metadata_urls(issuer):
        try:
            response = await ask(http, "GET", url)
        except VerifierUnavailable as exc:
            failures.append(str(exc))
            unreachable = True
            continue
        unreachable |= response.status_code >= 500
        try:
            document = json_object(response, url)
        except VerifierUnavailable as exc:
            failures.append(str(exc))
            continue
        if document.get("issuer") != issuer:
            failures.append(
                f"{url} names the issuer {document.get('issuer')!r}, not {issuer!r} "
                "(the issuer must match exactly)"
            )
            continue
        return ServerMetadata.from_document(document)
    reasons = "; ".join(failures)
    if unreachable:
        raise VerifierUnavailable(f"no metadata for issuer {issuer} yet: {reasons}")
    raise Misconfigured(f"issuer {issuer} has no usable metadata: {reasons}")
