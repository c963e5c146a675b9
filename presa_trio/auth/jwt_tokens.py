"""JWT access tokens (RFC 9068), checked against the issuer's published keys.

presa verifies a JWT access token locally, with no call to the authorization
server per request:

1. the JOSE header says ``typ: at+jwt`` (RFC 9068 §4) and an asymmetric
   ``alg`` (never ``none``, never a shared-secret HMAC);
2. the signature verifies with the issuer's key of that ``kid``, from the
   JWKS at the ``jwks_uri`` of its RFC 8414 / OpenID metadata; the key set is
   cached, and fetched again when a token names a ``kid`` it lacks (the
   issuer rotated its keys) — at once the first time, then at most once per
   ``refetch_interval_s``, so tokens with made-up ``kid`` values cannot make
   presa hammer the issuer;
3. ``iss`` is the configured issuer, ``sub`` is present, ``exp`` has not
   passed and ``nbf``/``iat`` are not in the future, with ``leeway_s`` of
   clock skew either way;
4. ``aud`` names this server's canonical URI (RFC 8707): a token minted for
   another resource is refused.

A token that passed is remembered until its ``exp`` (by a hash of it), so a
client reusing its token — the common case — costs a lookup, not a signature
check. Fetching the key set again forgets them all: a token of a retired key
is refused from then on.

Spec: authorization §Token Handling, security-considerations §Token
Audience Binding and Validation, §Access Token Privilege Restriction.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time

import attrs
import httpx
import trio
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import Key, KeySet
from joserfc.jwt import JWTClaimsRegistry

from presa_trio.auth.discovery import discover
from presa_trio.auth.principal import DEFAULT_LEEWAY_S, Principal
from presa_trio.auth.verifier import (
    InvalidToken,
    TokenCache,
    VerifierUnavailable,
    fetch_json,
    names_resource,
    scopes_of,
)

log = logging.getLogger(__name__)

#: Signature algorithms accepted: asymmetric only (RFC 9068 §4: not ``none``).
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")
#: ``typ`` values of a JWT access token (RFC 9068 §2.1, §4), compared lowercased.
ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})
DEFAULT_REFETCH_INTERVAL_S = 30.0

REGISTRY = jws.JWSRegistry(algorithms=list(ALGORITHMS))


def looks_like_jwt(token: str) -> bool:
    """A JWS compact serialization has exactly three dot-separated parts."""
    return token.count(".") == 2


@attrs.define(eq=False)
class JwtVerifier:
    """Verifies RFC 9068 access tokens of one issuer for one resource."""

    issuer: str
    resource: str
    leeway_s: int = DEFAULT_LEEWAY_S
    refetch_interval_s: float = DEFAULT_REFETCH_INTERVAL_S
    # The key set and where it comes from; both filled on first use.
    _jwks_uri: str | None = None
    _keys: KeySet | None = None
    # When an unknown kid last caused a fetch (trio clock), if ever.
    _last_refetch: float | None = None
    _lock: trio.Lock = attrs.field(factory=trio.Lock)
    _verified: TokenCache[Principal] = attrs.field(factory=TokenCache)

    async def verify(self, token: str, http: httpx.AsyncClient) -> Principal:
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.time()
        known = self._verified.get(key, now)
        if known is not None:
            return known
        principal, expires = await self.check(token, http)
        self._verified.put(key, principal, expires, now)
        return principal

    async def check(self, token: str, http: httpx.AsyncClient) -> tuple[Principal, float]:
        """Steps 1–4: the principal, and when the token expires."""
        try:
            signed = jws.extract_compact(token.encode("ascii"))
        except (JoseError, ValueError, UnicodeEncodeError) as exc:
            raise InvalidToken("The access token is not a JWS") from exc
        header = signed.headers()
        if str(header.get("typ", "")).lower() not in ACCESS_TOKEN_TYPES:
            raise InvalidToken("The access token is not of type at+jwt")
        if header.get("alg") not in ALGORITHMS:
            raise InvalidToken("The access token's signature algorithm is not accepted")
        kid = header.get("kid")
        key = await self.key_for(kid if isinstance(kid, str) else None, http)
        try:
            valid = jws.validate_compact(signed, key, registry=REGISTRY)
        except JoseError as exc:
            raise InvalidToken("The access token's signature does not verify") from exc
        if not valid:
            raise InvalidToken("The access token's signature does not verify")
        try:
            claims = json.loads(signed.payload)
        except ValueError as exc:
            raise InvalidToken("The access token's claims are not JSON") from exc
        if not isinstance(claims, dict):
            raise InvalidToken("The access token's claims are not a JSON object")
        return self.principal_of(claims), float(claims["exp"])

    def principal_of(self, claims: dict[str, object]) -> Principal:
        """Check the claims (step 3 and 4) and name the caller."""
        registry = JWTClaimsRegistry(
            leeway=self.leeway_s,
            iss={"essential": True, "value": self.issuer},
            sub={"essential": True},
            exp={"essential": True},
        )
        try:
            registry.validate(claims)
        except JoseError as exc:
            raise InvalidToken(f"The access token is invalid: {exc.error}") from exc
        if not names_resource(claims.get("aud"), self.resource):
            raise InvalidToken("The access token was not issued for this resource")
        client_id = claims.get("client_id")
        return Principal(
            issuer=self.issuer,
            subject=str(claims["sub"]),
            client_id=client_id if isinstance(client_id, str) else None,
            scopes=scopes_of(claims.get("scope")),
        )

    async def key_for(self, kid: str | None, http: httpx.AsyncClient) -> Key:
        """The issuer's key named ``kid``, fetching the key set when needed."""
        keys = self._keys
        if keys is not None:
            try:
                return keys.get_by_kid(kid)
            except JoseError:
                pass
        async with self._lock:
            if self._keys is not keys and self._keys is not None:
                keys = self._keys  # another request fetched meanwhile
            elif self.may_refetch():
                keys = await self.fetch_keys(http)
            if keys is not None:
                try:
                    return keys.get_by_kid(kid)
                except JoseError:
                    pass
        raise InvalidToken("The access token is signed with an unknown key")

    def may_refetch(self) -> bool:
        """First fetch, first refetch: yes; later, once per ``refetch_interval_s``."""
        if self._keys is None:
            return True
        now = trio.current_time()
        if self._last_refetch is not None and now - self._last_refetch < self.refetch_interval_s:
            return False
        self._last_refetch = now
        return True

    async def fetch_keys(self, http: httpx.AsyncClient) -> KeySet:
        if self._jwks_uri is None:
            metadata = await discover(http, self.issuer)
            if metadata.jwks_uri is None:
                raise VerifierUnavailable(f"issuer {self.issuer} publishes no jwks_uri")
            self._jwks_uri = metadata.jwks_uri
        document = await fetch_json(http, self._jwks_uri)
        try:
            keys = KeySet.import_key_set(document)  # type: ignore[arg-type]
        except (JoseError, KeyError, TypeError, ValueError) as exc:
            raise VerifierUnavailable(f"{self._jwks_uri} is not a usable JWKS") from exc
        log.info("fetched %d signing keys of %s", len(keys.keys), self.issuer)
        self._keys = keys
        self._verified.clear()
        return keys
