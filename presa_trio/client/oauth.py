"""Sign-in to an MCP server: discovery, registration, authorization code with PKCE, refresh.

What the client does when a server answers 401, in the spec's order:

1. the protected resource metadata (RFC 9728), and 2. its authorization
   server's metadata (:mod:`.discovery`);
3. a client: the pre-registered ``--client-id``, else a client ID metadata
   document URL when the server supports them, else dynamic registration
   (RFC 7591) as a native public client on a loopback redirect;
4. the scope (:mod:`.discovery`);
5. the authorization code grant with PKCE S256 (a server whose metadata does
   not list ``S256`` is refused before anything is sent to it) in a
   browser, the answer coming back to a loopback listener (RFC 8252 §7.3),
   its ``state`` and ``iss`` checked (RFC 9207) before the code is used;
   ``resource`` (RFC 8707) on the authorization and the token request.

With ``--client-credentials`` step 5 is the client credentials grant
instead (OAuth 2.1 §4.2; the MCP extension
``io.modelcontextprotocol/oauth-client-credentials``, SEP-1046): the
pre-registered client asks for a token for itself, no person and no
browser involved, and asks again with the same credentials when the token
expires (that grant issues no refresh token).

The client authenticates at the token endpoint as it was registered:
``client_secret_basic``, ``client_secret_post``, ``private_key_jwt``
(:mod:`.assertion`) or ``none``, and names its ``client_id`` in the form
whatever the method (OAuth 2.1 §3.2.1 allows it; some servers, the SDK's
among them, look the client up by it before reading the credentials).

The OAuth messages are built and read with authlib (PKCE, the grant URI,
client authentication); httpx carries them.

Spec: 2026-07-28 basic/authorization (index, authorization-server-discovery,
client-registration).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx
import trio
from authlib.common.security import generate_token
from authlib.oauth2.auth import encode_client_secret_basic
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge

from presa_trio.client.assertion import client_assertion
from presa_trio.client.discovery import OFFLINE_ACCESS, Discovered, discover, endpoint_of
from presa_trio.client.errors import SignInFailed
from presa_trio.client.loopback import await_callback, loopback_listener
from presa_trio.client.transport import decoded
from presa_trio.wire.http_values import is_bearer_token
from presa_trio.wire.models import JSONObject

#: Opens the authorization URL for the person: a browser, or a printed line.
Opener = Callable[[str], Awaitable[None]]
CLIENT_NAME = "presa-trio"
#: Seconds to wait for the browser to come back to the loopback redirect.
CALLBACK_WAIT_S = 300.0
#: The grants a sign-in uses, as the token endpoint names them.
AUTHORIZATION_CODE = "authorization_code"
CLIENT_CREDENTIALS = "client_credentials"


@attrs.define
class Registration:
    """What the client is known as at one authorization server."""

    client_id: str
    client_secret: str | None = None
    #: ``none``, ``client_secret_basic``, ``client_secret_post`` or ``private_key_jwt``.
    auth_method: str = "none"
    #: The PEM file of the client's private key, for ``private_key_jwt``.
    key_file: str | None = None
    #: The loopback redirect URI it was registered with (dynamic registration): a
    #: sign-in again comes back there, as the server matches it exactly.
    redirect_uri: str | None = None


@attrs.define
class SignInOptions:
    """What the person chose: a pre-registered client, a metadata document URL, the grant."""

    client_id: str | None = None
    client_secret: str | None = None
    client_metadata_url: str | None = None
    #: The pre-registered client's private key (a PEM file): ``private_key_jwt``.
    client_key: str | None = None
    #: Sign in as the client itself (the client credentials grant), not as a person.
    client_credentials: bool = False

    def problem(self) -> str | None:
        """What makes these options unusable, before anything is sent; None when nothing."""
        if self.client_secret and self.client_key:
            return "--client-secret and --client-key are two ways to authenticate: give one"
        if (self.client_secret or self.client_key) and not self.client_id:
            return "--client-secret and --client-key are for the client given by --client-id"
        if self.client_credentials and not (self.client_secret or self.client_key):
            return (
                "--client-credentials signs in as a registered client: give --client-id "
                "with --client-secret or --client-key"
            )
        if self.client_metadata_url and not is_client_id_url(self.client_metadata_url):
            return (
                f"--client-metadata-url {self.client_metadata_url} cannot be a client ID: "
                "it must be an https URL with a path, without . or .. segments, "
                "a fragment or a user name"
            )
        return None


def is_client_id_url(url: str) -> bool:
    """Whether ``url`` may be a client ID metadata document's URL, the client's ID.

    Spec: client-registration §Client ID Metadata Documents (``https``, a path
    component); draft-ietf-oauth-client-id-metadata-document-00 §3 (no single-
    or double-dot path segments, no fragment, no username or password).
    """
    parts = urlsplit(url)
    segments = parts.path.split("/")
    return (
        parts.scheme == "https"
        and bool(parts.hostname)
        and parts.path not in ("", "/")
        and not {".", ".."} & set(segments)
        and not parts.fragment
        and "@" not in parts.netloc
    )


def preregistered(client_id: str, server: JSONObject, options: SignInOptions) -> Registration:
    """A client registered in advance: a key signs, a secret goes as the server takes it."""
    if options.client_key:
        return Registration(client_id, None, "private_key_jwt", options.client_key)
    method = "client_secret_basic" if options.client_secret else "none"
    supported = server.get("token_endpoint_auth_methods_supported")
    if options.client_secret and isinstance(supported, list) and method not in supported:
        method = "client_secret_post"
    return Registration(client_id, options.client_secret, method)


async def register(
    http: httpx.AsyncClient, server: JSONObject, options: SignInOptions, redirect_uri: str
) -> Registration:
    """client-registration §priority: pre-registered, metadata document, dynamic registration."""
    if options.client_id:
        return preregistered(options.client_id, server, options)
    cimd = server.get("client_id_metadata_document_supported") is True  # a JSON true only
    if options.client_metadata_url and cimd:
        return Registration(options.client_metadata_url)
    if not isinstance(server.get("registration_endpoint"), str):
        raise SignInFailed(
            "the authorization server offers no registration: "
            "give --client-id (and --client-secret)"
        )
    endpoint = endpoint_of(server, "registration_endpoint")
    supported = server.get("token_endpoint_auth_methods_supported")
    if not isinstance(supported, list):  # RFC 8414 §2: an array; not given, the default
        supported = ["client_secret_basic"]
    preferred = ["none", "client_secret_basic", "client_secret_post"]
    method = next((m for m in preferred if m in supported), "client_secret_basic")
    request = {
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native",
    }
    try:
        response = await http.post(endpoint, json=request)
    except httpx.HTTPError as error:
        raise SignInFailed(f"registration at {endpoint} failed: {error}") from None
    answer = decoded(response.content)
    if not isinstance(answer, dict) or not isinstance(answer.get("client_id"), str):
        raise refusal(f"registration at {endpoint} was refused", response, answer)
    return Registration(
        answer["client_id"],
        answer.get("client_secret"),
        str(answer.get("token_endpoint_auth_method", method)),
        redirect_uri=redirect_uri,
    )


def refusal(what: str, response: httpx.Response, answer: object) -> SignInFailed:
    """``what``, with the HTTP status and the answer's JSON, if it is any, whose ``error``
    and ``error_description`` say why (RFC 6749 §5.2, RFC 7591 §3.2.2; client-registration
    §Dynamic Client Registration: clients surface a meaningful error)."""
    said = f"HTTP {response.status_code}"
    if answer is not None:
        said += f" {json.dumps(answer)[:200]}"
    return SignInFailed(f"{what}: {said}")


async def token_request(
    http: httpx.AsyncClient, server: JSONObject, client: Registration, form: dict[str, str]
) -> JSONObject:
    """POST to the token endpoint with the client's authentication (OAuth 2.1 §2.4.1)."""
    headers = {"accept": "application/json"}
    form = {**form, "client_id": client.client_id}
    endpoint = endpoint_of(server, "token_endpoint")
    if client.auth_method == "client_secret_basic" and client.client_secret:
        _, headers, _ = encode_client_secret_basic(client, "POST", endpoint, headers, b"")
    elif client.auth_method == "client_secret_post" and client.client_secret:
        form["client_secret"] = client.client_secret
    elif client.auth_method == "private_key_jwt" and client.key_file:
        form.update(await signed_by_key(client, str(server.get("issuer"))))
    try:
        response = await http.post(endpoint, data=form, headers=headers)
    except httpx.HTTPError as error:
        raise SignInFailed(f"the token endpoint {endpoint} failed: {error}") from None
    answer = decoded(response.content)
    if response.status_code != 200 or not isinstance(answer, dict) or "access_token" not in answer:
        raise refusal("the token endpoint refused", response, answer)
    token_type = answer.get("token_type", "Bearer")
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        # RFC 6749 §7.1: a client does not use a token of a type it does not understand;
        # this one sends bearer tokens only (basic/authorization §Token Requirements).
        raise SignInFailed(f"the token endpoint issued a {token_type!r} token, not a Bearer one")
    if not is_bearer_token(answer["access_token"]):
        # RFC 6750 §2.1: it is sent as ``Authorization: Bearer`` and a b64token; any other
        # (not a string, empty, a space or a character beyond ASCII) cannot be sent so.
        raise SignInFailed("the token endpoint issued an access token no header can carry")
    return answer


