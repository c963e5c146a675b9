"""The authorization rung in process: malformed credentials, scope rules, metadata.

Development tokens stand in for verified tokens here (they are a real
verifier, not a mock); the token formats are tested end to end beside this.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from presa_trio.auth.guard import ResourceGuard, ScopeRules, Verifiers
from presa_trio.auth.jwt_tokens import JwtVerifier
from presa_trio.auth.options import auth_requested, guard_from_args
from presa_trio.auth.static import StaticTokens
from presa_trio.cli.main import parse_args
from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.testing import McpClient, Response, headers_for, request, running
from presa_trio.wire.http_values import LOOPBACK_HOSTS, is_loopback
from tests.auth.authorization_server import AuthorizationServer

RESOURCE = "http://localhost:3000/mcp"
ISSUER = "https://auth.example.com"
METADATA = "http://localhost:3000/.well-known/oauth-protected-resource/mcp"
RULES = ScopeRules(
    every_request=frozenset({"mcp"}),
    methods={"prompts/list": frozenset({"prompts"})},
    tools={"greet": frozenset({"greet", "people"})},
)


def guard(**options: Any) -> ResourceGuard:
    tokens = {"full": "alice", "basic": "bob"}
    return ResourceGuard(
        resource=RESOURCE,
        verifier=Verifiers(static=StaticTokens(tokens, scopes=RULES.all())),
        authorization_servers=[ISSUER],
        scopes=RULES,
        **options,
    )


@pytest.fixture
async def client() -> AsyncIterator[McpClient]:
    async with running(McpApp.for_server(build_server(), auth=guard())) as started:
        yield started


def with_token(message: dict[str, Any], *authorization: str) -> list[tuple[str, str]]:
    headers = list(headers_for(message).items())
    return headers + [("authorization", value) for value in authorization]


async def test_challenge_without_a_bearer_token(client: McpClient) -> None:
    """A-02, A-05: no credentials, or another scheme, is 401 without ``error``,
    with the scope every request needs."""
    message = request("tools/list")
    for sent in (with_token(message), with_token(message, "Basic YWxpY2U6eA==")):
        response = await client.post(message, sent)
        assert response.status == 401
        assert response.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{METADATA}", scope="mcp"'
        )


async def test_a_token_that_does_not_verify_is_challenged_with_the_scope(
    client: McpClient,
) -> None:
    """A-03, A-05: a token that does not verify is 401 ``error="invalid_token"``, and the
    challenge names the metadata and the scope every request needs, as the one to a
    request without a token does (RFC 6750 §3; authorization §Scope Selection Strategy),
    so the client can ask for a token that will do."""
    message = request("tools/list")
    response = await client.post(message, with_token(message, "Bearer never-issued"))
    assert response.status == 401
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{METADATA}", error="invalid_token", '
        'error_description="Unknown development token", scope="mcp"'
    )


async def test_the_bearer_scheme_is_case_insensitive(client: McpClient) -> None:
    """A-03: an auth-scheme is case-insensitive (RFC 9110 §11.1; RFC 6750 §2.1), so
    ``bearer`` and ``BEARER`` carry the token as ``Bearer`` does."""
    message = request("tools/list")
    for scheme in ("bearer", "BEARER", "bEaReR"):
        response = await client.post(message, with_token(message, f"{scheme} full"))
        assert response.status == 200, scheme


async def test_the_token_may_follow_more_than_one_space(client: McpClient) -> None:
    """A-03: ``credentials = "Bearer" 1*SP b64token`` (RFC 6750 §2.1): spaces after the
    scheme, and whitespace around the field value (not part of it, RFC 9110 §5.5), leave
    the token as sent."""
    message = request("tools/list")
    for value in ("Bearer  full", "Bearer   full", " Bearer full ", "Bearer full\t"):
        response = await client.post(message, with_token(message, value))
        assert response.status == 200, value


async def test_malformed_credentials_are_400(client: McpClient) -> None:
    """A-03: two Authorization headers (or two credentials in one), a token in the
    query string, a bearer scheme without a token, or one that is not a b64token
    (not ASCII, or with a space), are 400 ``invalid_request`` (authorization
    §Access Token Usage; RFC 6750 §2.1, §3.1), even after the same token was
    accepted."""
    message = request("tools/list")
    assert (await client.post(message, with_token(message, "Bearer full"))).status == 200
    twice = await client.post(message, with_token(message, "Bearer full", "Bearer basic"))
    in_query = await client.post(message, with_token(message), query=b"access_token=full")
    no_token = await client.post(message, with_token(message, "Bearer "))
    not_ascii = await client.post(message, with_token(message, "Bearer full\u00e9"))
    in_one = await client.post(message, with_token(message, "Bearer full, Bearer basic"))
    spaced = await client.post(message, with_token(message, "Bearer full basic"))
    for response in (twice, in_query, no_token, not_ascii, in_one, spaced):
        assert response.status == 400
        assert 'error="invalid_request"' in response.headers["www-authenticate"]


async def test_per_method_and_per_tool_scopes(client: McpClient) -> None:
    """A-04: the scopes a method and a tool need come from the Python API; a
    403 names every scope the request needs, in one challenge."""
    app = client.app
    assert app.auth is not None
    app.auth.verifier = Verifiers(
        static=StaticTokens({"full": "alice", "basic": "bob"}, scopes=frozenset({"mcp"}))
    )
    listing = request("tools/list")
    assert (await client.post(listing, with_token(listing, "Bearer basic"))).status == 200
    for message, needed in (
        (request("prompts/list"), "mcp prompts"),
        (request("tools/call", {"name": "greet", "arguments": {}}), "greet mcp people"),
    ):
        response = await client.post(message, with_token(message, "Bearer basic"))
        assert response.status == 403
        assert response.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{METADATA}", error="insufficient_scope", '
            f'error_description="{message["method"]} requires the scopes: {needed}", '
            f'scope="{needed}"'
        )


async def test_a_tool_needs_the_scopes_of_tools_call_too() -> None:
    """A-04: a tool's scopes come on top of those ``tools/call`` needs, never instead of
    them: a token with the tool's scopes but not the method's is 403 naming all of them
    (authorization §Runtime Insufficient Scope Errors)."""
    rules = ScopeRules(
        every_request=frozenset({"mcp"}),
        methods={"tools/call": frozenset({"tools"})},
        tools={"greet": frozenset({"greet"})},
    )
    narrow = StaticTokens({"narrow": "alice"}, scopes=frozenset({"mcp", "greet"}))
    auth = ResourceGuard(
        RESOURCE, Verifiers(static=narrow), authorization_servers=[ISSUER], scopes=rules
    )
    async with running(McpApp.for_server(build_server(), auth=auth)) as client:
        call = request("tools/call", {"name": "greet", "arguments": {"name": "x"}})
        response = await client.post(call, with_token(call, "Bearer narrow"))
    assert response.status == 403
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{METADATA}", error="insufficient_scope", '
        'error_description="tools/call requires the scopes: greet mcp tools", '
        'scope="greet mcp tools"'
    )


async def test_a_notification_needs_the_scopes_of_every_request(client: McpClient) -> None:
    """A-04: a notification is an HTTP request too (authorization §Access Token Usage:
    authorization in every request): a token without the scopes every request needs
    is 403 ``insufficient_scope`` (§Runtime Insufficient Scope Errors), not 202; with
    them it is accepted (streamable-http §Sending Messages)."""
    app = client.app
    assert app.auth is not None
    app.auth.verifier = Verifiers(static=StaticTokens({"none": "carol"}))
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    refused = await client.post(note, with_token(note, "Bearer none"))
    assert refused.status == 403
    assert refused.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{METADATA}", error="insufficient_scope", '
        'error_description="notifications/cancelled requires the scopes: mcp", scope="mcp"'
    )
    app.auth.verifier = Verifiers(static=StaticTokens({"full": "alice"}, scopes=RULES.all()))
    assert (await client.post(note, with_token(note, "Bearer full"))).status == 202


async def test_an_error_description_keeps_to_its_characters(client: McpClient) -> None:
    """A-04: the 403 names the request's method, which the client chose; in the
    challenge every character RFC 6750 §3 does not allow in ``error_description``
    (``"``, ``\\``, beyond ASCII) is a ``?``."""
    app = client.app
    assert app.auth is not None
    app.auth.verifier = Verifiers(static=StaticTokens({"none": "carol"}))
    message = request('say "hi" \\o/')
    response = await client.post(message, with_token(message, "Bearer none"))
    assert response.status == 403
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{METADATA}", error="insufficient_scope", '
        'error_description="say ?hi? ?o/ requires the scopes: mcp", scope="mcp"'
    )


