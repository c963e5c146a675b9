"""Startup checks the wiring: a configuration that cannot work says so, in one line.

presa fetches the issuer's metadata and keys at start. An issuer the
metadata does not name exactly, or an introspection endpoint nobody names,
is one log line at start and 500 (not 503) on use; only an authorization
server that cannot be reached is 503. Introspection authenticates as the
server's metadata says, with no secret where it takes none.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from urllib.parse import urlsplit

import httpx
import trio

from tests.auth import scenarios
from tests.auth.authorization_server import METADATA_PATHS, AuthorizationServer, Client
from tests.auth.harness import Presa, start_presa, token_from_endpoint
from tests.e2e.serve_process import presa_serve

CANNOT_WORK = "authorization cannot work: "


async def log_lines(presa: Presa, marker: str) -> list[str]:
    """The lines of presa's log holding ``marker``, once there is one (within 10 s)."""
    assert presa.log is not None
    with trio.fail_after(10):
        await presa.log.wait_for_line(re.escape(marker))
    return [line for line in presa.log.lines if marker in line]


def test_authorization_without_an_issuer_does_not_start() -> None:
    """A-14: one line on stderr, exit status 2."""
    flags = ["--auth-client-id", "presa", "--auth-introspection-endpoint", "http://127.0.0.1:1/i"]
    done = subprocess.run(
        [sys.executable, "-m", "presa_trio", "serve", "--port", "0", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "--auth-issuer" in done.stderr


async def test_an_issuer_that_differs_is_one_line_at_start(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-17: the metadata names ``…/`` but presa was given the issuer without the
    slash: one line at start saying both, and 500 (not 401, not 503) on use; the
    failure is repeated from memory for a while, so requests do not make presa ask
    the issuer's metadata again each time."""
    issuer.metadata_changes["issuer"] = issuer.issuer + "/"
    presa = await start_presa(nursery, http, ["--auth-issuer", issuer.issuer])
    [line] = await log_lines(presa, CANNOT_WORK)
    assert f"'{issuer.issuer}/', not '{issuer.issuer}'" in line
    assert "exactly" in line
    asked = dict(issuer.hits)
    token = issuer.mint_jwt("alice-app", presa.resource)
    for _ in range(2):
        response = await presa.call("tools/list", token=token)
        assert response.status_code == 500
        assert "misconfigured" in response.text
    assert len(await log_lines(presa, CANNOT_WORK)) == 1
    assert issuer.hits == asked


async def test_no_introspection_endpoint_is_one_line_at_start(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-17: the metadata names no introspection endpoint and no flag does."""
    issuer.metadata_changes["introspection_endpoint"] = None
    flags = ["--auth-issuer", issuer.issuer, "--auth-client-id", "presa"]
    flags += ["--auth-client-secret", issuer.secret("presa")]
    presa = await start_presa(nursery, http, flags)
    [line] = await log_lines(presa, CANNOT_WORK)
    assert "names no introspection_endpoint" in line
    assert "--auth-introspection-endpoint" in line
    token = issuer.mint_opaque("alice-opaque", presa.resource)
    assert (await presa.call("tools/list", token=token)).status_code == 500
    # Named by the flag, the same endpoint works.
    endpoint = ["--auth-introspection-endpoint", issuer.issuer + "/introspect"]
    fixed = await start_presa(nursery, http, [*flags, *endpoint])
    await scenarios.calls_a_tool(fixed, issuer.mint_opaque("alice-opaque", fixed.resource))


async def test_an_unreachable_issuer_is_503_and_one_warning(
    nursery: trio.Nursery, http: httpx.AsyncClient
) -> None:
    """A-17: an issuer that does not answer is temporary: 503 with Retry-After."""
    gone = "http://127.0.0.1:1"
    presa = await start_presa(nursery, http, ["--auth-issuer", gone])
    await log_lines(presa, "authorization server unreachable at start")
    token = AuthorizationServer(issuer=gone).mint_jwt("alice-app", presa.resource)
    response = await presa.call("tools/list", token=token)
    assert response.status_code == 503
    assert int(response.headers["retry-after"]) >= 1


async def test_a_token_its_claims_refuse_is_401_while_the_issuer_is_unreachable(
    nursery: trio.Nursery, http: httpx.AsyncClient
) -> None:
    """A-08, A-17: an expired token, or one for another resource, is invalid whatever
    the issuer would say: 401 ``invalid_token`` even while the issuer cannot be reached
    (authorization §Token Handling: "Invalid or expired tokens MUST receive a HTTP 401
    response"), never the 503 that tells the client to keep it and retry."""
    gone = "http://127.0.0.1:1"
    presa = await start_presa(nursery, http, ["--auth-issuer", gone])
    await log_lines(presa, "authorization server unreachable at start")
    minter = AuthorizationServer(issuer=gone)
    expired = minter.mint_jwt("alice-app", presa.resource, issued_at=int(time.time()) - 4000)
    assert "expired" in await scenarios.refuses_invalid_token(presa, expired)
    elsewhere = minter.mint_jwt("alice-app", "https://other.example.com/mcp")
    assert "resource" in await scenarios.refuses_invalid_token(presa, elsewhere)


async def test_an_issuer_whose_metadata_fails_is_503_not_500(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-17: metadata answered with HTTP 503 at every well-known URI is an issuer
    failing for now, not a configuration that cannot work: 503 with Retry-After on
    use (the client keeps its token and retries), never 500."""
    for path in METADATA_PATHS:
        issuer.statuses[path] = 503
    presa = await start_presa(nursery, http, ["--auth-issuer", issuer.issuer])
    await log_lines(presa, "authorization server unreachable at start")
    token = issuer.mint_jwt("alice-app", presa.resource)

    response = await presa.call("tools/list", token=token)

    assert response.status_code == 503
    assert int(response.headers["retry-after"]) >= 1


async def test_introspection_follows_the_servers_client_authentication(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-18: ``client_secret_post`` when that is all the server takes; ``none`` with no
    secret at all when it takes that."""
    issuer.introspection_methods = ("client_secret_post",)
    flags = ["--auth-issuer", issuer.issuer, "--auth-client-id", "presa"]
    posting = await start_presa(
        nursery, http, [*flags, "--auth-client-secret", issuer.secret("presa")]
    )
    token = await token_from_endpoint(http, issuer, "alice-opaque", posting.resource)
    await scenarios.calls_a_tool(posting, token)
    issuer.introspection_methods = ("none",)
    public = await start_presa(nursery, http, flags)
    token = await token_from_endpoint(http, issuer, "alice-opaque", public.resource)
    await scenarios.calls_a_tool(public, token)
    assert issuer.hits["/introspect"] == 2


async def test_an_introspection_endpoint_refusing_presa_is_500_and_one_line(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-17, A-18: an introspection endpoint that refuses presa itself (401
    ``invalid_client``: a wrong client secret) says nothing of the token; no retry
    can help, so it is 500, not 401 nor 503, and one line in the log naming it."""
    flags = ["--auth-issuer", issuer.issuer, "--auth-client-id", "presa"]
    presa = await start_presa(nursery, http, [*flags, "--auth-client-secret", "not-the-secret"])
    token = issuer.mint_opaque("alice-opaque", presa.resource)

    response = await presa.call("tools/list", token=token)

    assert response.status_code == 500
    [line] = await log_lines(presa, "refused presa's request")
    assert "HTTP 401" in line


async def test_basic_credentials_are_form_urlencoded_first(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-18: with ``client_secret_basic`` the client id and secret are each
    form-urlencoded before they are joined with ``:`` (RFC 6749 §2.3.1), so an id
    holding ``:`` and a secret holding ``%`` reach the introspection endpoint intact."""
    issuer.clients["presa:rs"] = Client("s%41:2", "presa")
    flags = ["--auth-issuer", issuer.issuer, "--auth-client-id", "presa:rs"]
    presa = await start_presa(nursery, http, [*flags, "--auth-client-secret", "s%41:2"])

    await scenarios.calls_a_tool(presa, issuer.mint_opaque("alice-opaque", presa.resource))


async def test_an_opaque_token_in_jwt_mode_is_named_and_logged_once(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-17: the token is refused saying presa takes JWTs only; the log says, once,
    that introspection would be needed."""
    presa = await start_presa(nursery, http, ["--auth-issuer", issuer.issuer])
    opaque = await token_from_endpoint(http, issuer, "alice-opaque", presa.resource)
    for _ in range(2):
        description = await scenarios.refuses_invalid_token(presa, opaque)
        assert "JWT" in description
    [line] = await log_lines(presa, "not a JWT")
    assert "--auth-client-id" in line


async def test_port_0_names_the_port_bound(
    http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-01, A-02: with ``--port 0`` and no ``--auth-resource``, the metadata's
    ``resource``, the challenge's ``resource_metadata`` and the audience a token
    must name carry the port the server bound, never port 0."""
    async with presa_serve("--auth-issuer", issuer.issuer) as served:
        presa = Presa(served.url, http, served.process)
        port = urlsplit(served.url).port
        assert port
        metadata_url = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
        metadata = await http.get(metadata_url)
        assert metadata.json()["resource"] == f"http://127.0.0.1:{port}/mcp" == served.url
        challenged = await presa.call("tools/list")
        assert challenged.status_code == 401
        challenge = challenged.headers["www-authenticate"]
        assert f'resource_metadata="{metadata_url}"' in challenge
        answered = await presa.call("tools/list", token=issuer.mint_jwt("alice-app", served.url))
        assert answered.status_code == 200, answered.text
        for_port_0 = issuer.mint_jwt("alice-app", "http://127.0.0.1:0/mcp")
        assert (await presa.call("tools/list", token=for_port_0)).status_code == 401
