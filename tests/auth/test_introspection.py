"""Opaque access tokens through introspection (RFC 7662) on a real ``presa-trio serve``.

presa introspects as the client ``presa`` at the endpoint the issuer's
metadata names; the users' clients get opaque tokens from the token endpoint.
"""

from __future__ import annotations

import time

import httpx
import pytest
import trio

from presa_trio.auth.introspection import IntrospectionVerifier
from tests.auth import scenarios
from tests.auth.authorization_server import AuthorizationServer
from tests.auth.harness import Presa, start_presa, token_from_endpoint


@pytest.fixture
async def presa(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> Presa:
    flags = ["--auth-issuer", issuer.issuer, "--auth-client-id", "presa"]
    flags += ["--auth-client-secret", issuer.secret("presa")]
    return await start_presa(nursery, http, flags)


async def opaque_token(
    http: httpx.AsyncClient, issuer: AuthorizationServer, client: str, resource: str
) -> str:
    token = await token_from_endpoint(http, issuer, client, resource)
    assert token.count(".") != 2  # opaque, not a JWT
    return token


async def test_opaque_tokens_of_two_users(
    presa: Presa, issuer: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    """A-06, A-10, A-11, T-65: introspected tokens name their users; tasks and
    requestState stay with their caller."""
    await scenarios.refuses_without_token(presa)
    alice = await opaque_token(http, issuer, "alice-opaque", presa.resource)
    bob = await opaque_token(http, issuer, "bob-opaque", presa.resource)
    await scenarios.keeps_two_users_apart(presa, alice, bob)


async def test_answers_are_cached(
    presa: Presa, issuer: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    """A-12: one introspection serves the token's later requests."""
    alice = await opaque_token(http, issuer, "alice-opaque", presa.resource)
    for _ in range(3):
        await scenarios.calls_a_tool(presa, alice)
    assert issuer.hits["/introspect"] == 1


async def test_inactive_expired_and_foreign_tokens_are_refused(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-07, A-08, A-12: unknown (inactive), expired, and another resource's tokens are 401."""
    await scenarios.refuses_invalid_token(presa, "never-issued")
    expired = issuer.mint_opaque("alice-opaque", presa.resource, lifetime_s=-1)
    await scenarios.refuses_invalid_token(presa, expired)
    foreign = issuer.mint_opaque("alice-opaque", "http://127.0.0.1:1/mcp")
    assert "resource" in await scenarios.refuses_invalid_token(presa, foreign)


async def test_an_introspected_token_not_valid_yet_is_refused_until_its_nbf(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-08: an answer whose ``nbf`` (RFC 7662 §2.2) is past the clock skew allowed
    (``--auth-leeway``) is 401, as a JWT's is: the token is not valid yet (authorization
    §Token Handling, OAuth 2.1 §5.2). One within the skew is served."""
    later = issuer.mint_opaque("alice-opaque", presa.resource)
    issuer.opaque[later]["nbf"] = int(time.time()) + 3600
    skewed = issuer.mint_opaque("alice-opaque", presa.resource)
    issuer.opaque[skewed]["nbf"] = int(time.time()) + 5

    said = await scenarios.refuses_invalid_token(presa, later)

    assert "not valid yet" in said
    await scenarios.calls_a_tool(presa, skewed)


def test_a_token_not_valid_yet_is_refused_no_longer_than_until_its_nbf() -> None:
    """A-08: RFC 7662 §2.2: ``nbf`` is when the token may be used from. A refusal for
    ``nbf`` is kept (cached, RFC 7662 §4) until the token's ``nbf`` less the clock skew
    allowed at the latest, so a token valid in a second is not refused for the whole
    cache time (``--auth-cache-ttl``) after it becomes valid."""
    verifier = IntrospectionVerifier(
        "presa", None, "http://127.0.0.1:3000/mcp", max_cache_s=60.0, leeway_s=5
    )
    now = 1_000_000.0
    answer: dict[str, object] = {"active": True, "sub": "alice", "nbf": int(now) + 6}

    judged, until = verifier.judge(answer, now)

    assert judged.principal is None
    assert "not valid yet" in judged.refusal
    assert until <= now + 1


@pytest.mark.parametrize("active", [False, "true", 1, None])
async def test_an_answer_not_saying_active_true_is_refused(
    presa: Presa, issuer: AuthorizationServer, active: object
) -> None:
    """A-07, A-12: only ``"active": true`` makes a token good (RFC 7662 §2.2: a JSON
    boolean); an answer saying false (a revoked token, whatever else it still states),
    or a string or a number, or no ``active`` at all, is 401 ``invalid_token``."""
    token = issuer.mint_opaque("alice-opaque", presa.resource, scope="mcp")
    issuer.opaque[token]["active"] = active
    if active is None:
        del issuer.opaque[token]["active"]

    assert "not active" in await scenarios.refuses_invalid_token(presa, token)


async def test_an_opaque_token_with_dots_is_introspected(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-06: only a token of three dot-separated parts is taken for a JWT (RFC 7515
    §7.1); an opaque token holding a dot or two dots elsewhere is the issuer's to say,
    and is introspected."""
    for opaque in ("opaque.token", "a.b.c.d"):
        issuer.opaque[opaque] = issuer.opaque.pop(
            issuer.mint_opaque("alice-opaque", presa.resource)
        )
        await scenarios.calls_a_tool(presa, opaque)


async def test_the_clock_skew_allowed_is_the_one_given(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-08: ``--auth-leeway`` is the skew allowed on an introspected ``nbf`` too: with
    ``--auth-leeway 5``, a token valid from 20 s ahead is not valid yet."""
    flags = ["--auth-issuer", issuer.issuer, "--auth-client-id", "presa", "--auth-leeway", "5"]
    presa = await start_presa(
        nursery, http, [*flags, "--auth-client-secret", issuer.secret("presa")]
    )
    ahead = issuer.mint_opaque("alice-opaque", presa.resource)
    issuer.opaque[ahead]["nbf"] = int(time.time()) + 20

    assert "not valid yet" in await scenarios.refuses_invalid_token(presa, ahead)


async def test_an_answer_naming_another_issuer_is_refused(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-07: an active answer whose ``iss`` is not the configured issuer is 401: presa
    accepts the tokens of its issuer only (authorization §Token Handling)."""
    token = issuer.mint_opaque("alice-opaque", presa.resource)
    issuer.opaque[token]["iss"] = "https://elsewhere.example.com"

    said = await scenarios.refuses_invalid_token(presa, token)

    assert "another authorization server" in said


async def test_a_refused_token_is_not_introspected_again_at_once(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-12: a refusal is kept as an answer is (``--auth-cache-ttl``): a client replaying
    a token that is not active makes presa ask the issuer once, not on every request."""
    for _ in range(3):
        await scenarios.refuses_invalid_token(presa, "never-issued")
    assert issuer.hits["/introspect"] == 1


def test_an_expired_answer_is_refused_and_a_good_one_kept_no_longer_than_its_exp() -> None:
    """A-08, A-12: an answer saying ``active`` but whose ``exp`` is now or past is refused
    (authorization §Token Handling: an expired token MUST get 401), and a good answer
    is kept no longer than the token's ``exp`` (RFC 7662 §4), even when that is sooner
    than ``--auth-cache-ttl``."""
    resource = "http://127.0.0.1:3000/mcp"
    issuer = "https://auth.example.com"
    verifier = IntrospectionVerifier("presa", None, resource, issuer=issuer, max_cache_s=60.0)
    now = 1_000_000.0
    answer: dict[str, object] = {"active": True, "sub": "alice", "aud": resource, "iss": issuer}

    expired, _ = verifier.judge({**answer, "exp": int(now)}, now)
    good, until = verifier.judge({**answer, "exp": int(now) + 10}, now)

    assert expired.principal is None
    assert "expired" in expired.refusal
    assert good.principal is not None
    assert until == now + 10


@pytest.mark.parametrize("status", [404, 500, 502])
async def test_an_introspection_endpoint_not_answering_is_503_not_401(
    presa: Presa, issuer: AuthorizationServer, status: int
) -> None:
    """A-17: an introspection endpoint answering an HTTP error other than refusing
    presa says nothing of the token, whatever its body: 503 with Retry-After (the client
    keeps its token and retries), never 401 ``invalid_token``."""
    token = issuer.mint_opaque("alice-opaque", presa.resource)
    issuer.statuses["/introspect"] = status

    response = await presa.call("tools/list", token=token)

    assert response.status_code == 503
    assert int(response.headers["retry-after"]) >= 1
