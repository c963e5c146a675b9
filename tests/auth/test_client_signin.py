"""Sign-in end to end: ``presa-trio login`` against presa guarded by a real authorization server.

presa runs with ``--auth-issuer`` pointing at the loopback authorization
server of the tests; the client discovers it from presa's 401, registers
itself (RFC 7591), and prints the authorization URL (``--no-browser``); the
test plays the browser of a person who has consented, following the URL
to the client's loopback redirect. Then ``presa-trio list`` sends the kept
token, and once that token has expired, refreshes it without a sign-in.

The same client also signs in as a registered client itself, with the
client credentials grant: by its secret, or by a JWT its private key signs.

Spec: 2026-07-28 basic/authorization §Authorization Flow Steps, §Token Handling.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import trio
from joserfc.jwk import ECKey

from presa_trio.client import tokens
from presa_trio.client.options import CLIENT_SECRET_ENV
from presa_trio.client.tokens import CONFIG_ENV
from tests.auth.authorization_server import AuthorizationServer, Client
from tests.auth.harness import start_presa
from tests.auth.signing_in import consent, login, signing_in
from tests.client.helpers import client, client_command, client_environment


def assert_recorded_without_credentials(
    transcript: Path, issuer: AuthorizationServer, record: dict[str, Any]
) -> None:
    """The sign-in's exchanges are in the transcript, from the 401 and its challenge
    to the token, and none of the credentials they carried is."""
    text = transcript.read_text()
    exchanges = [json.loads(line) for line in text.splitlines()]
    seen = [
        (e["request"]["method"], e["request"]["path"], e["response"]["status"]) for e in exchanges
    ]
    assert seen[0][2] == 401
    assert "resource_metadata=" in exchanges[0]["response"]["headers"]["www-authenticate"]
    assert ("POST", issuer.issuer + "/register", 201) in seen
    assert seen[-1] == ("POST", issuer.issuer + "/token", 200)
    assert exchanges[-1]["request"]["body"]["code_verifier"] == "[redacted]"
    assert exchanges[-1]["request"]["headers"]["authorization"] == "Basic [redacted]"
    for secret in ("access_token", "refresh_token"):
        assert record[secret] not in text
    assert record["client"]["client_secret"] not in text


async def test_login_then_list_then_a_refresh_without_signing_in_again(
    nursery: trio.Nursery, issuer: AuthorizationServer, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Spec-mandated (basic/authorization §Token Handling): the kept token is used
    without asking anyone; it is refreshed when it has expired, and when the server
    refuses it (its key withdrawn: 401), and only then is it sent again. Every
    authorization and token request, refreshes too, names the server as ``resource``
    (§Resource Parameter Implementation: MUST be included in both)."""
    # The key set is fetched again for each request: a withdrawn key is 401 at once.
    issuer.jwks_max_age = 0
    flags = ["--auth-issuer", issuer.issuer, "--auth-key-refetch", "0.01"]
    presa = await start_presa(nursery, http, flags)
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}

    transcript = tmp_path / "signin.jsonl"
    status, said = await login(presa.url, http, env, consent, "--transcript", str(transcript))
    assert status == 0, said
    assert f"signed in to {presa.url}" in said
    [kept] = (tmp_path / "tokens").iterdir()
    assert kept.stat().st_mode & 0o777 == 0o600
    assert kept.parent.stat().st_mode & 0o777 == 0o700
    record = json.loads(kept.read_text())
    assert record["resource"] == presa.url
    assert record["endpoint"] == presa.url
    assert record["issuer"] == issuer.issuer
    assert_recorded_without_credentials(transcript, issuer, record)

    listed = await client("list", presa.url, "--json", env=env)
    assert listed.status == 0, listed.stderr
    assert json.loads(listed.stdout)["tools"]
    assert "Open this URL" not in listed.stderr

    record["expires_at"] = time.time() - 1  # the access token's life is over
    kept.write_text(json.dumps(record))
    again = await client("list", presa.url, "--json", env=env)
    assert again.status == 0, again.stderr
    assert "Open this URL" not in again.stderr
    renewed = json.loads(kept.read_text())
    assert renewed["access_token"] != record["access_token"]
    assert renewed["refresh_token"] != record["refresh_token"]
    assert issuer.hits["/authorize"] == 1  # the person was not asked again
    assert kept.stat().st_mode & 0o777 == 0o600

    issuer.rotate_keys()  # presa refuses the unexpired kept token from now on
    refused = await client("list", presa.url, "--json", env=env)
    assert refused.status == 0, refused.stderr
    assert "Open this URL" not in refused.stderr
    assert json.loads(kept.read_text())["access_token"] != renewed["access_token"]
    assert issuer.hits["/authorize"] == 1
    # The authorization request, the code's exchange, then the two refreshes.
    assert issuer.resources_asked == [presa.url] * 4

    out = await client("logout", presa.url, env=env)
    assert out.status == 0
    assert not list((tmp_path / "tokens").iterdir())


