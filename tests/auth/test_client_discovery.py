"""Sign-in against endpoints that answer their 401 in every way the spec allows, and some
it does not: ``presa-trio login`` with the tests' authorization server.

The endpoint (:mod:`tests.auth.protected_resource`) publishes its protected
resource metadata where a test puts it and challenges as the test says; the
client must find the metadata, refuse metadata that is for another
resource, and refuse an authorization server that cannot do PKCE, before
the person is asked anything.

Spec: 2026-07-28 basic/authorization/authorization-server-discovery,
basic/authorization/security-considerations §Authorization Code Protection.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
import trio

from presa_trio.client.options import CLIENT_SECRET_ENV
from presa_trio.client.tokens import CONFIG_ENV
from tests.auth.authorization_server import AuthorizationServer, Client
from tests.auth.protected_resource import ProtectedResource
from tests.auth.signing_in import Browser, consent, login
from tests.client.helpers import client, client_environment

#: RFC 9728 §3.1: the well-known URI with the endpoint's path inserted.
AT_PATH = "/.well-known/oauth-protected-resource/mcp"


def protect(
    resource: ProtectedResource,
    issuer: AuthorizationServer,
    *,
    named: str | None = None,
    at: str = AT_PATH,
    challenge: str = 'Bearer resource_metadata="{metadata}"',
) -> None:
    """Publish ``resource``'s metadata at ``at``, naming ``named`` (default: itself) and
    ``issuer``; its 401 challenges as ``challenge`` says, the metadata URL filled in."""
    resource.documents[at] = {
        "resource": named or resource.url,
        "authorization_servers": [issuer.issuer],
    }
    resource.challenge = challenge.format(metadata=resource.origin + at)


def environment(tmp_path: Path) -> dict[str, str]:
    return {**client_environment(), CONFIG_ENV: str(tmp_path)}


def kept(tmp_path: Path) -> dict[str, Any]:
    [record] = (tmp_path / "tokens").iterdir()
    found: dict[str, Any] = json.loads(record.read_text())
    return found


def not_the_endpoint(resource: ProtectedResource) -> list[str]:
    """Resources whose URL begins the endpoint's, yet are other servers: another port
    (``:4`` begins ``:4NNNN``), another path (``/mc`` begins ``/mcp``), the endpoint with
    a query it does not have; and the endpoint with a fragment, which is no resource
    identifier."""
    port = resource.origin.rsplit(":", 1)[1]
    return [
        resource.origin[: -len(port) + 1],
        resource.origin + "/mc",
        resource.url + "#frag",
        resource.url + "?tenant=other",
    ]


@pytest.mark.parametrize(
    "which", [0, 1, 2, 3], ids=["shorter-port", "shorter-path", "fragment", "other-query"]
)
async def test_metadata_for_a_resource_other_than_the_endpoint_is_refused(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    which: int,
) -> None:
    """Spec-mandated (RFC 9728 §3.3, §7.3): the metadata's ``resource`` must be the
    endpoint (or, from the root well-known URI, its origin); a token asked for another
    server is never asked for, so never sent to this one. One with a fragment is no
    canonical URI (basic/authorization §Canonical Server URI; RFC 8707 §2, RFC 9728
    §2), so no ``resource`` with a fragment is ever sent."""
    protect(resource, issuer, named=not_the_endpoint(resource)[which])

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert "resource metadata" in said
    assert "/authorize" not in issuer.hits
    assert "/token" not in issuer.hits


async def test_metadata_from_the_root_may_name_the_origin(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """authorization-server-discovery §Protected Resource Metadata Discovery Requirements:
    no ``resource_metadata`` in the challenge, nothing at the path, so the root; its
    ``resource`` is the origin, a prefix of the endpoint at a path boundary."""
    protect(resource, issuer, named=resource.origin, at="/.well-known/oauth-protected-resource")
    resource.challenge = "Bearer"

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 0, said
    assert kept(tmp_path)["resource"] == resource.origin
    asked = [s.path for s in resource.seen if s.method == "GET"]
    assert asked == [AT_PATH, "/.well-known/oauth-protected-resource"]


@pytest.mark.parametrize(
    "methods", [None, ["plain"], "S256"], ids=["absent", "plain-only", "not-an-array"]
)
async def test_an_authorization_server_without_pkce_s256_is_refused(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    methods: list[str] | str | None,
) -> None:
    """Spec-mandated (security-considerations §Authorization Code Protection): with no
    ``code_challenge_methods_supported`` (or one that is no array, RFC 8414 §2) the
    client refuses to proceed, and it uses
    ``S256``, so a server that lists only ``plain`` is refused too; nothing is registered
    and no one is asked to sign in."""
    issuer.metadata_changes["code_challenge_methods_supported"] = methods
    protect(resource, issuer)

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert "S256" in said
    assert "/register" not in issuer.hits
    assert "/authorize" not in issuer.hits


@pytest.mark.parametrize(
    "challenge",
    [
        'bearer resource_metadata="{metadata}", scope="files:read"',
        'Basic realm="mcp", Bearer resource_metadata="{metadata}", scope="files:read"',
        'Bearer Resource_Metadata="{metadata}", SCOPE="files:read"',
        'Bearer scope="files:read", error_description="a, scope=admin", '
        'resource_metadata="{metadata}"',
        'Bearer scope=files:read,resource_metadata="{metadata}",'
        'error_description="say \\"hello, scope=admin\\""',
        'Negotiate YIIBhgY=, Bearer resource_metadata="{metadata}", scope="files:read"',
        'Bearer scope="files:read", resource_metadata="{metadata}", scope="admin"',
    ],
    ids=[
        "scheme-case",
        "two-challenges",
        "name-case",
        "comma-in-quotes",
        "escaped-quote",
        "token68-before",
        "first-of-repeated",
    ],
)
async def test_the_challenge_is_read_as_rfc_9110_writes_it(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    challenge: str,
) -> None:
    """Spec-mandated (authorization-server-discovery: clients MUST be able to parse
    ``WWW-Authenticate``; RFC 9110 §11.6.1): the scheme and parameter names in any case,
    the Bearer challenge among others (after one whose credentials are a token68),
    commas and escaped quotes inside quoted strings; of a parameter given twice, which
    §11.2 forbids, the first counts. The metadata is published where only the challenge
    says, and the scope asked is the challenge's."""
    protect(resource, issuer, at="/metadata/for/mcp", challenge=challenge)

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 0, said
    assert kept(tmp_path)["scope"] == "files:read"