async def signed_by_key(client: Registration, issuer: str) -> dict[str, str]:
    """The ``private_key_jwt`` fields, signed with the key in the client's key file."""
    key_file = str(client.key_file)
    try:
        pem = await trio.to_thread.run_sync(Path(key_file).read_bytes)
        return client_assertion(pem, client.client_id, issuer)
    except OSError as error:
        raise SignInFailed(f"cannot read the client key {key_file}: {error.strerror}") from None
    except ValueError as error:
        raise SignInFailed(f"the client key {key_file} is {error}") from None


def check_response(answer: dict[str, str], server: JSONObject) -> str:
    """The code, once ``iss`` is as it must be (RFC 9207 §2.4); its ``state`` is the one
    sent (:func:`~presa_trio.client.loopback.await_callback` takes no other)."""
    advertised = server.get("authorization_response_iss_parameter_supported") is True
    if "iss" in answer and answer["iss"] != server.get("issuer"):
        raise SignInFailed("the authorization response names another issuer: refused")
    if advertised and "iss" not in answer:
        raise SignInFailed("the authorization response lacks the iss it must carry: refused")
    if "error" in answer:
        said = answer.get("error_description", "")
        raise SignInFailed(f"authorization refused: {answer['error']} {said}".rstrip())
    if not answer.get("code"):
        raise SignInFailed("the authorization response has no code")
    return answer["code"]