async def test_without_a_refresh_token_a_refused_token_means_a_sign_in(
    nursery: trio.Nursery, issuer: AuthorizationServer, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Spec-mandated (basic/authorization §Refresh Tokens: clients MUST NOT assume
    refresh tokens will be issued): a sign-in whose token response has no refresh token
    is kept without one; when the server refuses that token, the person signs in again,
    and no refresh is asked for."""
    presa = await start_presa(nursery, http, ["--auth-issuer", issuer.issuer])
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}

    def answered(token: str) -> None:
        answer = {"access_token": token, "token_type": "Bearer", "expires_in": 300}
        issuer.bodies["/token"] = json.dumps(answer).encode()

    answered(issuer.mint_jwt("alice-app", presa.url, lifetime_s=-3600))  # refused at once
    status, said = await login(presa.url, http, env)
    assert status == 0, said
    [kept] = (tmp_path / "tokens").iterdir()
    assert json.loads(kept.read_text())["refresh_token"] is None
    answered(issuer.mint_jwt("alice-app", presa.url))

    status, said = await signing_in(["list", presa.url, "tools"], http, env)

    assert status == 0, said
    assert "Open this URL" in said
    assert issuer.hits["/authorize"] == 2
    assert issuer.hits["/token"] == 2  # the two codes' exchanges: no refresh


async def test_a_refresh_that_issues_no_refresh_token_keeps_the_one_it_used(
    nursery: trio.Nursery, issuer: AuthorizationServer, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Spec-mandated (basic/authorization §Refresh Tokens; RFC 6749 §6: the authorization
    server MAY issue a new refresh token, and only then is the old one discarded): a
    refresh whose answer has no refresh token keeps the one it was made with, so the
    next expiry is refreshed too rather than a sign-in."""
    presa = await start_presa(nursery, http, ["--auth-issuer", issuer.issuer])
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}
    status, said = await login(presa.url, http, env)
    assert status == 0, said
    [kept] = (tmp_path / "tokens").iterdir()
    record = json.loads(kept.read_text())
    assert record["refresh_token"]

    access = issuer.mint_jwt("alice-app", presa.url)
    answer = {"access_token": access, "token_type": "Bearer", "expires_in": 300}
    issuer.bodies["/token"] = json.dumps(answer).encode()
    record["expires_at"] = time.time() - 1
    kept.write_text(json.dumps(record))
    listed = await client("list", presa.url, "--json", env=env)

    assert listed.status == 0, listed.stderr
    assert "Open this URL" not in listed.stderr
    renewed = json.loads(kept.read_text())
    assert renewed["access_token"] == access
    assert renewed["refresh_token"] == record["refresh_token"]