async def test_signing_in_again_with_a_kept_registration_uses_its_redirect_uri(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """Spec-mandated (security-considerations §Open Redirection: the authorization server
    matches the redirect URI exactly against those registered): a second sign-in that
    reuses the registration kept from the first (client-registration §Authorization
    Server Binding) comes back to the redirect URI registered, not to a new port."""
    protect(resource, issuer)
    env = environment(tmp_path)
    first, said = await login(resource.url, http, env)
    assert first == 0, said
    registered = kept(tmp_path)["client"]["client_id"]

    again, said = await login(resource.url, http, env)

    assert again == 0, said
    assert kept(tmp_path)["client"]["client_id"] == registered
    assert issuer.hits["/register"] == 1


async def test_a_kept_registration_whose_port_is_taken_is_replaced(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """The registered redirect port held by another program: the client registers anew
    with a port it can listen on, rather than send the person to a redirect URI the
    server does not know."""
    protect(resource, issuer)
    env = environment(tmp_path)
    first, said = await login(resource.url, http, env)
    assert first == 0, said
    before = kept(tmp_path)["client"]
    port = urlsplit(before["redirect_uri"]).port
    assert port is not None

    with trio.socket.socket() as squatter:
        # Its last connection may linger in TIME_WAIT, as the client's listener allows too.
        squatter.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEADDR, 1)
        await squatter.bind(("127.0.0.1", port))
        squatter.listen()
        again, said = await login(resource.url, http, env)

    assert again == 0, said
    assert kept(tmp_path)["client"]["client_id"] != before["client_id"]
    assert issuer.hits["/register"] == 2


@pytest.mark.parametrize("sent", [b"", b"GET /\xff HTTP/1.1\r\n\r\n"], ids=["nothing", "no-utf-8"])
async def test_another_connection_to_the_redirect_does_not_hold_it_up(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    sent: bytes,
) -> None:
    """RFC 8252 §7.3: the loopback listener gets the browser's request while another
    connection to it is open and silent (a browser's speculative preconnect) or has
    sent a request that is no UTF-8 and carries no answer."""
    protect(resource, issuer)

    async def preconnecting(http: httpx.AsyncClient, url: str) -> httpx.Response:
        redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        other = await trio.open_tcp_stream("127.0.0.1", urlsplit(redirect).port or 80)
        async with other:
            if sent:
                await other.send_all(sent)
            return await consent(http, url)

    status, said = await login(resource.url, http, environment(tmp_path), preconnecting)

    assert status == 0, said


async def test_a_request_to_the_redirect_without_the_state_sent_is_discarded(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """Spec-mandated (security-considerations §Open Redirection: clients discard results
    that do not include, or mismatch, the original state): requests to the loopback
    redirect before the browser's (a forged code with another state, none, another
    path) are answered as not the sign-in's, their code is never sent to the token
    endpoint, and the sign-in goes on to the real answer."""
    protect(resource, issuer)
    strays: list[httpx.Response] = []

    async def forged_first(http: httpx.AsyncClient, url: str) -> httpx.Response:
        query = parse_qs(urlsplit(url).query)
        redirect, state = query["redirect_uri"][0], query["state"][0]
        origin = redirect.removesuffix("/callback")
        for target in (
            f"{redirect}?code=forged&state=not-{state}&iss={issuer.issuer}",
            f"{redirect}?code=forged&iss={issuer.issuer}",
            f"{origin}/favicon.ico?code=forged&state={state}&iss={issuer.issuer}",
        ):
            strays.append(await http.get(target))
        return await consent(http, url)

    status, said = await login(resource.url, http, environment(tmp_path), forged_first)

    assert status == 0, said
    assert [s.status_code for s in strays] == [200, 200, 200]
    assert all("not the answer" in s.text for s in strays)
    assert issuer.hits["/token"] == 1
    assert kept(tmp_path)["access_token"]


def answered_with(change: dict[str, str | None]) -> Browser:
    """A browser that brings back the authorization server's answer with ``change`` made
    to its query (a member set, or removed when None): a forged or altered answer."""

    async def browse(http: httpx.AsyncClient, url: str) -> httpx.Response:
        redirect = (await http.get(url)).headers["location"]
        base, _, query = redirect.partition("?")
        answer = {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}
        answer.update({k: v for k, v in change.items() if v is not None})
        kept_members = {k: v for k, v in answer.items() if change.get(k, v) is not None}
        return await http.get(base + "?" + urlencode(kept_members))

    return browse


@pytest.mark.parametrize(
    ("advertised", "change", "refusal"),
    [
        (True, {"iss": "https://honest.example"}, "names another issuer"),
        (True, {"iss": None}, "lacks the iss it must carry"),
        (None, {"iss": "https://honest.example"}, "names another issuer"),
        (None, {"iss": None}, None),
        (True, {"iss": "{issuer}/"}, "names another issuer"),
        (True, {"iss": "{ISSUER}"}, "names another issuer"),
        (True, {"iss": "{issuer%}"}, "names another issuer"),
        (
            True,
            {"iss": "https://honest.example", "code": None, "error": "access_denied"},
            "names another issuer",
        ),
        (True, {"code": None, "error": "access_denied"}, "authorization refused: access_denied"),
    ],
    ids=[
        "other-advertised",
        "absent-advertised",
        "other-not-advertised",
        "absent-not-advertised",
        "trailing-slash",
        "scheme-case",
        "percent-encoded",
        "error-from-another",
        "error",
    ],
)
async def test_the_answers_iss_is_checked_as_the_specs_table_says(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    advertised: bool | None,
    change: dict[str, str | None],
    refusal: str | None,
) -> None:
    """Spec-mandated (basic/authorization §Authorization Response Validation, RFC 9207
    §2.4): a present ``iss`` is compared with the recorded issuer exactly (no trailing
    slash added or removed, no case folded, no percent-encoding decoded past the
    query's own: RFC 3986 §6.2.1), whether or not the metadata advertises it; an absent one is
    refused only when advertised; and an error from another issuer is not shown. The
    code is never sent to the token endpoint of a refused answer."""
    issuer.metadata_changes["authorization_response_iss_parameter_supported"] = advertised
    protect(resource, issuer)
    spellings = {
        "{issuer}": issuer.issuer,
        "{ISSUER}": issuer.issuer.upper(),  # HTTP://127.0.0.1:PORT
        "{issuer%}": issuer.issuer.replace(".1:", ".%31:"),  # 1 percent-encoded
    }

    def spelt(value: str) -> str:
        for placeholder, spelling in spellings.items():
            value = value.replace(placeholder, spelling)
        return value

    filled = {k: v if v is None else spelt(v) for k, v in change.items()}

    status, said = await login(resource.url, http, environment(tmp_path), answered_with(filled))

    if refusal is None:
        assert status == 0, said
        return
    assert status == 3, said
    assert refusal in said.rstrip().splitlines()[-1], said
    assert "access_denied" not in said or "iss" not in change
    assert "/token" not in issuer.hits


@pytest.mark.parametrize(
    ("member", "value"),
    [
        ("authorization_endpoint", "file:///authorize"),
        ("authorization_endpoint", None),
        ("token_endpoint", "file:///token"),
        # Control characters no URI holds (RFC 3986 §2): printed, they would drive the
        # person's terminal.
        ("authorization_endpoint", "https://as.example/authorize\x1b]0;owned\x07"),
    ],
)
async def test_an_endpoint_that_is_no_http_url_stops_the_sign_in_before_the_browser(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    member: str,
    value: str | None,
) -> None:
    """security-considerations §Communication Security (the authorization server's
    endpoints are served over HTTP(S)): the authorization URL is opened in the person's
    browser, so one of another scheme (``file:``, an application's own) is never opened,
    nor anything else sent to a server whose metadata names one, nor printed."""
    issuer.metadata_changes[member] = value
    protect(resource, issuer)

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert member in said
    assert "Open this URL" not in said
    assert "\x1b" not in said
    assert "/register" not in issuer.hits


#: An authorization server's URL in the clear off loopback (RFC 2606: it resolves nowhere).
OFF_LOOPBACK = "http://auth.example.invalid"


@pytest.mark.parametrize(
    "member", ["authorization_endpoint", "token_endpoint", "registration_endpoint"]
)
async def test_an_endpoint_in_the_clear_off_loopback_stops_the_sign_in_before_the_browser(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    member: str,
) -> None:
    """Spec-mandated (security-considerations §Communication Security: "All
    authorization server endpoints MUST be served over HTTPS"): an endpoint at
    ``http://`` on a host that is not loopback is refused in one line before anything
    is sent to it or the person is asked; the tests' loopback server is exempt."""
    issuer.metadata_changes[member] = f"{OFF_LOOPBACK}/{member}"
    protect(resource, issuer)

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert said.count("\n") == 1, said
    assert f"{member} {OFF_LOOPBACK}/{member} is not https" in said
    assert "Open this URL" not in said
    assert "/register" not in issuer.hits


async def test_an_authorization_server_in_the_clear_off_loopback_is_not_asked(
    resource: ProtectedResource, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Spec-mandated (security-considerations §Communication Security; RFC 8414 §2: the
    issuer is an ``https`` URL): a resource whose metadata names an authorization server
    at ``http://`` off loopback gets no request for that server's metadata."""
    resource.documents[AT_PATH] = {
        "resource": resource.url,
        "authorization_servers": [OFF_LOOPBACK],
    }
    resource.challenge = f'Bearer resource_metadata="{resource.origin}{AT_PATH}"'

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert f"the authorization server {OFF_LOOPBACK} is not https" in said


async def test_an_authorization_server_that_never_answers_is_given_up_on(
    nursery: trio.Nursery, resource: ProtectedResource, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """A sign-in's exchanges are bound by ``--timeout``, as a plain request is: an
    authorization server that takes the connection and says nothing ends the sign-in
    with one line, rather than holding the command for ever."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")

    async def silent(stream: trio.SocketStream) -> None:
        async with stream:
            await trio.sleep_forever()

    nursery.start_soon(trio.serve_listeners, silent, listeners)
    port = listeners[0].socket.getsockname()[1]
    resource.documents[AT_PATH] = {
        "resource": resource.url,
        "authorization_servers": [f"http://127.0.0.1:{port}"],
    }
    resource.challenge = f'Bearer resource_metadata="{resource.origin}{AT_PATH}"'

    status, said = await login(resource.url, http, environment(tmp_path), consent, "--timeout", "1")

    assert status == 3, said
    assert "publishes no authorization server metadata" in said


async def test_a_token_of_a_type_the_client_does_not_send_is_not_kept(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """Spec-mandated (basic/authorization §Token Requirements: the token goes as
    ``Authorization: Bearer``; RFC 6749 §7.1: a client does not use a token whose type it
    does not understand): a ``DPoP`` token, bound to a key the client does not have, is
    neither kept nor sent as a bearer token."""
    issuer.token_type = "DPoP"
    protect(resource, issuer)

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert "DPoP" in said
    assert not (tmp_path / "tokens").exists()


async def test_a_token_in_an_answer_that_is_no_success_is_not_kept(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """Spec-mandated (RFC 6749 §5.1: a successful token response is HTTP 200; §5.2: an
    error is 400): a token endpoint's 400, whatever its body holds (an access token
    here), is a refusal, and nothing is kept or sent."""
    issuer.statuses["/token"] = 400
    protect(resource, issuer)

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert "the token endpoint refused: HTTP 400" in said
    assert not (tmp_path / "tokens").exists()


@pytest.mark.parametrize(
    "access_token",
    [None, 42, "", "two words", "caf\u00e9", "line\nbreak"],
    ids=["null", "number", "empty", "space", "not-ascii", "newline"],
)
async def test_an_access_token_no_header_can_carry_is_not_kept(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    access_token: Any,
) -> None:
    """Spec-mandated (basic/authorization §Token Requirements: the token goes as
    ``Authorization: Bearer``, whose token is an RFC 6750 §2.1 ``b64token``): a token
    response whose ``access_token`` is no such string ends the sign-in in one line, and
    nothing is kept that a later command would fail to send, or send as ``Bearer None``."""
    protect(resource, issuer)
    answer = {"access_token": access_token, "token_type": "Bearer", "expires_in": 300}
    issuer.bodies["/token"] = json.dumps(answer).encode()

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert "no header can carry" in said
    assert not (tmp_path / "tokens").exists()


@pytest.mark.parametrize(
    ("path", "status", "body", "said"),
    [
        (
            "/register",
            500,
            b"<html>oops</html>",
            "registration at {issuer}/register was refused: HTTP 500",
        ),
        (
            "/register",
            400,
            b'{"error": "invalid_redirect_uri", "error_description": "no loopback"}',
            "registration at {issuer}/register was refused: HTTP 400 "
            '{"error": "invalid_redirect_uri", "error_description": "no loopback"}',
        ),
        ("/token", 502, b"<html>bad gateway</html>", "the token endpoint refused: HTTP 502"),
    ],
    ids=["registration-not-json", "registration-error", "token-not-json"],
)
async def test_a_refusal_says_its_status_and_why(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    path: str,
    status: int,
    body: bytes,
    said: str,
) -> None:
    """client-registration §Dynamic Client Registration (a rejected registration is
    surfaced as a meaningful error), RFC 6749 §5.2, RFC 7591 §3.2.2: the line ends with
    the HTTP status and the answer's error, if it is JSON; a page that is none is not
    shown as ``None``."""
    protect(resource, issuer)
    issuer.statuses[path], issuer.bodies[path] = status, body

    code, printed = await login(resource.url, http, environment(tmp_path))

    assert code == 3, printed
    assert printed.rstrip().endswith(said.replace("{issuer}", issuer.issuer)), printed


async def test_a_granted_scope_that_is_no_string_is_taken_as_the_one_asked_for(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """RFC 6749 §5.1 (``scope``: a space-delimited string, absent when it is the scope
    asked for): a token response whose ``scope`` is a list is kept as the scope asked
    for, and a step-up later asks for the union with it, not a stack trace."""
    protect(resource, issuer, challenge='Bearer resource_metadata="{metadata}", scope="mcp"')
    answer = {"access_token": "first", "token_type": "Bearer", "scope": ["mcp", "extra"]}
    issuer.bodies["/token"] = json.dumps(answer).encode()
    env = environment(tmp_path)
    status, said = await login(resource.url, http, env)
    assert status == 0, said
    assert kept(tmp_path)["scope"] == "mcp"
    resource.challenge = (
        f'Bearer error="insufficient_scope", scope="files:write", '
        f'resource_metadata="{resource.origin}{AT_PATH}"'
    )
    asked: list[str] = []

    async def step_up(http: httpx.AsyncClient, url: str) -> httpx.Response:
        asked.append(parse_qs(urlsplit(url).query)["scope"][0])
        issuer.bodies["/token"] = json.dumps({**answer, "access_token": "second"}).encode()
        return await consent(http, url)

    status, said = await login(resource.url, http, env, step_up)

    assert status == 0, said
    assert asked == ["files:write mcp"]
    assert kept(tmp_path)["access_token"] == "second"


@pytest.mark.parametrize("methods", [5, "none", {"none": True}], ids=["number", "string", "object"])
async def test_auth_methods_that_are_no_list_are_the_default_one(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    methods: Any,
) -> None:
    """RFC 8414 §2: ``token_endpoint_auth_methods_supported`` is a JSON array, and when
    it is not given the default is ``client_secret_basic``; a value that is no array is
    read as not given: the client registers for ``client_secret_basic``, without a stack
    trace, and without reading ``"none"`` in a string (or an object's key) as a list."""
    issuer.metadata_changes["token_endpoint_auth_methods_supported"] = methods
    protect(resource, issuer)

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 0, said
    assert kept(tmp_path)["client"]["auth_method"] == "client_secret_basic"


@pytest.mark.parametrize("supported", [True, "false", 1])
async def test_a_client_metadata_url_is_used_where_the_server_says_true(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    supported: Any,
) -> None:
    """client-registration §Advertising CIMD Support: the server says it takes client ID
    metadata documents with ``client_id_metadata_document_supported: true``; any other
    value (the string ``"false"``, a number) is not that, and the client registers
    dynamically instead of sending a client ID the server will not look up."""
    issuer.metadata_changes["client_id_metadata_document_supported"] = supported
    protect(resource, issuer)
    document_url = "https://client.example/presa-trio.json"
    issuer.clients[document_url] = Client(None, "alice")  # as if it had fetched it

    status, said = await login(
        resource.url, http, environment(tmp_path), consent, "--client-metadata-url", document_url
    )

    assert status == 0, said
    client_id = kept(tmp_path)["client"]["client_id"]
    assert (client_id == document_url) is (supported is True)
    assert issuer.hits.get("/register", 0) == (0 if supported is True else 1)


async def test_metadata_nested_too_deep_to_decode_is_no_metadata(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """A document nested deeper than the decoder goes is no JSON, as a message so nested
    is: the sign-in ends in one line, not a stack trace."""
    protect(resource, issuer)
    resource.documents[AT_PATH] = b'{"resource": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert "Traceback" not in said
    assert "publishes no protected resource metadata" in said


async def test_a_refused_token_names_no_server_from_metadata_nested_too_deep(
    resource: ProtectedResource, tmp_path: Path
) -> None:
    """With ``--token``, a 401 says where the metadata is and the servers it names; a
    document nested too deep to decode names none, and the failure is still one line."""
    resource.documents[AT_PATH] = b"[" * 100_000 + b"]" * 100_000
    resource.challenge = f'Bearer resource_metadata="{resource.origin}{AT_PATH}"'

    ran = await client("list", resource.url, "tools", "--token", "not-accepted")

    assert ran.status == 3, ran.stderr
    assert ran.error().endswith(f"its resource metadata is at {resource.origin}{AT_PATH}")


async def test_a_refused_token_is_said_though_its_metadata_never_answers(
    resource: ProtectedResource,
) -> None:
    """With ``--token``, the 401 is the line, within ``--timeout``, when the metadata
    it names never answers (the client waits for MCP answers without end, not for that
    document): not "did not answer", which the server did, and not a wait without end."""
    resource.stalled.add(AT_PATH)
    resource.challenge = f'Bearer resource_metadata="{resource.origin}{AT_PATH}"'

    ran = await client("list", resource.url, "tools", "--token", "not-accepted", "--timeout", "2")

    assert ran.status == 3, ran.stderr
    assert ran.error() == (
        f"{resource.url} refused the token: 401 Unauthorized; "
        f"its resource metadata is at {resource.origin}{AT_PATH}"
    )


async def test_a_client_signed_in_as_itself_is_not_taken_elsewhere_when_the_server_moves(
    issuer: AuthorizationServer,
    other_issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """Spec-mandated (client-registration §Authorization Server Binding: pre-registered
    credentials belong to their authorization server; when the metadata names another,
    the client surfaces an error): a kept client credentials sign-in whose resource now
    names another authorization server fails in one line, naming both, and neither
    registers a client there nor waits for a person who is not there."""
    protect(resource, issuer)
    env = {**environment(tmp_path), CLIENT_SECRET_ENV: issuer.secret("alice-app")}
    flags = ["--client-credentials", "--client-id", "alice-app"]
    (tmp_path / "file").write_text("")
    nowhere = await client(
        "login", resource.url, *flags, env={**env, CONFIG_ENV: str(tmp_path / "file")}
    )
    assert nowhere.status == 2  # presa-defined: a sign-in that cannot be kept is one line
    assert nowhere.error().startswith(f"cannot keep the sign-in in {tmp_path / 'file'}/tokens/")
    signed = await client("login", resource.url, *flags, "--json", env=env)
    assert signed.status == 0, signed.stderr
    # presa-defined (docs/client.md, For scripts): --json is one document, login's too.
    assert json.loads(signed.stdout) == {"resource": resource.url, "signedIn": True}
    protect(resource, other_issuer)

    moved = await client("list", resource.url, "tools", env=env)

    assert moved.status == 3, moved.stderr
    assert issuer.issuer in moved.error()
    assert other_issuer.issuer in moved.error()
    assert "Open this URL" not in moved.stderr
    assert "/register" not in other_issuer.hits


#: URLs a server may name that no HTTP request can be made to: a bracketed host that is
#: no address, a port that is no number (RFC 3986 §3.2.2, §3.2.3).
NO_REQUEST_URLS = ["http://[::1", "https://127.0.0.1:1x/x"]


@pytest.mark.parametrize("url", NO_REQUEST_URLS)
async def test_a_challenges_metadata_url_no_request_can_go_to_is_one_line(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    url: str,
) -> None:
    """authorization-server-discovery §Protected Resource Metadata Discovery Requirements
    (clients MUST be able to parse ``WWW-Authenticate`` headers and respond
    appropriately to a 401): a ``resource_metadata`` that is no URL a request can go to
    is the server's mistake, one line and exit 3, at a sign-in and in the line of a
    refused token alike, never a traceback."""
    protect(resource, issuer)
    resource.challenge = f'Bearer resource_metadata="{url}"'

    status, said = await login(resource.url, http, environment(tmp_path))
    ran = await client("list", resource.url, "tools", "--token", "not-accepted")

    assert status == 3, said
    assert said.count("\n") == 1, said
    assert "publishes no protected resource metadata" in said
    assert ran.status == 3, ran.stderr
    assert ran.error().endswith(f"its resource metadata is at {url}")


@pytest.mark.parametrize("url", NO_REQUEST_URLS)
async def test_an_authorization_server_no_request_can_go_to_is_one_line(
    resource: ProtectedResource, http: httpx.AsyncClient, tmp_path: Path, url: str
) -> None:
    """authorization-server-discovery §Authorization Server Metadata Discovery: an
    issuer named in the resource's metadata that no request can go to publishes no
    metadata the client can use; the sign-in ends in one line, exit 3."""
    resource.documents[AT_PATH] = {"resource": resource.url, "authorization_servers": [url]}
    resource.challenge = f'Bearer resource_metadata="{resource.origin}{AT_PATH}"'

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert said.count("\n") == 1, said
    assert "Traceback" not in said


@pytest.mark.parametrize("member", ["token_endpoint", "registration_endpoint"])
async def test_an_endpoint_no_request_can_go_to_stops_the_sign_in_before_the_browser(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    member: str,
) -> None:
    """security-considerations §Communication Security: an endpoint of the authorization
    server's metadata is one the client can send to, or the sign-in stops in one line
    before the person is asked, as for an endpoint of another scheme."""
    issuer.metadata_changes[member] = "https://127.0.0.1:1x/" + member
    protect(resource, issuer)

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert said.count("\n") == 1, said
    assert member in said
    assert "Open this URL" not in said


async def test_an_authorization_server_with_openid_discovery_only_is_signed_in_to(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """Spec-mandated (basic/authorization §Overview 5: clients MUST support both RFC 8414
    and OpenID Connect Discovery; authorization-server-discovery §Authorization Server
    Metadata Discovery: for an issuer without a path, the RFC 8414 URL, then the OpenID
    one): a server whose RFC 8414 URL is 404 is found at the OpenID one, in that order."""
    issuer.statuses["/.well-known/oauth-authorization-server"] = 404
    protect(resource, issuer)

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 0, said
    assert issuer.hits["/.well-known/oauth-authorization-server"] == 1
    assert issuer.hits["/.well-known/openid-configuration"] == 1
    assert kept(tmp_path)["issuer"] == issuer.issuer


@pytest.mark.parametrize(
    ("supported", "offered", "asked"),
    [
        (["mcp", "files:read"], None, "mcp files:read"),
        (None, None, None),
        (["mcp", None, 7, {"x": 1}, "files:read"], None, "mcp files:read"),
        (["mcp"], ["mcp", "offline_access"], "mcp offline_access"),
        (None, ["mcp", "offline_access"], None),
    ],
    ids=["supported", "undefined", "entries-no-scope", "offline-access", "offline-access-alone"],
)
async def test_without_a_challenged_scope_the_resources_supported_scopes_are_asked(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    supported: list[Any] | None,
    offered: list[str] | None,
    asked: str | None,
) -> None:
    """Spec-mandated (basic/authorization §Scope Selection Strategy: with no ``scope`` in
    the challenge, all of the resource's ``scopes_supported``, the ``scope`` parameter
    left out when that is undefined; §Refresh Tokens: ``offline_access`` MAY be added
    when the authorization server's ``scopes_supported`` has it, to the scopes asked: with
    none, the parameter is still left out): an entry that is no string (RFC 9728 §2: a
    JSON array of strings) names no scope and is not asked for."""
    protect(resource, issuer)
    if supported is not None:
        resource.documents[AT_PATH]["scopes_supported"] = supported  # type: ignore[index]
    issuer.metadata_changes["scopes_supported"] = offered
    seen: list[dict[str, list[str]]] = []

    async def browser(http: httpx.AsyncClient, url: str) -> httpx.Response:
        seen.append(parse_qs(urlsplit(url).query))
        return await consent(http, url)

    status, said = await login(resource.url, http, environment(tmp_path), browser)

    assert status == 0, said
    assert seen[0].get("scope") == (None if asked is None else [asked])


async def test_a_registration_is_not_taken_to_another_authorization_server(
    issuer: AuthorizationServer,
    other_issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """Spec-mandated (client-registration §Authorization Server Binding: persisted
    credentials from Dynamic Client Registration are keyed by the issuer; when the
    resource's metadata names another authorization server, clients MUST NOT reuse them
    and MUST re-register; authorization-server-discovery §Authorization Server
    Location: separate registration state per server): a kept registration is used
    again at its own server only (there:
    ``test_signing_in_again_with_a_kept_registration_uses_its_redirect_uri``); at the
    new one the client registers anew, and the old client id is never sent there."""
    protect(resource, issuer)
    env = environment(tmp_path)
    status, said = await login(resource.url, http, env)
    assert status == 0, said
    first = kept(tmp_path)["client"]["client_id"]
    protect(resource, other_issuer)
    sent: list[str] = []

    async def browser(http: httpx.AsyncClient, url: str) -> httpx.Response:
        sent.extend(parse_qs(urlsplit(url).query)["client_id"])
        return await consent(http, url)

    status, said = await login(resource.url, http, env, browser)

    assert status == 0, said
    assert other_issuer.hits["/register"] == 1
    record = kept(tmp_path)
    assert record["issuer"] == other_issuer.issuer
    assert sent == [record["client"]["client_id"]]
    assert first not in sent


async def test_a_dynamic_registration_is_a_native_client_on_a_loopback_redirect(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
) -> None:
    """Spec-mandated (client-registration §Application Type and Redirect URI Constraints:
    clients MUST specify an appropriate ``application_type``, a CLI tool ``native``;
    security-considerations §Communication Security: redirect URIs are ``localhost`` or
    HTTPS; §Refresh Tokens: ``refresh_token`` SHOULD be in ``grant_types``): the
    registration request, and the redirect the authorization request names, are those
    of a native public client listening on loopback (RFC 8252 §7.3): ``none`` though the
    server takes secrets too."""
    protect(resource, issuer)
    supported = ["client_secret_post", "client_secret_basic", "none"]
    issuer.metadata_changes["token_endpoint_auth_methods_supported"] = supported
    redirects: list[str] = []

    async def browser(http: httpx.AsyncClient, url: str) -> httpx.Response:
        redirects.extend(parse_qs(urlsplit(url).query)["redirect_uri"])
        return await consent(http, url)

    status, said = await login(resource.url, http, environment(tmp_path), browser)

    assert status == 0, said
    [registered] = issuer.registrations
    assert registered["application_type"] == "native"
    assert registered["token_endpoint_auth_method"] == "none"
    assert {"authorization_code", "refresh_token"} <= set(registered["grant_types"])
    [redirect] = registered["redirect_uris"]
    assert urlsplit(redirect).scheme == "http"
    assert urlsplit(redirect).hostname == "127.0.0.1"
    assert redirects == [redirect]


@pytest.mark.parametrize(
    "named", ["https://honest.example", "{issuer}/", None], ids=["other", "slash", "absent"]
)
async def test_authorization_server_metadata_naming_another_issuer_is_not_used(
    issuer: AuthorizationServer,
    resource: ProtectedResource,
    http: httpx.AsyncClient,
    tmp_path: Path,
    named: str | None,
) -> None:
    """Spec-mandated (authorization-server-discovery §Authorization Server Metadata
    Discovery: the document's ``issuer`` MUST be identical to the issuer the well-known
    URL was built from, else the client MUST NOT use the metadata; RFC 8414 §3.3): a
    document naming another issuer, the same with a slash added, or none, ends the
    sign-in in one line before anything is registered or the person is asked."""
    issuer.metadata_changes["issuer"] = (
        None if named is None else named.format(issuer=issuer.issuer)
    )
    protect(resource, issuer)

    status, said = await login(resource.url, http, environment(tmp_path))

    assert status == 3, said
    assert said.count("\n") == 1, said
    assert "refused" in said
    assert "/register" not in issuer.hits
    assert "/authorize" not in issuer.hits
