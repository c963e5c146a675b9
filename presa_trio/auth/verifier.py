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

A verified token is :class:`Verified`: the principal, until when that
conclusion holds, and what else it rests on (the key set that checked a
JWT's signature, while it is the issuer's current one). The guard
remembers it that long, by the token's digest; a long-lived stream
verifies its token again then
(:meth:`~presa_trio.auth.guard.ResourceGuard.lapsed`).

Network calls go through the ``httpx.AsyncClient`` the guard owns for the
server's lifetime; they are async and never block the Trio loop.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

import attrs
import httpx
import trio

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


class TokenCache(dict[bytes, tuple[T, float]]):
    """What was concluded about a token, by its digest: ``(value, until)``.

    An entry holds while the wall-clock time is before ``until``; whoever
    reads one checks that. Reading is the dictionary's own ``get`` (a
    lookup on every request, with no call in Python); :meth:`put` keeps it
    bounded.
    """

    __slots__ = ()

    def put(self, digest: bytes, value: T, until: float, now: float) -> None:
        if len(self) >= MAX_CACHED:
            for stale in [k for k, (_, end) in self.items() if end <= now]:
                del self[stale]
        while len(self) >= MAX_CACHED:
            del self[next(iter(self))]
        self[digest] = (value, until)


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


@attrs.define(eq=False)
class Basis:
    """Something a verification rests on besides the clock: it holds while this is current.

    A JWT's verification rests on the key set that checked its signature;
    fetching the set again supersedes it (:mod:`~presa_trio.auth.keys`), so
    a token of a withdrawn key is not answered from memory, and a stream
    opened with it checks it again at once.
    """

    # ``not superseded.is_set()``, kept as a plain attribute: every request with a
    # remembered token reads it, and ``Event.is_set`` is a call in Python.
    current: bool = True
    # Set when superseded, for the streams that rest on it.
    superseded: trio.Event = attrs.field(factory=trio.Event)

    def supersede(self) -> None:
        self.current = False
        self.superseded.set()


@attrs.frozen
class Verified:
    """A verified token: who it stands for, until when that holds, and on what."""

    principal: Principal
    # Wall-clock seconds after which the token must be verified again (its
    # ``exp``, a cached answer's end, the key set's expiry); None: never.
    until: float | None
    # What else the verification rests on; None: only the clock.
    basis: Basis | None = None


class Verifier(Protocol):
    """Checks one bearer token."""

    async def verify(self, token: str, http: httpx.AsyncClient) -> Verified:
        """The principal behind ``token``; raise :class:`InvalidToken` if there is none."""
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

    A value that is no URI (``http://[::1``, a bracketed host that is no
    address) names nothing; it is read before any signature is checked, so
    whoever sends such a token gets 401, never a failure of the server.

    Spec: authorization §Token Handling — "MCP servers MUST validate that
    access tokens were issued specifically for them as the intended
    audience" (RFC 8707 §2).
    """
    values = [audience] if isinstance(audience, str) else audience
    if not isinstance(values, list):
        return False
    wanted = canonical_uri(resource)
    return any(isinstance(value, str) and names_uri(value, wanted) for value in values)


def names_uri(value: str, wanted: str) -> bool:
    """Whether ``value`` is the canonical URI ``wanted``; a value that is no URI is not."""
    try:
        return canonical_uri(value) == wanted
    except ValueError:
        return False


def timestamp(value: object) -> float | None:
    """A NumericDate (RFC 7519 §2; RFC 7662 §2.2 ``exp``) in seconds; None if it is no time.

    No time: not a number (a bool is none), NaN, infinite, or past the
    largest float: none can be compared with a clock, nor kept as an expiry.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) else None


def scopes_of(value: object) -> frozenset[str]:
    """The scopes in a ``scope`` claim or introspection member, separated by spaces.

    Spaces only (RFC 6749 §3.3: ``scope-token *( SP scope-token )``; RFC 9068
    §2.2.3, RFC 7662 §2.2): ``a<TAB>b`` is one scope, which no rule names, not
    ``a`` and ``b``; a run of spaces parts two scopes as one does.
    """
    if not isinstance(value, str):
        return frozenset()
    return frozenset(scope for scope in value.split(" ") if scope)


async def ask(
    http: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    form: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> httpx.Response:
    """``method url`` at the authorization server (with ``form`` as its body), asking for JSON.

    No answer (no connection, a timeout) is :class:`VerifierUnavailable`; a
    URL that is none (httpx cannot read it: ``http://[::1``) is
    :class:`Misconfigured`, since no retry can reach it.
    """
    sent = {"accept": "application/json", **(headers or {})}
    try:
        return await http.request(method, url, data=form, headers=sent)
    except httpx.InvalidURL as exc:
        raise Misconfigured(f"{url} is not a URL presa can use: {exc}") from exc
    except httpx.HTTPError as exc:
        raise VerifierUnavailable(f"{method} {url} failed: {exc}") from exc


def json_object(response: httpx.Response, url: str) -> dict[str, object]:
    """The body of a 200 response as a JSON object, else :class:`VerifierUnavailable`."""
    if response.status_code != 200:
        raise VerifierUnavailable(f"{url} answered HTTP {response.status_code}")
    try:
        body = response.json()
    except (ValueError, RecursionError) as exc:  # RecursionError: nested past the parser
        raise VerifierUnavailable(f"{url} did not answer JSON") from exc
    if not isinstance(body, dict):
        raise VerifierUnavailable(f"{url} did not answer a JSON object")
    return body
