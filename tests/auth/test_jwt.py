"""JWT access tokens (RFC 9068) on a real ``presa-trio serve --auth-issuer``.

Tokens come from the test authorization server's token endpoint (the client
credentials grant, with ``resource`` = presa's URI) or are minted by it
directly where a test needs a token no honest server would hand out.
"""

from __future__ import annotations

import base64
import json
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


async def test_the_same_user_through_another_client_has_other_tasks(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-10, T-65: a JWT's caller is its issuer, ``sub`` and ``client_id`` together: the
    tasks alice makes through one client are, for her token of another client, as an
    unknown id (SEP-2663 §Security Implications: auth binding)."""
    own = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE)
    other_client = issuer.mint_jwt("bob-app", presa.resource, subject="alice", scope=SCOPE)
    await scenarios.isolates_tasks(presa, own, other_client)


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


async def test_a_token_not_typed_at_jwt_is_refused(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-07: resource servers MUST verify that ``typ`` is ``at+jwt`` (or
    ``application/at+jwt``; RFC 9068 §4): a token without ``typ`` is refused, as one
    of another type is; the media type is compared case-insensitively (RFC 7515
    §4.1.9), so ``AT+JWT`` is accepted."""
    untyped = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE, header={"typ": None})
    assert "at+jwt" in await scenarios.refuses_invalid_token(presa, untyped)
    for typ in ("AT+JWT", "application/at+jwt"):
        typed = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE, header={"typ": typ})
        await scenarios.calls_a_tool(presa, typed)


async def test_a_symmetric_or_absent_signature_algorithm_is_refused(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-07: only asymmetric algorithms are accepted (RFC 9068 §4: never ``none``; a
    shared-secret ``HS256`` would let whoever knows the public key sign): a token whose
    header names ``none`` or ``HS256`` is 401 for its algorithm, whatever it carries."""
    signed, payload, signature = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE).split(
        "."
    )
    header = json.loads(base64.urlsafe_b64decode(signed + "=" * (-len(signed) % 4)))
    for alg, sent in (("none", ""), ("HS256", signature)):
        forged = {**header, "alg": alg}
        encoded = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
        description = await scenarios.refuses_invalid_token(presa, f"{encoded}.{payload}.{sent}")
        assert "algorithm" in description, alg


async def test_a_signature_of_other_claims_is_refused(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-07: the signature must verify over the claims sent, with the issuer's key the
    header names (authorization §Token Handling; RFC 7515 §5.2): alice's claims under
    the signature of bob's token, both the issuer's and of its current key, are 401."""
    alice = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE)
    bob = issuer.mint_jwt("bob-app", presa.resource, scope=SCOPE)
    await scenarios.calls_a_tool(presa, bob)
    header, claims, _ = alice.split(".")
    spliced = ".".join([header, claims, bob.split(".")[2]])
    assert "signature" in await scenarios.refuses_invalid_token(presa, spliced)


@pytest.mark.parametrize("claim", ["sub", "exp", "iss"])
async def test_a_token_without_an_essential_claim_is_401(
    presa: Presa, issuer: AuthorizationServer, claim: str
) -> None:
    """A-07, A-08: ``iss``, ``sub`` and ``exp`` are required in a JWT access token (RFC
    9068 §2.2): a signed token without one is 401 ``invalid_token``, never a failure of
    the server."""
    token = issuer.mint_jwt("alice-app", presa.resource, scope=SCOPE, claims={claim: None})
    await scenarios.refuses_invalid_token(presa, token)


async def test_an_audience_list_naming_this_server_is_accepted(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-07: ``aud`` may be a list (RFC 7519 §4.1.3; RFC 9068 §3): a token whose list
    names this server's canonical URI among others is accepted, one whose list does
    not is refused (RFC 8707; authorization §Token Handling)."""
    other = "http://127.0.0.1:1/mcp"
    both = issuer.mint_jwt("alice-app", [other, presa.resource], scope=SCOPE)
    await scenarios.calls_a_tool(presa, both)
    elsewhere = issuer.mint_jwt("alice-app", [other], scope=SCOPE)
    assert "resource" in await scenarios.refuses_invalid_token(presa, elsewhere)


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
