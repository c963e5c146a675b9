"""JWT access tokens (RFC 9068), checked against the issuer's published keys.

presa verifies a JWT access token locally, with no call to the authorization
server per request (the claims of step 3 and 4 are checked first, since they
can only refuse, so that only a token for this issuer and resource, within
its lifetime, can make presa look for a key it lacks):

1. the JOSE header says ``typ: at+jwt`` (RFC 9068 §4) and an asymmetric
   ``alg`` (never ``none``, never a shared-secret HMAC); a parameter presa
   does not know is ignored, unless the header makes it critical (``crit``);
2. the signature verifies with the issuer's key of that ``kid``, from the
   JWKS at the ``jwks_uri`` of its RFC 8414 / OpenID metadata (or
   ``jwks_uri=`` given), cached and refetched as :mod:`~presa_trio.auth.keys`
   explains: a rotated key is found within ``refetch_interval_s`` whatever
   other callers send, and a withdrawn one stops working when the cached
   set expires;
3. ``iss`` is the configured issuer, ``sub`` is present, ``exp`` has not
   passed and ``nbf``/``iat`` are not in the future, with ``leeway_s`` of
   clock skew either way;
4. ``aud`` names this server's canonical URI (RFC 8707): a token minted for
   another resource is refused.

A token that passed is remembered by the guard (by a hash of it) until its
``exp`` plus the leeway, but never past the key set's expiry, and only while
the key set it was checked against is the current one
(:class:`~presa_trio.auth.verifier.Verified`): a client reusing its token —
the common case — costs a lookup, not a signature check, and a token of a
withdrawn key is refused once the set is fetched again.

Spec: authorization §Token Handling, security-considerations §Token
Audience Binding and Validation, §Access Token Privilege Restriction.
"""

from __future__ import annotations

import json

import attrs
import httpx
import trio
from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwt import JWTClaimsRegistry

from presa_trio.auth.discovery import Discovery
from presa_trio.auth.keys import DEFAULT_REFETCH_INTERVAL_S, IssuerKeys
from presa_trio.auth.principal import DEFAULT_LEEWAY_S, Principal
from presa_trio.auth.verifier import (
    InvalidToken,
    Misconfigured,
    Verified,
    names_resource,
    scopes_of,
    timestamp,
)

#: Signature algorithms accepted: asymmetric only (RFC 9068 §4: not ``none``).
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")
#: ``typ`` values of a JWT access token (RFC 9068 §2.1, §4), compared lowercased.
ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})

#: The accepted algorithms; a header parameter presa does not know is ignored unless the
#: header lists it in ``crit`` (RFC 7515 §4, §4.1.11): an issuer may add its own.
REGISTRY = jws.JWSRegistry(algorithms=list(ALGORITHMS), strict_check_header=False)


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
    # Where the key set is; found in the issuer's metadata on first use if not given.
    jwks_uri: str | None = None
    _discovery: Discovery = attrs.field(
        default=attrs.Factory(lambda self: Discovery(self.issuer), takes_self=True), repr=False
    )
    _keys: IssuerKeys | None = None
    _lock: trio.Lock = attrs.field(factory=trio.Lock)

    async def verify(self, token: str, http: httpx.AsyncClient) -> Verified:
        principal, expires, keys = await self.check(token, http)
        # No await since :meth:`check` took the key from the set: the set's
        # expiry and basis are those of the set that checked the signature.
        return Verified(principal, min(expires + self.leeway_s, keys.expires_at), keys.basis)

    async def prepare(self, http: httpx.AsyncClient) -> None:
        """Find the issuer's ``jwks_uri`` and fetch its keys."""
        await (await self.key_set(http)).prepare(http)

    async def key_set(self, http: httpx.AsyncClient) -> IssuerKeys:
        """The issuer's key set, its ``jwks_uri`` found in the issuer's metadata the first time."""
        if self._keys is None:
            async with self._lock:
                if self._keys is None:
                    if self.jwks_uri is None:
                        metadata = await self._discovery.metadata(http)
                        if metadata.jwks_uri is None:
                            raise Misconfigured(
                                f"the metadata of {self.issuer} names no jwks_uri: "
                                "it cannot have JWT access tokens checked"
                            )
                        self.jwks_uri = metadata.jwks_uri
                    self._keys = IssuerKeys(self.jwks_uri, self.refetch_interval_s)
        return self._keys

    async def check(
        self, token: str, http: httpx.AsyncClient
    ) -> tuple[Principal, float, IssuerKeys]:
        """Steps 1–4 (the claims before the signature): the principal, its ``exp``, and
        the key set that checked the signature.

        The issuer is asked nothing (its metadata, its keys) until the claims
        are found good: a token that is expired, or for another resource, is
        401 even while the issuer cannot be reached, never 503 (authorization
        §Token Handling: "Invalid or expired tokens MUST receive a HTTP 401").
        """
        try:
            signed = jws.extract_compact(token.encode("ascii"))
        except (JoseError, ValueError, UnicodeEncodeError) as exc:
            raise InvalidToken("The access token is not a JWS") from exc
        header = signed.headers()
        if str(header.get("typ", "")).lower() not in ACCESS_TOKEN_TYPES:
            raise InvalidToken("The access token is not of type at+jwt")
        if header.get("alg") not in ALGORITHMS:
            raise InvalidToken("The access token's signature algorithm is not accepted")
        try:
            claims = json.loads(signed.payload)
        except (ValueError, RecursionError) as exc:
            raise InvalidToken("The access token's claims are not JSON") from exc
        if not isinstance(claims, dict):
            raise InvalidToken("The access token's claims are not a JSON object")
        # Claims that refuse the token refuse it whoever signed it: checked before
        # the key is looked up, so only a token for this issuer and resource, in
        # its lifetime, can make presa look for a new key.
        principal = self.principal_of(claims)
        expires = timestamp(claims["exp"])
        if expires is None:
            raise InvalidToken("The access token's exp is not a time")
        kid = header.get("kid")
        keys = await self.key_set(http)
        key = await keys.key(kid if isinstance(kid, str) else None, http)
        try:
            valid = jws.validate_compact(signed, key, registry=REGISTRY)
        except JoseError as exc:
            raise InvalidToken("The access token's signature does not verify") from exc
        if not valid:
            raise InvalidToken("The access token's signature does not verify")
        return principal, expires, keys

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