async def test_metadata_document(client: McpClient) -> None:
    """A-01: RFC 9728 metadata at the path-inserted URI and the root, by GET only."""
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        response = await client.post(b"", {"host": "localhost:3000"}, method="GET", path=path)
        assert response.status == 200
        assert response.json() == {
            "resource": RESOURCE,
            "authorization_servers": [ISSUER],
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["mcp"],
        }
    posted = await client.post(
        b"", {"host": "localhost:3000"}, path="/.well-known/oauth-protected-resource"
    )
    assert posted.status == 405


async def test_the_metadata_names_the_resource_when_given_a_name() -> None:
    """A-01: a ``resource_name`` given through the Python API is the document's
    ``resource_name`` (RFC 9728 §2), for a client to show its user."""
    async with running(McpApp.for_server(build_server(), auth=guard(resource_name="Demo"))) as c:
        path = "/.well-known/oauth-protected-resource/mcp"
        response = await c.post(b"", {"host": "localhost:3000"}, method="GET", path=path)
    assert response.json()["resource_name"] == "Demo"


async def test_the_metadata_names_every_authorization_server() -> None:
    """A-01: ``authorization_servers`` lists every issuer given, in order (RFC 9728 §2;
    authorization §Authorization Server Location: the client selects one)."""
    other = "https://other.example.com"
    verifier = Verifiers(static=StaticTokens({"full": "alice"}))
    auth = ResourceGuard(RESOURCE, verifier, authorization_servers=[ISSUER, other])
    async with running(McpApp.for_server(build_server(), auth=auth)) as c:
        path = "/.well-known/oauth-protected-resource/mcp"
        response = await c.post(b"", {"host": "localhost:3000"}, method="GET", path=path)
    assert response.json()["authorization_servers"] == [ISSUER, other]


