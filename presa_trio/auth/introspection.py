"""Opaque access tokens, asked about at the issuer's introspection endpoint (RFC 7662).

presa posts the token to the endpoint, authenticating as a client with its
own credentials (HTTP Basic, RFC 7662 §2.1), and accepts it only when the
answer says ``active: true``, names this server in ``aud`` (RFC 8707: a token
for another resource is refused even while active), and — when presa knows
the issuer — names that issuer in ``iss``.

Answers are cached by a hash of the token, never past the token's own
``exp`` nor longer than ``max_cache_s``, so a revoked token stops working
within that bound. Refusals are cached for ``max_cache_s`` too: a client
replaying a bad token cannot make presa call the issuer on every request.

Spec: authorization §Token Handling (OAuth 2.1 §5.2); RFC 7662 §2.
"""

from __future__ import annotations

import hashlib
import time

import attrs
import httpx

from presa_trio.auth.discovery import discover
from presa_trio.auth.principal import Principal
from presa_trio.auth.verifier import (
    InvalidToken,
    TokenCache,
    VerifierUnavailable,
    json_object,
    names_resource,
    scopes_of,
)

DEFAULT_MAX_CACHE_S = 60.0


@attrs.frozen
class Answer:
    """What an introspection answer concluded: the principal, or why there is none."""

    principal: Principal | None
    refusal: str


@attrs.define(eq=False)
class IntrospectionVerifier:
    """Verifies opaque tokens by asking the authorization server about each (cached)."""

    client_id: str
    client_secret: str = attrs.field(repr=False)
    resource: str
    # The issuer an answer must name, when known; its metadata names the
    # endpoint when ``endpoint`` is not given.
    issuer: str | None = None
    endpoint: str | None = None
    max_cache_s: float = DEFAULT_MAX_CACHE_S
    _cache: TokenCache[Answer] = attrs.field(factory=TokenCache)

    async def verify(self, token: str, http: httpx.AsyncClient) -> Principal:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.time()
        answer = self._cache.get(key, now)
        if answer is None:
            answer, until = self.judge(await self.introspect(token, http), now)
            self._cache.put(key, answer, until, now)
        if answer.principal is None:
            raise InvalidToken(answer.refusal)
        return answer.principal

    async def introspection_endpoint(self, http: httpx.AsyncClient) -> str:
        if self.endpoint is None:
            if self.issuer is None:
                raise VerifierUnavailable("no introspection endpoint and no issuer to ask")
            metadata = await discover(http, self.issuer)
            if metadata.introspection_endpoint is None:
                raise VerifierUnavailable(f"issuer {self.issuer} names no introspection endpoint")
            self.endpoint = metadata.introspection_endpoint
        return self.endpoint

    async def introspect(self, token: str, http: httpx.AsyncClient) -> dict[str, object]:
        endpoint = await self.introspection_endpoint(http)
        try:
            response = await http.post(
                endpoint,
                data={"token": token, "token_type_hint": "access_token"},
                auth=(self.client_id, self.client_secret),
                headers={"accept": "application/json"},
            )
        except httpx.HTTPError as exc:
            raise VerifierUnavailable(f"POST {endpoint} failed: {exc}") from exc
        return json_object(response, endpoint)

    def judge(self, answer: dict[str, object], now: float) -> tuple[Answer, float]:
        """The principal an introspection answer stands for, or the refusal; until when."""
        refuse_until = now + self.max_cache_s  # the longest any answer is kept

        def refusal(reason: str) -> tuple[Answer, float]:
            return Answer(None, reason), refuse_until

        if answer.get("active") is not True:
            return refusal("The access token is not active")
        exp = answer.get("exp", refuse_until)
        if not isinstance(exp, int | float) or exp <= now:
            return refusal("The access token has expired")
        if not names_resource(answer.get("aud"), self.resource):
            return refusal("The access token was not issued for this resource")
        issuer = answer.get("iss", self.issuer or self.endpoint)
        if not isinstance(issuer, str) or (self.issuer is not None and issuer != self.issuer):
            return refusal("The access token was issued by another authorization server")
        client_id = answer.get("client_id")
        subject = answer.get("sub", client_id)
        if not isinstance(subject, str):
            return refusal("The access token names no subject")
        principal = Principal(
            issuer=issuer,
            subject=subject,
            client_id=client_id if isinstance(client_id, str) else None,
            scopes=scopes_of(answer.get("scope")),
        )
        return Answer(principal, ""), min(float(exp), refuse_until)
