"""JWT access tokens (RFC 9068) on a real ``presa-trio serve --auth-issuer``.

Tokens come from the test authorization server's token endpoint (the client
credentials grant, with ``resource`` = presa's URI) or are minted by it
directly where a test needs a token no honest server would hand out.
"""

from __future__ import annotations

import time

import httpx
import pytest
import trio

from tests.auth import scenarios
from tests.auth.authorization_server import ISSUERS_OWN, AuthorizationServer
from tests.auth.harness import Presa, start_presa, token_from_endpoint

SCOPE = "mcp"
#: ``--auth-key-refetch`` of these tests, in seconds.
REFETCH_S = 1.0


@pytest.fixture
async def presa(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> Presa:
    flags = ["--auth-issuer", issuer.issuer, "--auth-scope", SCOPE]
    return await start_presa(nursery, http, [*flags, "--auth-key-refetch", str(REFETCH_S)])


async def token_for(
    http: httpx.AsyncClient, issuer: AuthorizationServer, client: str, resource: str
) -> str:
    return await token_from_endpoint(http, issuer, client, resource, SCOPE)


async def test_metadata_and_challenge_name_the_issuer_and_scope(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-01, A-02, A-05: the challenge carries ``scope``; the document lists the
    issuer and ``scopes_supported``."""
    await scenarios.refuses_without_token(presa, scope=SCOPE)
    document = await scenarios.serves_metadata(presa, [issuer.issuer])
    assert document["scopes_supported"] == [SCOPE]


async def test_tokens_of_two_users_and_their_tasks(
    presa: Presa, issuer: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    """A-06, A-10, A-11, T-65: tokens from the token endpoint work; each user has their
    own tasks and their own requestState."""
    alice = await token_for(http, issuer, "alice-app", presa.resource)
    bob = await token_for(http, issuer, "bob-app", presa.resource)
    await scenarios.keeps_two_users_apart(presa, alice, bob)


async def test_a_token_for_another_resource_is_refused(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-07: the audience must be this server's canonical URI (RFC 8707)."""
    other = issuer.mint_jwt("alice-app", "http://127.0.0.1:1/mcp", scope=SCOPE)
    description = await scenarios.refuses_invalid_token(presa, other)
    assert "resource" in description
    upper = presa.resource.replace("http://", "HTTP://")
    await scenarios.calls_a_tool(presa, issuer.mint_jwt("alice-app", upper, scope=SCOPE))


async def test_expired_and_future_tokens_are_refused(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-08: ``exp`` past (beyond the skew allowance) or ``nbf`` ahead is 401."""
    now = int(time.time())
    expired = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE, issued_at=now - 400)
    assert "expired" in await scenarios.refuses_invalid_token(presa, expired)
    future = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE, issued_at=now + 400)
    await scenarios.refuses_invalid_token(presa, future)
    skewed = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE, issued_at=now + 5)
    await scenarios.calls_a_tool(presa, skewed)


async def test_other_issuers_and_types_are_refused(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-07: ``typ`` must be ``at+jwt`` (RFC 9068 §4), ``iss`` the issuer, the
    signature one of the issuer's keys."""
    plain_jwt = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE, header={"typ": "JWT"})
    await scenarios.refuses_invalid_token(presa, plain_jwt)
    impostor = AuthorizationServer(issuer="http://127.0.0.1:1")
    forged = impostor.mint_jwt("alice-app", presa.resource, scope=SCOPE)
    await scenarios.refuses_invalid_token(presa, forged)
    impostor.issuer = issuer.issuer  # the right issuer, but a key it never published
    unknown_key = impostor.mint_jwt("alice-app", presa.resource)
    first = await presa.call("tools/list", token=unknown_key)
    if first.status_code == 503:  # the key set was fetched less than REFETCH_S ago
        await trio.sleep(int(first.headers["retry-after"]))
    await scenarios.refuses_invalid_token(presa, unknown_key)


async def test_a_header_parameter_of_the_issuers_own_is_ignored(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-07: a JOSE header parameter presa does not know, and that the header does
    not make critical, is ignored (RFC 7515 §4): the token is the issuer's, and valid."""
    nonce = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE, header={"nonce": "n-1"})
    await scenarios.calls_a_tool(presa, nonce)


async def test_a_header_parameter_made_critical_that_presa_does_not_know_is_401(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-07: a JOSE header parameter presa does not know, which the header lists in
    ``crit``, makes the token one presa cannot check as its issuer meant (RFC 7515
    §4.1.11: the JWS is invalid), so it is refused, however it is signed; the same
    parameter not made critical is ignored."""
    own = {ISSUERS_OWN: 1}
    critical = issuer.mint_jwt(
        "alice-app", presa.resource, scope=SCOPE, header={**own, "crit": [ISSUERS_OWN]}
    )
    plain = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE, header=own)

    await scenarios.refuses_invalid_token(presa, critical)
    await scenarios.calls_a_tool(presa, plain)


async def test_key_rotation_at_the_issuer(
    presa: Presa, issuer: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    """A-09: keys are cached; a token with a new ``kid`` makes presa fetch the
    JWKS again (after a 503 while the refetch interval runs), and a token of the
    withdrawn key is refused after."""
    before = await token_for(http, issuer, "alice-app", presa.resource)
    await scenarios.calls_a_tool(presa, before)
    await scenarios.calls_a_tool(presa, before)
    assert issuer.hits["/jwks"] == 1
    issuer.rotate_keys()
    after = await token_for(http, issuer, "alice-app", presa.resource)
    await scenarios.calls_a_tool_once_keys_refresh(presa, after, within_s=REFETCH_S + 1)
    assert issuer.hits["/jwks"] == 2
    await scenarios.refuses_invalid_token(presa, before)


async def test_a_token_without_the_scope_is_403(presa: Presa, issuer: AuthorizationServer) -> None:
    """A-04: a valid token without the required scope is 403 ``insufficient_scope``
    naming it."""
    unscoped = issuer.mint_jwt("alice-app", presa.resource)
    response = await presa.call("tools/list", token=unscoped)
    assert response.status_code == 403
    params = scenarios.challenge_params(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == SCOPE
    assert params["resource_metadata"] == scenarios.metadata_url(presa)


@pytest.mark.parametrize("between", ["\t", "\n", "\u00a0", "\u3000", "\x1f"])
async def test_a_scope_claim_is_split_at_spaces_only(
    presa: Presa, issuer: AuthorizationServer, between: str
) -> None:
    """A-04, A-07: a ``scope`` claim is scope-tokens separated by spaces (RFC 9068 §2.2.3;
    RFC 6749 §3.3: ``scope-token *( SP scope-token )``, SP being ``%x20``), so
    ``other<TAB>mcp`` is one scope, not ``mcp``: a token holds no scope its issuer did
    not grant as such (authorization §Token Handling, OAuth 2.1 §5.2). Two spaces in a
    row still part two scopes."""
    glued = issuer.mint_jwt("alice-app", presa.resource, scope=f"other{between}{SCOPE}")
    spaced = issuer.mint_jwt("alice-app", presa.resource, scope=f"other  {SCOPE}")

    refused = await presa.call("tools/list", token=glued)

    assert refused.status_code == 403
    assert scenarios.challenge_params(refused)["error"] == "insufficient_scope"
    assert (await presa.call("tools/list", token=spaced)).status_code == 200