async def test_the_metadata_keeps_the_dns_rebinding_checks(client: McpClient) -> None:
    """Spec-mandated (streamable-http §Security & Endpoint; spec-notes §4): the document
    beside the endpoint is behind the same Host and Origin checks: a foreign Host is
    421, a foreign Origin 403, as at the endpoint."""
    path = "/.well-known/oauth-protected-resource/mcp"
    foreign_host = await client.post(b"", {"host": "evil.example"}, method="GET", path=path)
    foreign_origin = await client.post(
        b"", {"host": "localhost:3000", "origin": "http://evil.example"}, method="GET", path=path
    )
    assert (foreign_host.status, foreign_origin.status) == (421, 403)


async def test_the_endpoints_dns_rebinding_checks_come_before_the_token(
    client: McpClient,
) -> None:
    """Spec-mandated (streamable-http §Security & Endpoint: an invalid ``Origin`` MUST be
    403; spec-notes §4): at the endpoint a foreign Origin is 403 and a foreign Host 421
    whatever the token, even none: a page that reached the server by DNS rebinding
    gets no challenge, and presa verifies no token for it."""
    message = request("tools/list")
    plain = [(k, v) for k, v in with_token(message) if k not in ("host", "origin")]
    for extra, status in (
        ([("host", "localhost:3000"), ("origin", "http://evil.example")], 403),
        ([("host", "evil.example")], 421),
    ):
        for token in ((), ("Bearer never-issued",), ("Bearer full",)):
            sent = plain + extra + [("authorization", value) for value in token]
            response = await client.post(message, sent)
            assert response.status == status, (extra, token)
            assert "www-authenticate" not in response.headers


async def test_development_tokens_hold_the_scopes_the_server_requires() -> None:
    """A-04: a development token grants every scope the server's rules name (``--auth-
    scope``, ``--auth-tool-scope``), so scope rules can be shown with real tokens."""
    args = parse_args(
        [
            *("serve", "--auth-issuer", ISSUER, "--auth-resource", RESOURCE),
            *("--auth-scope", "mcp", "--auth-tool-scope", "greet=people"),
            *("--auth-token", "alice=alice-secret"),
        ]
    )
    auth = guard_from_args(args, args.host)(3000)
    async with running(McpApp.for_server(build_server(), auth=auth)) as client:
        call = request("tools/call", {"name": "greet", "arguments": {"name": "x"}})
        response = await client.post(call, with_token(call, "Bearer alice-secret"))
    assert response.status == 200


async def test_without_auth_there_is_no_metadata() -> None:
    """A-13: authorization is off by default: no document, no token needed."""
    async with running(McpApp.for_server(build_server())) as client:
        path = "/.well-known/oauth-protected-resource/mcp"
        response = await client.post(b"", {"host": "localhost:3000"}, method="GET", path=path)
        assert response.status == 404
        assert (await client.call("tools/list")).status == 200


