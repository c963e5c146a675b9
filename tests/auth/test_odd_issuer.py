"""What an issuer sends that no honest one does: 401 or 503, never a 500 nor for ever.

presa runs in process with both verifiers, against the test authorization
server on loopback; the issuer signs (or introspection answers) an ``exp``
that is no time (a number past any float, NaN), or answers with JSON nested
past what a parser follows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from presa_trio.auth.guard import ResourceGuard, Verifiers
from presa_trio.auth.introspection import IntrospectionVerifier
from presa_trio.auth.jwt_tokens import JwtVerifier
from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.testing import McpClient, headers_for, request, running
from tests.auth.authorization_server import AuthorizationServer

RESOURCE = "http://localhost:3000/mcp"
#: Past the largest float: ``float()`` of it overflows.
BEYOND_FLOAT = 10**400


@pytest.fixture
async def client(issuer: AuthorizationServer) -> AsyncIterator[McpClient]:
    introspection = IntrospectionVerifier(
        "presa", issuer.secret("presa"), RESOURCE, issuer=issuer.issuer
    )
    verifiers = Verifiers(jwt=JwtVerifier(issuer.issuer, RESOURCE), introspection=introspection)
    auth = ResourceGuard(RESOURCE, verifiers, authorization_servers=[issuer.issuer])
    async with running(McpApp.for_server(build_server(), auth=auth)) as started:
        yield started


async def refusal(client: McpClient, token: str) -> str:
    """The ``WWW-Authenticate`` of a 401 to ``tools/list`` with ``token``."""
    message = request("tools/list")
    response = await client.post(
        message, {**headers_for(message), "authorization": f"Bearer {token}"}
    )
    assert response.status == 401, response.body
    challenge: str = response.headers["www-authenticate"]
    return challenge


async def test_a_signed_exp_past_any_float_is_401(
    client: McpClient, issuer: AuthorizationServer
) -> None:
    """A-08: a JWT whose ``exp`` (a NumericDate, RFC 7519 §2) no clock can reach is
    ``invalid_token``, not a failure of the server."""
    token = issuer.mint_jwt("alice-app", RESOURCE, claims={"exp": BEYOND_FLOAT})
    assert 'error="invalid_token"' in await refusal(client, token)


@pytest.mark.parametrize("exp", [BEYOND_FLOAT, float("nan")])
async def test_an_introspected_exp_that_is_no_time_is_401(
    client: McpClient, issuer: AuthorizationServer, exp: float
) -> None:
    """A-08, A-12: an active introspection answer whose ``exp`` is no time (RFC 7662
    §2.2: an integer timestamp) is refused, on every request: neither a failure of
    the server nor a token remembered for ever."""
    token = issuer.mint_opaque("alice-opaque", RESOURCE)
    issuer.opaque[token]["exp"] = exp
    for _ in range(2):
        assert 'error="invalid_token"' in await refusal(client, token)


@pytest.mark.parametrize(
    "audience", ["http://[::1", ["http://[zz]/mcp", "https://other.example/mcp"]]
)
async def test_a_jwt_whose_aud_is_no_uri_is_401_whoever_signed_it(
    client: McpClient, issuer: AuthorizationServer, audience: str | list[str]
) -> None:
    """A-07: an ``aud`` that is no URI (an IPv6 host left open, a bracketed host that
    is no address) names no resource, so the token is ``invalid_token``, not a
    failure of the server. The claims are read before the signature is checked, so
    a token signed with a key the issuer never published is answered the same."""
    signed = issuer.mint_jwt("alice-app", RESOURCE, claims={"aud": audience})
    forged = AuthorizationServer(issuer=issuer.issuer).mint_jwt(
        "alice-app", RESOURCE, claims={"aud": audience}
    )
    for token in (signed, forged):
        assert 'error="invalid_token"' in await refusal(client, token)


async def test_an_introspected_aud_that_is_no_uri_is_401(
    client: McpClient, issuer: AuthorizationServer
) -> None:
    """A-07: an active introspection answer whose ``aud`` is no URI names no resource:
    ``invalid_token``, not a failure of the server."""
    token = issuer.mint_opaque("alice-opaque", RESOURCE)
    issuer.opaque[token]["aud"] = "http://[::1"
    assert 'error="invalid_token"' in await refusal(client, token)


@pytest.mark.parametrize("answer", [{"sub": ""}, {"client_id": ""}])
async def test_an_introspected_token_naming_no_one_is_401(
    client: McpClient, issuer: AuthorizationServer, answer: dict[str, str]
) -> None:
    """A-10: an active answer whose subject is empty (``sub`` empty, or absent with an
    empty ``client_id``) names no caller, as a JWT with an empty ``sub`` does not: it
    is ``invalid_token``. Accepted, every such token would share one task scope."""
    token = issuer.mint_opaque("alice-opaque", RESOURCE)
    issuer.opaque[token].pop("sub")
    issuer.opaque[token].update(answer)
    assert 'error="invalid_token"' in await refusal(client, token)


async def test_an_answer_nested_past_the_parser_is_503(
    client: McpClient, issuer: AuthorizationServer
) -> None:
    """A-06: an introspection answer that no parser can read (JSON nested past its
    depth) is the issuer not answering usably: 503 with ``Retry-After``, as for any
    answer that is not a JSON object."""
    token = issuer.mint_opaque("alice-opaque", RESOURCE)
    issuer.bodies["/introspect"] = b"[" * 100_000 + b"]" * 100_000
    message = request("tools/list")
    sent = {**headers_for(message), "authorization": f"Bearer {token}"}
    response = await client.post(message, sent)
    assert response.status == 503
    assert response.headers["retry-after"] == "5"


@pytest.mark.parametrize("member", ["jwks_uri", "introspection_endpoint"])
async def test_a_url_in_the_metadata_that_is_none_is_misconfigured(
    issuer: AuthorizationServer, caplog: pytest.LogCaptureFixture, member: str
) -> None:
    """A-17: a ``jwks_uri`` or ``introspection_endpoint`` that is no URL (an IPv6
    host left open) is a configuration that cannot work: one log line at start, and
    500 (or the key set's 503 while it may not be fetched again) on use, while the
    server keeps serving; not the end of the server."""
    issuer.metadata_changes[member] = "http://[::1"
    token = (
        issuer.mint_jwt("alice-app", RESOURCE, scope="mcp")
        if member == "jwks_uri"
        else issuer.mint_opaque("alice-opaque", RESOURCE)
    )
    introspection = IntrospectionVerifier(
        "presa", issuer.secret("presa"), RESOURCE, issuer=issuer.issuer
    )
    verifiers = (
        Verifiers(jwt=JwtVerifier(issuer.issuer, RESOURCE))
        if member == "jwks_uri"
        else Verifiers(introspection=introspection)
    )
    auth = ResourceGuard(RESOURCE, verifiers, authorization_servers=[issuer.issuer])
    async with running(McpApp.for_server(build_server(), auth=auth)) as client:
        message = request("tools/list")
        sent = {**headers_for(message), "authorization": f"Bearer {token}"}
        answers = [(await client.post(message, sent)).status for _ in range(2)]
    # 503 while the key set may not be fetched again (``--auth-key-refetch``), then 500.
    assert set(answers) <= {500, 503}
    told = [r.message for r in caplog.records if "authorization cannot work" in r.message]
    assert len(told) == 1
    assert "http://[::1" in told[0]