async def test_a_403_insufficient_scope_signs_in_again_for_the_union_of_the_scopes(
    nursery: trio.Nursery, issuer: AuthorizationServer, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """basic/authorization §Step-Up Authorization Flow: a call the kept token's scopes do
    not cover (presa's 403 ``insufficient_scope`` names every scope it needs) signs in
    again, with the registration kept, asking for the union of what was asked before and
    what the challenge names, so that a step-up for one tool keeps what another needed;
    the call then goes through with the new token. A refresh, which cannot widen the
    scope, is not tried first."""
    tool_scopes = ["greet=greet:call", "test_simple_text=text:call"]
    flags = ["--auth-issuer", issuer.issuer, "--auth-scope", "mcp"]
    for tool_scope in tool_scopes:
        flags += ["--auth-tool-scope", tool_scope]
    presa = await start_presa(nursery, http, flags)
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}
    asked: list[str] = []

    async def recording(http: httpx.AsyncClient, url: str) -> httpx.Response:
        asked.append(parse_qs(urlsplit(url).query)["scope"][0])
        return await consent(http, url)

    status, said = await login(presa.url, http, env, recording)
    assert status == 0, said
    for call in (["greet", "name=Ada"], ["test_simple_text"], ["greet", "name=Bo"]):
        status, said = await signing_in(["call", presa.url, *call], http, env, recording)
        assert status == 0, said

    assert asked == ["mcp", "greet:call mcp", "mcp text:call greet:call"]
    [kept] = (tmp_path / "tokens").iterdir()
    assert json.loads(kept.read_text())["scope"] == "mcp text:call greet:call"
    assert issuer.hits["/register"] == 1
    assert issuer.hits["/token"] == 3  # the three codes' exchanges: a step-up refreshes none