def test_loopback_binds() -> None:
    """A-13: which bind addresses count as loopback (others warn without auth)."""
    assert all(map(is_loopback, ["127.0.0.1", "127.5.0.1", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.4", "example.com"]))
    # The names a local server answers to by default are loopback, every one.
    assert all(map(is_loopback, LOOPBACK_HOSTS))


async def test_an_unreachable_issuer_is_503_not_401() -> None:
    """A-06: when the issuer's keys cannot be fetched the token is not judged:
    503 with Retry-After, so a client keeps its token and retries."""
    gone = "http://127.0.0.1:1"
    token = AuthorizationServer(issuer=gone).mint_jwt("alice-app", RESOURCE)
    verifiers = Verifiers(jwt=JwtVerifier(gone, RESOURCE))
    auth = ResourceGuard(RESOURCE, verifiers, authorization_servers=[gone])
    async with running(McpApp.for_server(build_server(), auth=auth)) as client:
        message = request("tools/list")
        response = await client.post(message, with_token(message, f"Bearer {token}"))
    assert response.status == 503
    assert response.headers["retry-after"] == "5"


@pytest.mark.parametrize(
    "flags",
    [
        ["--auth-scope", "mcp"],
        ["--auth-resource", "https://mcp.example.com/mcp"],
        ["--auth-token", "alice=secret"],
        ["--auth-client-id", "presa", "--auth-client-secret", "s"],
        ["--auth-issuer", ISSUER, "--host", "0.0.0.0", "--auth-token", "alice=secret"],
        ["--auth-issuer", ISSUER, "--auth-token", "alice"],
        ["--auth-issuer", ISSUER, "--auth-token", "alice=two words"],
        ["--auth-issuer", ISSUER, "--auth-resource", "mcp.example.com/mcp"],
        ["--auth-issuer", ISSUER, "--auth-resource", "https://mcp.example.com/mcp#part"],
        ["--auth-issuer", ISSUER, "--auth-resource", "https://[::1/mcp"],
        ["--auth-issuer", "auth.example.com", "--auth-token", "a=s"],
        ["--auth-issuer", "https://[::1", "--auth-token", "a=s"],
        ["--auth-issuer", f"{ISSUER}?tenant=1", "--auth-token", "a=s"],
        ["--auth-issuer", f"{ISSUER}#here", "--auth-token", "a=s"],
        ["--auth-issuer", "ftp://auth.example.com", "--auth-token", "a=s"],
        ["--auth-issuer", "https://auth.example.com:99999", "--auth-token", "a=s"],
        [
            *("--auth-issuer", ISSUER, "--auth-client-id", "presa"),
            *("--auth-introspection-endpoint", "/introspect"),
        ],
        ["--auth-issuer", ISSUER, "--auth-resource", "https://mcp.example.com:99999/mcp"],
        ["--auth-issuer", ISSUER, "--auth-resource", "https://mcp.example.com:x/mcp"],
        ["--auth-issuer", ISSUER, "--auth-resource", "https://mcp.example.com:0/mcp"],
        ["--auth-issuer", ISSUER, "--auth-resource", "https://mcp.example.com/my mcp"],
        ["--auth-issuer", ISSUER, "--auth-resource", "https://mcp.example.com/mcp\n"],
        ["--auth-issuer", ISSUER, "--auth-client-id", "presa", "--auth-cache-ttl", "0"],
        ["--auth-issuer", ISSUER, "--auth-token", "a=s", "--auth-scope", "files read"],
        ["--auth-issuer", ISSUER, "--auth-token", "a=s", "--auth-scope", ""],
        ["--auth-issuer", ISSUER, "--auth-token", "a=s", "--auth-scope", "caf\u00e9"],
        ["--auth-issuer", ISSUER, "--auth-token", "a=s", "--auth-tool-scope", 'greet=say"hi'],
        ["--auth-issuer", ISSUER, "--auth-token", "a=s", "--auth-tool-scope", "greet=a\\b"],
    ],
)
def test_incomplete_auth_options_are_refused(flags: list[str]) -> None:
    """A-13, A-14: an ``--auth-*`` option that cannot take effect stops the start, rather
    than serving without authorization; without ``--auth-issuer`` nothing starts, so
    the metadata's ``authorization_servers`` is never empty. A scope must be an RFC
    6749 §3.3 ``scope-token`` (printable ASCII but space, ``"`` and ``\\``): a challenge
    lists scopes separated by spaces, and a token's ``scope`` claim too, so a scope
    with a space could never be held, and every request would be 403."""
    args = parse_args(["serve", *flags])
    assert auth_requested(args)
    with pytest.raises(ValueError, match=r"--auth-|NAME=SECRET"):
        guard_from_args(args, args.host)


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--auth-issuer", "http://auth.example.com"], ["--auth-issuer http://auth.example.com"]),
        (
            [
                *("--auth-issuer", "https://auth.example.com", "--auth-client-id", "presa"),
                *("--auth-introspection-endpoint", "http://10.0.0.5/introspect"),
            ],
            ["--auth-introspection-endpoint http://10.0.0.5/introspect"],
        ),
        (["--auth-issuer", "https://auth.example.com"], []),
        (["--auth-issuer", "http://127.0.0.1:9100"], []),
        (["--auth-issuer", "http://localhost:9000/"], []),
    ],
)
def test_an_authorization_server_in_the_clear_is_warned_of_at_start(
    flags: list[str], named: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A-20 (basic/authorization/security-considerations §Communication Security:
    authorization server endpoints MUST be served over HTTPS): an issuer or an
    introspection endpoint at ``http://`` on a host other than loopback is one
    warning at start naming it, since presa would trust keys, and send tokens and
    its secret, in the clear; https and a loopback server (a local one, the
    tests') are not."""
    args = parse_args(["serve", *flags])
    guard_from_args(args, args.host)
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert [w.split(" is not HTTPS")[0] for w in warned] == named, warned


@pytest.mark.parametrize(
    ("flags", "warned"),
    [
        (["--auth-resource", "http://mcp.example.com/mcp"], True),
        (["--host", "192.168.1.4"], True),
        (["--host", "0.0.0.0", "--auth-resource", "https://mcp.example.com/mcp"], False),
        (["--auth-resource", "http://localhost:3000/mcp"], False),
        ([], False),
    ],
)
def test_a_resource_served_in_the_clear_is_warned_of_at_start(
    flags: list[str], warned: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A-20 (basic/authorization/security-considerations §Communication Security:
    implementations MUST follow OAuth 2.1 §1.5, which protects tokens in transit):
    a resource URI at ``http://`` on a host other than loopback, given or made
    from ``--host``, is one warning at start, since clients would send their
    access tokens in the clear; https (a proxy's TLS) and loopback are not."""
    args = parse_args(["serve", "--auth-issuer", "https://auth.example.com", *flags])
    guard_from_args(args, args.host)
    told = [r.getMessage() for r in caplog.records if "tokens in the clear" in r.getMessage()]
    assert len(told) == warned, told


def test_default_resource_and_metadata_url() -> None:
    """A-01: without ``--auth-resource`` the canonical URI is the served endpoint."""
    args = parse_args(["serve", "--port", "3911", "--auth-issuer", ISSUER, "--auth-token", "a=s"])
    built = guard_from_args(args, args.host)(args.port)
    assert built.resource == "http://127.0.0.1:3911/mcp"
    assert built.metadata_url == "http://127.0.0.1:3911/.well-known/oauth-protected-resource/mcp"
    assert not auth_requested(parse_args(["serve"]))


def test_a_guard_names_an_authorization_server() -> None:
    """A-14: the metadata MUST name one, so a guard without one cannot be built."""
    with pytest.raises(ValueError, match="at least one authorization server"):
        ResourceGuard(RESOURCE, Verifiers(), authorization_servers=[])
    assert guard().metadata()["authorization_servers"] == [ISSUER]


async def test_the_default_resource_of_an_ipv6_bind_is_a_uri() -> None:
    """A-01: with ``--host ::1`` and no ``--auth-resource``, the resource the metadata
    and the challenge name is ``http://[::1]:PORT/mcp``: an IPv6 literal is bracketed
    in a URI (RFC 3986 §3.2.2), so clients can resolve it and ask for tokens for it."""
    args = parse_args(["serve", "--host", "::1", "--auth-issuer", ISSUER, "--auth-token", "a=s"])
    built = guard_from_args(args, args.host)(3000)
    async with running(McpApp.for_server(build_server(), auth=built)) as client:
        path = "/.well-known/oauth-protected-resource/mcp"
        document = await client.post(b"", {"host": "[::1]:3000"}, method="GET", path=path)
        message = request("tools/list")
        refused = await client.post(message, {**headers_for(message), "host": "[::1]:3000"})
    assert document.status == 200
    assert document.json()["resource"] == "http://[::1]:3000/mcp"
    assert refused.status == 401
    assert refused.headers["www-authenticate"] == (
        'Bearer resource_metadata="http://[::1]:3000/.well-known/oauth-protected-resource/mcp"'
    )


async def challenged_then_served(
    resource: str, path: str, query: bytes = b""
) -> tuple[Response, Response]:
    """A tokenless ``tools/list`` to a server guarding ``resource`` (its 401), then a GET
    of ``path`` with ``query`` from it (the metadata document, or not)."""
    auth = ResourceGuard(
        resource, Verifiers(static=StaticTokens({"t": "a"})), authorization_servers=[ISSUER]
    )
    async with running(McpApp.for_server(build_server(), auth=auth)) as client:
        message = request("tools/list")
        refused = await client.post(message, with_token(message))
        document = await client.post(
            b"", {"host": "localhost:3000"}, method="GET", path=path, query=query
        )
    return refused, document


async def test_the_metadata_url_keeps_the_resources_query() -> None:
    """A-01: the well-known string goes between the host and the path and query of
    the resource (RFC 9728 §3.1), so a resource with a query names a metadata URL
    with it; the document served there names the resource, query and all."""
    resource = "http://localhost:3000/mcp?tenant=a"
    path = "/.well-known/oauth-protected-resource/mcp"
    refused, document = await challenged_then_served(resource, path, query=b"tenant=a")
    assert refused.headers["www-authenticate"] == (
        'Bearer resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource'
        '/mcp?tenant=a"'
    )
    assert document.status == 200
    assert document.json()["resource"] == resource


async def test_the_metadata_of_a_percent_encoded_resource_path_is_served_where_named() -> None:
    """A-01: the challenge's ``resource_metadata`` (RFC 9728 §5.1) keeps the resource's
    path as written, percent-encoding and all (§3.1), and the document is served at
    that URL: the server receives the path percent-decoded (ASGI's ``path``), as
    ``…/café/mcp`` for ``…/caf%C3%A9/mcp``, and must not answer it 404."""
    resource = "http://localhost:3000/caf%C3%A9/mcp"
    path = "/.well-known/oauth-protected-resource/café/mcp"
    refused, document = await challenged_then_served(resource, path)
    assert refused.headers["www-authenticate"] == (
        'Bearer resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource'
        '/caf%C3%A9/mcp"'
    )
    assert document.status == 200
    assert document.json()["resource"] == resource


def test_a_scope_rule_names_scope_tokens() -> None:
    """A-04: the Python API refuses a scope that is no RFC 6749 §3.3 ``scope-token``,
    wherever it is named: every request's, a method's, a tool's."""
    rules: dict[str, Any]
    for rules in (
        {"every_request": frozenset({"files read"})},
        {"methods": {"prompts/list": frozenset({""})}},
        {"tools": {"greet": frozenset({"caf\u00e9"})}},
    ):
        with pytest.raises(ValueError, match="scope-token"):
            ScopeRules(**rules)


async def test_a_broader_scope_holds_the_narrower_ones_it_implies() -> None:
    """A-04: a token with a broader scope holds the narrower ones it implies, for a
    method, a tool and every request alike (authorization §Step-Up Authorization
    Flow: servers MUST account for scope hierarchies); the hierarchy is the
    server's, given with ``--auth-scope-implies BROAD=NARROW`` (repeatable, and
    followed through: ``admin`` implies ``files`` implies ``files:read``)."""
    args = parse_args(
        [
            *("serve", "--auth-issuer", ISSUER, "--auth-resource", RESOURCE),
            *("--auth-scope", "mcp", "--auth-tool-scope", "greet=files:read"),
            *("--auth-scope-implies", "files=files:read", "--auth-scope-implies", "admin=files"),
            *("--auth-scope-implies", "admin=mcp", "--auth-token", "a=s"),
        ]
    )
    auth = guard_from_args(args, args.host)(3000)
    held = {
        "files": frozenset({"mcp", "files"}),
        "admin": frozenset({"admin"}),
        "reader": frozenset({"files:read"}),
    }
    async with running(McpApp.for_server(build_server(), auth=auth)) as client:
        call = request("tools/call", {"name": "greet", "arguments": {"name": "x"}})
        statuses = {}
        for token, scopes in held.items():
            auth.verifier = Verifiers(static=StaticTokens({token: token}, scopes=scopes))
            response = await client.post(call, with_token(call, f"Bearer {token}"))
            statuses[token] = response.status
    assert statuses == {"files": 200, "admin": 200, "reader": 403}