async def sign_in(
    http: httpx.AsyncClient,
    endpoint: str,
    challenge: dict[str, str],
    opener: Opener,
    options: SignInOptions,
    before: JSONObject | None = None,
) -> JSONObject:
    """The whole sign-in, by the grant the options choose; the record :mod:`.tokens` keeps.

    A client kept signed in as itself whose resource now names another
    authorization server is an error, not a person's sign-in instead: its
    credentials were registered at the one before (client-registration
    §Authorization Server Binding).
    """
    if (problem := options.problem()) is not None:
        raise SignInFailed(problem)
    found = await discover(http, endpoint, challenge, before)
    kept = None if options.client_id else kept_client(before, found.issuer)
    if options.client_credentials and options.client_id:
        client = preregistered(options.client_id, found.server, options)
        return await client_credentials(http, found, client)
    if (before or {}).get("grant") == CLIENT_CREDENTIALS and not options.client_id:
        if kept is None:  # a client registered in advance, at the server it was before
            raise SignInFailed(
                f"the client signed in as itself at {(before or {}).get('issuer')}; "
                f"{endpoint} now names {found.issuer}: give --client-credentials with "
                "--client-id of a client registered there"
            )
        return await client_credentials(http, found, kept)  # a step-up, say
    return await authorization_code(http, found, opener, options, kept)


def kept_client(before: JSONObject | None, issuer: str) -> Registration | None:
    """The client of the kept sign-in, if it was at ``issuer``: credentials belong to the
    authorization server that issued them (client-registration), never reused at another."""
    old = (before or {}).get("client")
    if isinstance(old, dict) and (before or {}).get("issuer") == issuer:
        return Registration(**old)
    return None


def check_pkce(server: JSONObject) -> None:
    """PKCE S256 verified in the metadata before anything else is sent to the server.

    Spec: security-considerations §Authorization Code Protection — without
    ``code_challenge_methods_supported`` the server does not support PKCE and
    the client refuses to proceed; the client uses ``S256`` (OAuth 2.1 §4.1.1),
    so a server that does not list it is refused too.
    """
    methods = server.get("code_challenge_methods_supported")
    if not isinstance(methods, list):
        raise SignInFailed(
            "the authorization server does not say it supports PKCE "
            "(no code_challenge_methods_supported), so not S256: refused"
        )
    if "S256" not in methods:
        offered = ", ".join(map(str, methods)) or "no method"
        raise SignInFailed(f"the authorization server offers PKCE {offered}, not S256: refused")