async def test_client_credentials_sign_in_asks_no_one_and_gets_the_next_token_alone(
    nursery: trio.Nursery, issuer: AuthorizationServer, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Extension io.modelcontextprotocol/oauth-client-credentials (OAuth 2.1 §4.2): a
    client signed in as itself, its secret from ``$PRESA_CLIENT_SECRET``; once its
    token expires, the kept credentials get the next one, with no flag given again.
    ``offline_access`` is not asked for though the authorization server offers it: the
    grant issues no refresh token (OAuth 2.1 §4.2.3)."""
    issuer.metadata_changes["scopes_supported"] = ["mcp", "offline_access"]
    presa = await start_presa(
        nursery, http, ["--auth-issuer", issuer.issuer, "--auth-scope", "mcp"]
    )
    secret = issuer.secret("alice-app")
    env = {**client_environment(), CONFIG_ENV: str(tmp_path), CLIENT_SECRET_ENV: secret}
    flags = ["--client-credentials", "--client-id", "alice-app"]

    listed = await client("list", presa.url, "--json", *flags, env=env)
    assert listed.status == 0, listed.stderr
    assert json.loads(listed.stdout)["tools"]
    assert "Open this URL" not in listed.stderr
    assert "/authorize" not in issuer.hits
    [kept] = (tmp_path / "tokens").iterdir()
    assert kept.stat().st_mode & 0o777 == 0o600
    record = json.loads(kept.read_text())
    assert record["grant"] == "client_credentials"
    assert record["refresh_token"] is None
    assert record["scope"] == "mcp"

    record["expires_at"] = time.time() - 1
    kept.write_text(json.dumps(record))
    again = await client("list", presa.url, "--json", env=env)
    assert again.status == 0, again.stderr
    assert json.loads(kept.read_text())["access_token"] != record["access_token"]
    assert issuer.hits["/token"] == 2
    assert "/authorize" not in issuer.hits


async def test_a_secret_goes_in_the_form_to_a_server_that_takes_it_only_there(
    nursery: trio.Nursery, issuer: AuthorizationServer, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Spec-mandated (OAuth 2.1 §2.4.1: the client authenticates as the server supports;
    RFC 8414 §2 ``token_endpoint_auth_methods_supported``): a pre-registered client's
    secret goes as ``client_secret_post`` to a token endpoint that lists only that, not
    in a Basic header it would refuse."""
    issuer.metadata_changes["token_endpoint_auth_methods_supported"] = ["client_secret_post"]
    issuer.token_auth_methods = ("client_secret_post",)
    presa = await start_presa(nursery, http, ["--auth-issuer", issuer.issuer])
    secret = issuer.secret("alice-app")
    env = {**client_environment(), CONFIG_ENV: str(tmp_path), CLIENT_SECRET_ENV: secret}
    flags = ["--client-credentials", "--client-id", "alice-app"]

    listed = await client("list", presa.url, "--json", *flags, env=env)

    assert listed.status == 0, listed.stderr
    [kept] = (tmp_path / "tokens").iterdir()
    assert json.loads(kept.read_text())["client"]["auth_method"] == "client_secret_post"


async def test_a_token_lifetime_no_float_holds_is_kept_as_the_longest(
    nursery: trio.Nursery, issuer: AuthorizationServer, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """RFC 6749 §5.1 (``expires_in``, a JSON number of any size): 10**400 seconds is a
    token kept until the longest time there is, not an OverflowError's traceback."""
    presa = await start_presa(nursery, http, ["--auth-issuer", issuer.issuer])
    issuer.expires_in = 10**400
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}
    flags = ["--client-credentials", "--client-id", "alice-app"]
    env[CLIENT_SECRET_ENV] = issuer.secret("alice-app")
    listed = await client("list", presa.url, *flags, env=env)
    assert listed.status == 0, listed.stderr
    [kept] = (tmp_path / "tokens").iterdir()
    assert json.loads(kept.read_text())["expires_at"] > time.time() + 10**300


async def test_client_credentials_with_a_private_key_jwt(
    nursery: trio.Nursery, issuer: AuthorizationServer, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """RFC 7523 §2.2 ``private_key_jwt``: the client's key signs an assertion the
    authorization server checks with the public key registered for it."""
    key = ECKey.generate_key("P-256")
    issuer.clients["robot"] = Client(None, "robot", public_key=key)
    pem = tmp_path / "robot.pem"
    pem.write_bytes(key.as_pem(private=True))
    presa = await start_presa(nursery, http, ["--auth-issuer", issuer.issuer])
    env = {**client_environment(), CONFIG_ENV: str(tmp_path / "config")}
    flags = ["--client-credentials", "--client-id", "robot", "--client-key", str(pem)]

    listed = await client("list", presa.url, "--json", *flags, env=env)
    assert listed.status == 0, listed.stderr
    assert json.loads(listed.stdout)["tools"]
    [kept] = (tmp_path / "config" / "tokens").iterdir()
    record = json.loads(kept.read_text())
    assert record["client"]["auth_method"] == "private_key_jwt"
    assert "PRIVATE KEY" not in kept.read_text()  # the key stays in its own file

    other = ECKey.generate_key("P-256")  # a key the server does not know
    pem.write_bytes(other.as_pem(private=True))
    refused = await client("login", presa.url, *flags, env=env)
    assert refused.status == 3, refused.stderr
    assert "the token endpoint refused" in refused.error()


async def test_client_credentials_without_credentials_is_a_usage_error(tmp_path: Path) -> None:
    """Nothing is sent for a grant that cannot be made: one line, exit 2."""
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}
    ran = await client("list", "http://127.0.0.1:9/mcp", "--client-credentials", env=env)
    assert ran.status == 2
    assert "--client-credentials signs in as a registered client" in ran.error()


@pytest.mark.parametrize(
    "url",
    [
        "http://app.example.com/client.json",
        "https://app.example.com",
        "https://app.example.com/",
        "https://app.example.com/a/../client.json",
        "https://app.example.com/client.json#me",
        "https://me:pw@app.example.com/client.json",
        "client.json",
    ],
)
async def test_a_client_metadata_url_that_cannot_be_a_client_id_is_a_usage_error(
    tmp_path: Path, url: str
) -> None:
    """Spec-mandated (client-registration §Client ID Metadata Documents: the ``client_id``
    URL uses ``https`` and has a path; draft-ietf-oauth-client-id-metadata-document-00
    §3: no dot segments, fragment or credentials): nothing is sent; one line, exit 2."""
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}
    ran = await client("login", "http://127.0.0.1:9/mcp", "--client-metadata-url", url, env=env)
    assert ran.status == 2, ran.stderr
    assert "--client-metadata-url" in ran.error()


