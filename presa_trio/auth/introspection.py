"""Opaque access tokens, asked about at the issuer's introspection endpoint (RFC 7662).

presa posts the token to the endpoint and accepts it only when the answer
says ``active: true``, before its ``exp`` and from its ``nbf`` (less the clock
skew allowed, ``leeway_s``: on ``nbf`` only, since the issuer has judged the
token active by its own clock, and presa keeps no expired one), names this
server in ``aud`` (RFC 8707: a token for another resource is refused even
while active), names a caller (a non-empty ``sub``, else ``client_id``),
and — when presa knows the issuer — names that issuer in ``iss``.

presa authenticates to the endpoint as its metadata says it may
(``introspection_endpoint_auth_methods_supported``, RFC 8414 §2):
``client_secret_basic`` (HTTP Basic, RFC 7662 §2.1) when it has a secret
and the server takes it, else ``client_secret_post``, else ``none`` (the
client id in the form, no secret). Metadata that states no methods means
``client_secret_basic``, the RFC 8414 default. A server that takes only
methods presa cannot use is :class:`~presa_trio.auth.verifier.Misconfigured`.

Answers are cached by a hash of the token, never past the token's own
``exp`` nor longer than ``max_cache_s`` (``--auth-cache-ttl``): a revoked
token keeps working here for at most that long, and a listen stream opened
with it ends within that long too. Refusals are cached for ``max_cache_s``
as well: a client replaying a bad token cannot make presa call the issuer on
every request.

Spec: authorization §Token Handling (OAuth 2.1 §5.2); RFC 7662 §2.
"""

from __future__ import annotations

import base64
import time
from urllib.parse import quote

import attrs
import httpx

from presa_trio.auth.discovery import Discovery
from presa_trio.auth.principal import DEFAULT_LEEWAY_S, Principal
from presa_trio.auth.verifier import (
    InvalidToken,
    Misconfigured,
    TokenCache,
    Verified,
    ask,
    json_object,
    names_resource,
    scopes_of,
    timestamp,
    token_digest,
)

#: Longest an introspection answer is kept: the revocation lag (``--auth-cache-ttl``).
DEFAULT_MAX_CACHE_S = 60.0
#: The client authentication methods presa can use, in its order of preference.
AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")


@attrs.frozen
class Answer:
    """What an introspection answer concluded: the principal, or why there is none."""

    principal: Principal | None
    refusal: str


def auth_method(supported: tuple[str, ...] | None, has_secret: bool) -> str:
    """The client authentication presa uses at the introspection endpoint."""
    offered = ("client_secret_basic",) if supported is None else supported
    for method in AUTH_METHODS:
        if method in offered and (has_secret or method == "none"):
            return method
    wanted = ", ".join(offered) or "none stated"
    if not has_secret:
        raise Misconfigured(
            f"the introspection endpoint takes {wanted}: give presa a client secret "
            "(--auth-client-secret or PRESA_AUTH_CLIENT_SECRET)"
        )
    raise Misconfigured(f"the introspection endpoint takes only {wanted}; presa cannot use them")


def basic_credentials(client_id: str, secret: str) -> str:
    """``client_secret_basic``: both form-urlencoded first (RFC 6749 §2.3.1)."""
    pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")


