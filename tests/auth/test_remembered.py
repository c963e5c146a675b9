"""A token answered from what the verifier remembers gets the answers a new one would.

Clients reuse their token, so most requests are answered from the verifier's
cache (:meth:`~presa_trio.auth.guard.ResourceGuard.remembered`) rather than by
checking the signature again. These tests run a real
:class:`~presa_trio.auth.jwt_tokens.JwtVerifier` in process, its issuer's key
set given rather than fetched, and check on the wire that a remembered token
is still held to each request's scopes and to its ``exp``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from presa_trio.auth.guard import ResourceGuard, ScopeRules
from presa_trio.auth.jwt_tokens import JwtVerifier
from presa_trio.auth.keys import IssuerKeys
from presa_trio.auth.verifier import MAX_CACHED, TokenCache
from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.testing import McpClient, Response, headers_for, request, running

RESOURCE = "http://localhost:3000/mcp"
ISSUER = "https://auth.example.com"
METADATA = "http://localhost:3000/.well-known/oauth-protected-resource/mcp"
RULES = ScopeRules(every_request=frozenset({"mcp"}), tools={"greet": frozenset({"people"})})
KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"})


def signed(subject: str, scope: str, lifetime_s: float = 3600) -> str:
    now = int(time.time())
    claims: dict[str, object] = {"iss": ISSUER, "sub": subject, "aud": RESOURCE, "scope": scope}
    claims |= {"client_id": "app", "iat": now, "exp": int(now + lifetime_s)}
    return jwt.encode({"alg": "RS256", "typ": "at+jwt", "kid": "k1"}, claims, KEY)


@pytest.fixture
async def client() -> AsyncIterator[McpClient]:
    now = time.time()
    keys = IssuerKeys(ISSUER + "/jwks", keys=KeySet([KEY]), fetched_at=now, expires_at=now + 3600)
    verifier = JwtVerifier(ISSUER, RESOURCE, leeway_s=0, keys=keys)
    guard = ResourceGuard(RESOURCE, verifier, authorization_servers=[ISSUER], scopes=RULES)
    async with running(McpApp.for_server(build_server(), auth=guard)) as started:
        yield started


async def post(client: McpClient, message: dict[str, Any], token: str) -> Response:
    headers = [*headers_for(message).items(), ("authorization", f"Bearer {token}")]
    return await client.post(message, headers)


async def test_a_remembered_token_is_held_to_each_tools_scopes(client: McpClient) -> None:
    """A-04: a token accepted before, and so remembered, is still 403 on a tool whose
    scopes it lacks, with the same body and challenge a token never seen before gets;
    and it still works where its scopes suffice."""
    listing = request("tools/list")
    greeting = request("tools/call", {"name": "greet", "arguments": {}})
    seen = signed("alice", "mcp")
    assert (await post(client, listing, seen)).status == 200
    remembered = await post(client, greeting, seen)
    first_use = await post(client, greeting, signed("bob", "mcp"))
    for refused in (remembered, first_use):
        assert refused.status == 403
        assert refused.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{METADATA}", error="insufficient_scope", '
            'error_description="tools/call requires the scopes: mcp people", '
            'scope="mcp people"'
        )
    assert remembered.body == first_use.body
    assert (await post(client, listing, seen)).status == 200


async def test_a_remembered_token_is_verified_again_once_it_expires(
    client: McpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A-08: a remembered token is answered from the cache only until its ``exp`` (plus
    the leeway, 0 here): after it, the token is verified again and refused, 401
    ``invalid_token``. The wall clock (the verifier's, the cache's and the token's) is
    the test's: held still while the token is used, then moved past ``exp``."""
    now = [time.time()]
    monkeypatch.setattr(time, "time", lambda: now[0])
    listing = request("tools/list")
    short = signed("alice", "mcp", lifetime_s=2)
    expires = float(jwt.decode(short, KEY).claims["exp"])
    for _ in range(2):
        assert (await post(client, listing, short)).status == 200
    now[0] = expires + 0.1
    expired = await post(client, listing, short)
    assert expired.status == 401
    assert 'error="invalid_token"' in expired.headers["www-authenticate"]


def test_what_is_remembered_of_tokens_is_bounded() -> None:
    """A-12: presa remembers at most ``MAX_CACHED`` verifications: past it, those run
    out go first, then the oldest, so a client sending ever new tokens cannot grow the
    memory without bound, and the newest verification is kept."""
    cache: TokenCache[str] = TokenCache()
    for n in range(MAX_CACHED):
        cache.put(b"%d" % n, "fresh", until=1.0 if n == 5 else 2.0, now=0.0)
    cache.put(b"stale out", "new", until=2.0, now=1.0)  # b"5" has run out at 1.0
    cache.put(b"oldest out", "newer", until=2.0, now=1.0)  # none has: b"0" goes

    assert len(cache) == MAX_CACHED
    assert b"5" not in cache
    assert b"0" not in cache
    assert b"1" in cache
    assert cache[b"oldest out"] == ("newer", 2.0)