async def test_a_kept_sign_in_is_its_owners_alone_whatever_was_left_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spec-mandated (security-considerations §Token Theft: secure token storage): the
    file is written through a new file of mode 0600, never through one another program
    (or an earlier run) left readable, or linked elsewhere, where it would be."""
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path))
    endpoint = "https://mcp.example.com/mcp"
    path = tokens.token_path(endpoint)
    path.parent.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("")
    elsewhere.chmod(0o644)
    path.with_suffix(".tmp").symlink_to(elsewhere)

    await tokens.save(endpoint, {"access_token": "secret"})

    assert path.stat().st_mode & 0o777 == 0o600
    assert not path.is_symlink()
    assert elsewhere.read_text() == ""
    assert await tokens.load(endpoint) == {"access_token": "secret", "endpoint": endpoint}


async def test_a_kept_sign_in_without_an_access_token_is_no_sign_in(tmp_path: Path) -> None:
    """A kept file edited or cut short, left without an access token that can be sent,
    is no sign-in: the command goes on as without one (here: a server that cannot be
    reached, said in one line), not a stack trace."""
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}
    endpoint = "http://127.0.0.1:9/mcp"
    path = tokens.token_path(endpoint).relative_to(tokens.config_dir())
    for kept in ({"refresh_token": "r"}, {"access_token": None}, {"access_token": "a b"}):
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text(json.dumps({**kept, "endpoint": endpoint}))

        ran = await client("list", endpoint, env=env)

        assert ran.status == 3, ran.stderr
        assert ran.error().startswith(f"cannot reach {endpoint}")


async def test_a_kept_sign_in_that_names_another_endpoint_is_no_sign_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """basic/authorization §Token Handling (a token goes only to the resource it was
    issued for): a kept file that names another endpoint than the one whose file it
    is (copied, or a name two endpoints share) is no sign-in for it."""
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path))
    endpoint = "http://127.0.0.1:9/mcp"
    path = tokens.token_path(endpoint)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"access_token": "t", "endpoint": "http://elsewhere.test/mcp"}))
    assert await tokens.load(endpoint) is None
    path.write_text(json.dumps({"access_token": "t", "endpoint": endpoint}))
    assert await tokens.load(endpoint) == {"access_token": "t", "endpoint": endpoint}


async def test_login_to_a_server_that_cannot_be_reached_is_one_line(tmp_path: Path) -> None:
    """No stack trace to the person: the failure the other commands say, exit 3."""
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}
    ran = await client("login", "http://127.0.0.1:9/mcp", "--no-browser", env=env)
    assert ran.status == 3, ran.stderr
    assert ran.error().startswith("cannot reach http://127.0.0.1:9/mcp")


async def test_listen_signs_in_on_its_401_as_every_command_does(
    nursery: trio.Nursery, issuer: AuthorizationServer, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """basic/authorization §Authorization Flow Steps (clients respond to a 401 by signing
    in): a listen, whose answer is a stream held open, meets the 401 first too."""
    presa = await start_presa(nursery, http, ["--auth-issuer", issuer.issuer])
    env = {
        **client_environment(),
        CONFIG_ENV: str(tmp_path),
        CLIENT_SECRET_ENV: issuer.secret("alice-app"),
    }
    flags = ["--client-credentials", "--client-id", "alice-app"]
    command = client_command("listen", presa.url, *flags)

    said = b""
    with trio.fail_after(60):
        async with trio.open_nursery() as running:
            process: trio.Process = await running.start(
                partial(trio.run_process, command, stderr=subprocess.PIPE, env=env, check=False)
            )
            assert process.stderr is not None
            async for chunk in process.stderr:
                said += chunk
                if b"listening for" in said:
                    break
            process.send_signal(signal.SIGINT)

    assert b"listening for" in said, said.decode()
    assert issuer.hits["/token"] == 1
