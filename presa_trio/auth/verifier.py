"""What every token verifier promises, and how verification can fail.

A verifier turns the bearer token of a request into a :class:`Principal`,
or says why it cannot:

- :class:`InvalidToken` — the token is expired, revoked, malformed, signed by
  an unknown key, or issued for another resource: HTTP 401
  ``error="invalid_token"`` (authorization §Token Handling: "Invalid or
  expired tokens MUST receive a HTTP 401 response").
- :class:`VerifierUnavailable` — the authorization server could not be
  asked (metadata, keys or introspection unreachable), or a key set that may
  hold the token's key cannot be fetched yet: HTTP 503 with ``Retry-After``,
  since the token may well be good and the client should retry rather than
  re-authorize;
- :class:`Misconfigured` — presa's configuration cannot work with this
  authorization server (its metadata names another issuer, no introspection
  endpoint, …): HTTP 500, logged once with the reason; no token can help.

A verified token is :class:`Verified`: the principal, and until when that
conclusion holds. A long-lived stream verifies its token again then
(:meth:`~presa_trio.auth.guard.ResourceGuard.lapsed`).

Network calls go through the ``httpx.AsyncClient`` the guard owns for the
server's lifetime; they are async and never block the Trio loop.
"""

from __future__ import annotations

import hashlib
from typing import Generic, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

import attrs
import httpx

from presa_trio.auth.principal import Principal

T = TypeVar("T")
#: Most answers a :class:`TokenCache` keeps; past it, expired ones go first, then the oldest.
MAX_CACHED = 10_000


def token_digest(token: bytes) -> bytes:
    """What presa keeps of a bearer token: its SHA-256, never the token itself.

    A cache keyed by the digest answers for exactly the token that was
    checked (a collision would need a second SHA-256 preimage), and what the
    caches keep, until each token expires, is no token anyone could present.
    (A request's own token is in the server's buffers while it is served,
    and freed memory is not cleared: the digest keeps the tokens of clients
    that went quiet out of memory, not the ones in flight.)
    """
    return hashlib.sha256(token).digest()


@attrs.define(eq=False)
class TokenCache(Generic[T]):
    """What was concluded about a token, until a given wall-clock time, by its digest."""

    _entries: dict[bytes, tuple[T, float]] = attrs.field(factory=dict)

    def get(self, token: bytes, now: float) -> T | None:
        entry = self._entries.get(token)
        return entry[0] if entry is not None and now < entry[1] else None

    def put(self, token: bytes, value: T, until: float, now: float) -> None:
        if len(self._entries) >= MAX_CACHED:
            for stale in [k for k, (_, end) in self._entries.items() if end <= now]:
                del self._entries[stale]
        while len(self._entries) >= MAX_CACHED:
            del self._entries[next(iter(self._entries))]
        self._entries[token] = (value, until)

    def clear(self) -> None:
        self._entries.clear()


class InvalidToken(Exception):
    """The token cannot be accepted; the message is the ``error_description``."""


#: Seconds a client is told to wait when the authorization server is unreachable.
UNAVAILABLE_RETRY_S = 5


class VerifierUnavailable(Exception):
    """The authorization server needed to check the token did not answer usably (yet)."""

    def __init__(self, message: str, retry_after_s: int = UNAVAILABLE_RETRY_S) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Misconfigured(Exception):
    """presa's authorization settings cannot work; the message says why, for the operator."""


@attrs.frozen
class Verified:
    """A verified token: who it stands for, and until when that holds."""

    principal: Principal
    # Wall-clock seconds after which the token must be verified again (its
    # ``exp``, a cached answer's end, the key set's expiry); None: never.
    until: float | None


class Verifier(Protocol):
    """Checks one bearer token."""

    async def verify(self, token: str, http: httpx.AsyncClient) -> Verified:
        """The principal behind ``token``; raise :class:`InvalidToken` if there is none."""
        ...

    def remembered(self, digest: bytes) -> Verified | None:
        """The verification of the token of this :func:`token_digest`, if one is kept and
        holds still; None otherwise (then :meth:`verify` decides, and raises if it must)."""
        ...

    async def prepare(self, http: httpx.AsyncClient) -> None:
        """Fetch what verifying needs (metadata, keys) now rather than on first use."""
        ...


def canonical_uri(uri: str) -> str:
    """``uri`` with its scheme and host lowercased, for comparing resource URIs.

    Spec: authorization §Canonical Server URI — "implementations SHOULD
    accept uppercase scheme and host components".
    """
    parts = urlsplit(uri)
    return urlunsplit(parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower()))


def names_resource(audience: object, resource: str) -> bool:
    """Whether an ``aud`` value (a string or a list of them) names ``resource``.

    Spec: authorization §Token Handling — "MCP servers MUST validate that
    access tokens were issued specifically for them as the intended
    audience" (RFC 8707 §2).
    """
    values = [audience] if isinstance(audience, str) else audience
    if not isinstance(values, list):
        return False
    wanted = canonical_uri(resource)
    return any(isinstance(value, str) and canonical_uri(value) == wanted for value in values)


def scopes_of(value: object) -> frozenset[str]:
    """The scopes in a ``scope`` claim or introspection member (space-separated)."""
    return frozenset(value.split()) if isinstance(value, str) else frozenset()


def json_object(response: httpx.Response, url: str) -> dict[str, object]:
    """The body of a 200 response as a JSON object, else :class:`VerifierUnavailable`."""
    if response.status_code != 200:
        raise VerifierUnavailable(f"{url} answered HTTP {response.status_code}")
    try:
        body = response.json()
    except ValueError as exc:
        raise VerifierUnavailable(f"{url} did not answer JSON") from exc
    if not isinstance(body, dict):
        raise VerifierUnavailable(f"{url} did not answer a JSON object")
    return body