async def authorization_code(
    http: httpx.AsyncClient,
    found: Discovered,
    opener: Opener,
    options: SignInOptions,
    kept: Registration | None,
) -> JSONObject:
    """Steps 3 and 5 for a person: a client, then the code grant with PKCE in a browser."""
    server = found.server
    check_pkce(server)
    authorization_endpoint = endpoint_of(server, "authorization_endpoint")
    endpoint_of(server, "token_endpoint")  # before a person is asked, not after
    registered = kept.redirect_uri if kept else None
    try:
        listener = await loopback_listener(urlsplit(registered).port or 0 if registered else 0)
    except OSError:  # its port is taken now: a registration anew, at another
        kept, registered = None, None
        listener = await loopback_listener(0)
    try:
        port = listener.socket.getsockname()[1]
        redirect_uri = registered or f"http://127.0.0.1:{port}/callback"
        client = kept or await register(http, server, options, redirect_uri)
        verifier, state = generate_token(64), generate_token(32)
        extra: dict[str, Any] = {
            "code_challenge": create_s256_code_challenge(verifier),
            "code_challenge_method": "S256",
            "resource": found.resource,
        }
        url = prepare_grant_uri(
            authorization_endpoint,
            client.client_id,
            "code",
            redirect_uri=redirect_uri,
            scope=found.scope,
            state=state,
            **extra,
        )
        with trio.fail_after(CALLBACK_WAIT_S):
            # Failure policy: the opener (the URL printed, a browser started) fails
            # only by a defect, which ends the sign-in; the callback cancels it.
            async with trio.open_nursery() as nursery:
                nursery.start_soon(opener, url)
                answer = await await_callback(listener, urlsplit(redirect_uri).path, state)
                nursery.cancel_scope.cancel()
    except trio.TooSlowError:
        raise SignInFailed(
            f"no answer came back to the browser within {CALLBACK_WAIT_S:g} s"
        ) from None
    finally:
        await listener.aclose()
    code = check_response(answer, server)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
        "resource": found.resource,
    }
    tokens = await token_request(http, server, client, form)
    return record(found, client, tokens, AUTHORIZATION_CODE)


async def client_credentials(
    http: httpx.AsyncClient, found: Discovered, client: Registration
) -> JSONObject:
    """Step 5 for the client itself: the client credentials grant (OAuth 2.1 §4.2).

    ``offline_access`` is not asked for: this grant issues no refresh token
    (§4.2.3); the kept credentials get the next token.
    """
    scope = " ".join(s for s in (found.scope or "").split() if s != OFFLINE_ACCESS) or None
    form = {"grant_type": CLIENT_CREDENTIALS, "resource": found.resource}
    if scope:
        form["scope"] = scope
    tokens = await token_request(http, found.server, client, form)
    return record(attrs.evolve(found, scope=scope), client, tokens, CLIENT_CREDENTIALS)


def record(found: Discovered, client: Registration, tokens: JSONObject, grant: str) -> JSONObject:
    """What is kept of a sign-in (or a refresh): enough to get the next token alone."""
    expires_in = tokens.get("expires_in")
    if isinstance(expires_in, int | float):  # any JSON number: no float holds 10**400
        expires_in = min(expires_in, sys.float_info.max)
    # RFC 6749 §5.1: the scope granted, space-delimited; absent (or none that is a
    # string: a list, say), the one asked for. A step-up adds to it (.discovery).
    granted = tokens.get("scope")
    return {
        "resource": found.resource,
        "issuer": found.issuer,
        "token_endpoint": found.server.get("token_endpoint"),
        "grant": grant,
        "client": attrs.asdict(client),
        "access_token": tokens["access_token"],
        "refresh_token": tokens.get("refresh_token"),
        "scope": granted if isinstance(granted, str) else found.scope,
        "expires_at": time.time() + expires_in if isinstance(expires_in, int | float) else None,
    }


async def refresh(http: httpx.AsyncClient, kept: JSONObject) -> JSONObject | None:
    """A new access token without the person: by the kept refresh token, or for a client
    signed in as itself by its kept credentials; None when neither can be had."""
    if not isinstance(kept.get("client"), dict):
        return None
    client = Registration(**kept["client"])
    issuer = str(kept["issuer"])
    server = {"token_endpoint": kept.get("token_endpoint"), "issuer": issuer}
    scope = kept.get("scope")
    found = Discovered(str(kept["resource"]), issuer, server, str(scope) if scope else None)
    try:
        if kept.get("grant") == CLIENT_CREDENTIALS:
            return await client_credentials(http, found, client)
        if not kept.get("refresh_token"):
            return None
        form = {
            "grant_type": "refresh_token",
            "refresh_token": str(kept["refresh_token"]),
            "resource": found.resource,
        }
        tokens = await token_request(http, server, client, form)
    except SignInFailed:
        return None
    tokens.setdefault("refresh_token", kept["refresh_token"])
    return record(found, client, tokens, AUTHORIZATION_CODE)