@attrs.define(eq=False)
class IntrospectionVerifier:
    """Verifies opaque tokens by asking the authorization server about each (cached)."""

    client_id: str
    # None: presa has no secret (it can then authenticate with ``none`` only).
    client_secret: str | None = attrs.field(repr=False)
    resource: str
    # The issuer an answer must name, when known; its metadata names the
    # endpoint when ``endpoint`` is not given, and the methods it takes.
    issuer: str | None = None
    endpoint: str | None = None
    max_cache_s: float = DEFAULT_MAX_CACHE_S
    leeway_s: int = DEFAULT_LEEWAY_S
    # How presa authenticates at the endpoint; chosen on first use.
    method: str | None = None
    _discovery: Discovery | None = attrs.field(
        default=attrs.Factory(
            lambda self: None if self.issuer is None else Discovery(self.issuer), takes_self=True
        ),
        repr=False,
    )
    _cache: TokenCache[tuple[Answer, float]] = attrs.field(factory=TokenCache)

    async def verify(self, token: str, http: httpx.AsyncClient) -> Verified:
        digest = token_digest(token.encode())
        now = time.time()
        entry = self._cache.get(digest)
        if entry is None or now >= entry[1]:
            judged = self.judge(await self.introspect(token, http), now)
            self._cache.put(digest, judged, judged[1], now)
        else:
            judged = entry[0]
        answer, until = judged
        if answer.principal is None:
            raise InvalidToken(answer.refusal)
        return Verified(answer.principal, until)

    async def prepare(self, http: httpx.AsyncClient) -> None:
        """Find the endpoint and the authentication method, from the metadata if need be."""
        if self.endpoint is not None and self.method is not None:
            return
        metadata = None
        if self._discovery is not None:
            metadata = await self._discovery.metadata(http)
        if self.endpoint is None:
            if metadata is None or metadata.introspection_endpoint is None:
                raise Misconfigured(
                    f"the metadata of {self.issuer} names no introspection_endpoint: "
                    "give it with --auth-introspection-endpoint"
                )
            self.endpoint = metadata.introspection_endpoint
        supported = None if metadata is None else metadata.introspection_auth_methods
        self.method = auth_method(supported, bool(self.client_secret))

    async def introspect(self, token: str, http: httpx.AsyncClient) -> dict[str, object]:
        await self.prepare(http)
        assert self.endpoint is not None
        form = {"token": token, "token_type_hint": "access_token"}
        headers: dict[str, str] = {}
        if self.method == "client_secret_basic" and self.client_secret:
            headers["authorization"] = basic_credentials(self.client_id, self.client_secret)
        else:
            form["client_id"] = self.client_id
            if self.method == "client_secret_post" and self.client_secret:
                form["client_secret"] = self.client_secret
        response = await ask(http, "POST", self.endpoint, form=form, headers=headers)
        if response.status_code in (400, 401, 403):
            raise Misconfigured(
                f"the introspection endpoint {self.endpoint} refused presa's request "
                f"(HTTP {response.status_code}, client {self.client_id}, {self.method}): "
                "check the client id and secret"
            )
        return json_object(response, self.endpoint)

    def judge(self, answer: dict[str, object], now: float) -> tuple[Answer, float]:
        """The principal an introspection answer stands for, or the refusal; until when."""
        refuse_until = now + self.max_cache_s  # the longest any answer is kept

        def refusal(reason: str) -> tuple[Answer, float]:
            return Answer(None, reason), refuse_until

        if answer.get("active") is not True:
            return refusal("The access token is not active")
        exp = timestamp(answer.get("exp", refuse_until))
        if exp is None:
            return refusal("The access token's exp is not a time")
        if exp <= now:
            return refusal("The access token has expired")
        nbf = timestamp(answer.get("nbf", now))
        if nbf is None:
            return refusal("The access token's nbf is not a time")
        if nbf - self.leeway_s > now:  # kept no longer than until it is valid
            return Answer(None, "The access token is not valid yet"), min(
                refuse_until, nbf - self.leeway_s
            )
        if not names_resource(answer.get("aud"), self.resource):
            return refusal("The access token was not issued for this resource")
        issuer = answer.get("iss", self.issuer or self.endpoint)
        if not isinstance(issuer, str) or (self.issuer is not None and issuer != self.issuer):
            return refusal("The access token was issued by another authorization server")
        client_id = answer.get("client_id")
        # An empty subject names no one (a JWT's ``sub`` may not be empty either):
        # every such token would share one task scope.
        subject = answer.get("sub", client_id)
        if not isinstance(subject, str) or not subject:
            return refusal("The access token names no subject")
        principal = Principal(
            issuer=issuer,
            subject=subject,
            client_id=client_id if isinstance(client_id, str) else None,
            scopes=scopes_of(answer.get("scope")),
        )
        return Answer(principal, ""), min(exp, refuse_until)
