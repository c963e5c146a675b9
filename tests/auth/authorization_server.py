"""A real OAuth 2.1 authorization server for the tests, on hypercorn and Trio.

It is small, but nothing in it is faked: tokens are signed with RSA keys by
joserfc and published as a JWKS, clients authenticate with their secrets, and
presa talks to it over loopback HTTP exactly as it would to a production
issuer. It serves:

- ``/.well-known/oauth-authorization-server`` — RFC 8414 metadata (tests
  may change or drop members with :attr:`metadata_changes`), the same at
  ``/.well-known/openid-configuration`` (OpenID Connect Discovery 1.0);
- ``/jwks`` — the public signing keys (RFC 7517), with ``Cache-Control:
  max-age`` = :attr:`jwks_max_age`;
- ``/register`` — dynamic client registration (RFC 7591): a new client
  with a secret, for ``client_secret_basic`` or ``_post``, or without, for
  ``none`` (a public client, which then must use PKCE);
- ``/authorize`` — the authorization code grant with PKCE ``S256`` (OAuth
  2.1 §4.1), for a user who is already signed in and consents: the
  ``login_hint`` names the user (default alice); the redirect carries ``iss``
  (RFC 9207);
- ``/token`` — the client credentials grant (OAuth 2.1 §4.2), the code
  exchange (which also issues a refresh token) and the refresh token grant
  (§4.3, the refresh token rotated), with ``client_secret_basic`` or ``client_secret_post``,
  or ``private_key_jwt`` (RFC 7523 §3, ``aud`` the issuer) for a client
  registered with a public key; the ``resource`` parameter (RFC 8707)
  becomes the token's ``aud``; a client issues either RFC 9068 JWTs or
  opaque tokens;
- ``/introspect`` — RFC 7662, for clients authenticated as
  :attr:`introspection_methods` allow (``none`` lets anyone ask).

Each test client acts for one user (``alice-app`` for alice, ...), so a
client credentials token names that user as its ``sub``. Tests reach past
the wire to rotate the signing key (:meth:`rotate_keys`) and to mint tokens
a well-behaved server would not issue (expired, for another resource).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode

import attrs
from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, Scope
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import Key, RSAKey
from joserfc.registry import HeaderParameter


@attrs.frozen
class Client:
    """A registered client: its secret, the user it acts for, how its tokens look."""

    secret: str | None
    subject: str
    token_format: str = "jwt"  # or "opaque"
    redirect_uris: tuple[str, ...] = ()
    #: The key a ``private_key_jwt`` client's assertions are checked with.
    public_key: Key | None = None


#: The clients of every test: two users, each with a JWT and an opaque client,
#: and presa itself, which introspects.
CLIENTS = {
    "alice-app": Client("alice-secret", "alice"),
    "bob-app": Client("bob-secret", "bob"),
    "alice-opaque": Client("alice-opaque-secret", "alice", "opaque"),
    "bob-opaque": Client("bob-opaque-secret", "bob", "opaque"),
    "presa": Client("presa-secret", "presa"),
}
TOKEN_LIFETIME_S = 300
#: A header parameter of the issuer's own that it may make critical (RFC 7515 §4.1.11).
ISSUERS_OWN = "x-issuer-own"
#: Signs tokens whose header may carry parameters of the issuer's own (RFC 7515 §4).
SIGNING = jws.JWSRegistry(
    header_registry={ISSUERS_OWN: HeaderParameter("the issuer's own", "int")},
    strict_check_header=False,
)
JWT_BEARER_ASSERTION = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: Where its metadata is: RFC 8414 §3.1, and OpenID Connect Discovery 1.0 §4.
METADATA_PATHS = ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration")


def new_key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": secrets.token_hex(8), "use": "sig"})


async def answer_lifespan(receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
    """Start and stop as hypercorn asks, with nothing to do at either (ASGI lifespan)."""
    await receive()  # lifespan.startup
    await send({"type": "lifespan.startup.complete"})
    await receive()  # lifespan.shutdown
    await send({"type": "lifespan.shutdown.complete"})


@attrs.define(eq=False)
class AuthorizationServer:
    """The server's state, and its ASGI application (``await server(scope, ...)``)."""

    issuer: str = ""  # set once the socket is bound
    clients: dict[str, Client] = attrs.field(factory=lambda: dict(CLIENTS))
    key: RSAKey = attrs.field(factory=new_key)
    # Opaque token -> its introspection answer.
    opaque: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    # How many times each path was requested.
    hits: dict[str, int] = attrs.field(factory=dict)
    # Authorization code -> (client, user, PKCE challenge, resource, scope).
    codes: dict[str, tuple[str, str, str, str, str]] = attrs.field(factory=dict)
    # Refresh token -> (client, user, resource, scope): issued with each code exchange.
    refresh_tokens: dict[str, tuple[str, str, str, str]] = attrs.field(factory=dict)
    # Members the metadata document sets (a value) or leaves out (None).
    metadata_changes: dict[str, Any] = attrs.field(factory=dict)
    # Seconds the JWKS may be cached (``Cache-Control: max-age``).
    jwks_max_age: int = 300
    # Keys still published though no longer signing (a rotation's overlap).
    retired: list[RSAKey] = attrs.field(factory=list)
    # JWKs published beside the keys that sign, as they are (the issuer's other keys).
    also_published: list[dict[str, Any]] = attrs.field(factory=list)
    # How the introspection endpoint authenticates its callers.
    introspection_methods: tuple[str, ...] = ("client_secret_basic",)
    # How the token endpoint authenticates clients (its metadata may say otherwise).
    token_auth_methods: tuple[str, ...] = (
        "client_secret_basic",
        "client_secret_post",
        "private_key_jwt",
        "none",
    )
    # The ``token_type`` its token responses name (RFC 6749 §7.1).
    token_type: str = "Bearer"
    # Bodies sent instead of the answer, by path: a server that answers what no parser reads.
    bodies: dict[str, bytes] = attrs.field(factory=dict)
    # Statuses sent instead of the answer's, by path: a server failing, or its proxy.
    statuses: dict[str, int] = attrs.field(factory=dict)
    # The ``expires_in`` its token responses give (RFC 6749 §5.1: seconds, any JSON number).
    expires_in: Any = TOKEN_LIFETIME_S
    # The ``resource`` of each authorization and token request, in order (None: absent).
    resources_asked: list[str | None] = attrs.field(factory=list)
    # The client metadata of each registration request (RFC 7591 §2), in order.
    registrations: list[dict[str, Any]] = attrs.field(factory=list)

    # --- what tests do directly -------------------------------------------------

    def rotate_keys(self, *, keep_old: bool = False) -> None:
        """Sign with a new key from now on; the old one leaves the JWKS unless ``keep_old``."""
        if keep_old:
            self.retired.append(self.key)
        self.key = new_key()

    def mint_jwt(
        self,
        client_id: str,
        audience: str | list[str],
        *,
        subject: str | None = None,
        scope: str = "",
        lifetime_s: int = TOKEN_LIFETIME_S,
        issued_at: int | None = None,
        header: dict[str, Any] | None = None,
        claims: dict[str, Any] | None = None,
    ) -> str:
        """An RFC 9068 access token (RFC 9068 §2.2 claims), signed with the current key.

        ``claims`` and ``header`` replace those it would set, and a ``None`` there
        leaves one out: values no honest issuer signs.
        """
        now = int(time.time()) if issued_at is None else issued_at
        signed = {
            "iss": self.issuer,
            "sub": subject or self.clients[client_id].subject,
            "aud": audience,
            "client_id": client_id,
            "iat": now,
            "nbf": now,
            "exp": now + lifetime_s,
            "jti": secrets.token_hex(16),
        }
        if scope:
            signed["scope"] = scope
        signed = {k: v for k, v in {**signed, **(claims or {})}.items() if v is not None}
        protected = {"alg": "RS256", "typ": "at+jwt", "kid": self.key.kid, **(header or {})}
        protected = {k: v for k, v in protected.items() if v is not None}
        # As a JWS, not ``jwt.encode``, which would put back a ``typ`` left out.
        claims_json = json.dumps(signed, separators=(",", ":"))
        return jws.serialize_compact(protected, claims_json, self.key, registry=SIGNING)

    def mint_opaque(
        self,
        client_id: str,
        audience: str,
        *,
        subject: str | None = None,
        scope: str = "",
        lifetime_s: int = TOKEN_LIFETIME_S,
    ) -> str:
        token = secrets.token_urlsafe(32)
        now = int(time.time())
        self.opaque[token] = {
            "active": True,
            "iss": self.issuer,
            "sub": subject or self.clients[client_id].subject,
            "aud": audience,
            "client_id": client_id,
            "scope": scope,
            "iat": now,
            "exp": now + lifetime_s,
            "token_type": "Bearer",
        }
        return token

    def secret(self, client_id: str) -> str:
        """The secret of a confidential client."""
        secret = self.clients[client_id].secret
        assert secret is not None, f"{client_id} is a public client"
        return secret

    def revoke(self, token: str) -> None:
        self.opaque.pop(token, None)

    # --- the endpoints ------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 §2."""
        document = {
            "issuer": self.issuer,
            "authorization_endpoint": self.issuer + "/authorize",
            "token_endpoint": self.issuer + "/token",
            "jwks_uri": self.issuer + "/jwks",
            "introspection_endpoint": self.issuer + "/introspect",
            "grant_types_supported": ["authorization_code", "client_credentials", "refresh_token"],
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "introspection_endpoint_auth_methods_supported": list(self.introspection_methods),
            "registration_endpoint": self.issuer + "/register",
        }
        document.update(self.metadata_changes)
        return {name: value for name, value in document.items() if value is not None}

    def authenticate_client(
        self,
        headers: dict[str, str],
        form: dict[str, str],
        methods: tuple[str, ...] = (
            "client_secret_basic",
            "client_secret_post",
            "private_key_jwt",
            "none",
        ),
    ) -> str | None:
        """The client id of valid credentials sent by one of ``methods`` (RFC 6749 §2.3.1).

        A client without a secret (registered for ``none``) is known by its
        ``client_id`` alone.
        """
        authorization = headers.get("authorization", "")
        if form.get("client_assertion_type") == JWT_BEARER_ASSERTION:
            if "private_key_jwt" not in methods:
                return None
            return self.assertion_client(form.get("client_assertion", ""))
        if authorization.lower().startswith("basic "):
            decoded = base64.b64decode(authorization[6:]).decode()
            client_id, _, secret = (unquote(part) for part in decoded.partition(":"))
            method = "client_secret_basic"
        elif "client_secret" in form:
            client_id, secret = form.get("client_id", ""), form["client_secret"]
            method = "client_secret_post"
        else:
            client_id, secret, method = form.get("client_id", ""), "", "none"
        client = self.clients.get(client_id)
        if client is None or method not in methods:
            return None
        if method == "none":
            public = client.secret is None and client.public_key is None
            return client_id if public else None
        if client.secret is None or not secrets.compare_digest(client.secret, secret):
            return None
        return client_id

    def assertion_client(self, assertion: str) -> str | None:
        """RFC 7523 §3: the client whose key signed ``assertion``, naming itself in ``iss``
        and ``sub`` and this server in ``aud``, unexpired; None for anything else."""
        try:
            payload = assertion.split(".")[1]
            claimed = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            client_id = str(claimed["sub"])
            key = self.clients[client_id].public_key
            if key is None:
                return None
            token = jwt.decode(assertion, key, algorithms=["ES256", "RS256", "Ed25519"])
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": client_id},
                sub={"essential": True, "value": client_id},
                aud={"essential": True, "value": self.issuer},
                exp={"essential": True},
            ).validate(token.claims)
        except (IndexError, KeyError, ValueError, JoseError):
            return None
        return client_id

    def register(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """RFC 7591 §3: any client may register; it gets an id (and a secret unless public)."""
        self.registrations.append(request)
        uris = request.get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            return 400, {"error": "invalid_redirect_uri"}
        method = request.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in ("client_secret_basic", "client_secret_post", "none"):
            return 400, {"error": "invalid_client_metadata"}
        client_id = "registered-" + secrets.token_hex(8)
        secret = None if method == "none" else secrets.token_urlsafe(24)
        self.clients[client_id] = Client(secret, client_id, redirect_uris=tuple(uris))
        answer = {**request, "client_id": client_id, "token_endpoint_auth_method": method}
        answer["client_id_issued_at"] = int(time.time())
        if secret is not None:
            answer["client_secret"] = secret
        return 201, answer

    def authorize(self, query: dict[str, str]) -> tuple[int, dict[str, Any], str | None]:
        """The authorization request (OAuth 2.1 §4.1.1): the user consents at once.

        Answers the redirect to ``redirect_uri`` with ``code``, ``state`` and
        ``iss``; PKCE ``S256`` is required.
        """
        self.resources_asked.append(query.get("resource"))
        client_id = query.get("client_id", "")
        redirect_uri = query.get("redirect_uri", "")
        client = self.clients.get(client_id)
        if client is None or not redirect_uri:
            return 400, {"error": "invalid_request"}, None
        if client.redirect_uris and redirect_uri not in client.redirect_uris:
            return 400, {"error": "invalid_request", "error_description": "redirect_uri"}, None
        if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
            return 400, {"error": "invalid_request"}, None
        code = secrets.token_urlsafe(24)
        user = query.get("login_hint", "alice")
        self.codes[code] = (
            client_id,
            user,
            query.get("code_challenge", ""),
            query.get("resource", ""),
            query.get("scope", ""),
        )
        answer = {"code": code, "iss": self.issuer}
        if "state" in query:
            answer["state"] = query["state"]
        return 302, {}, redirect_uri + "?" + urlencode(answer)

    def token(self, headers: dict[str, str], form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """Client credentials (OAuth 2.1 §4.2) or a code with its PKCE verifier (§4.1.3)."""
        self.resources_asked.append(form.get("resource"))
        client_id = self.authenticate_client(headers, form, self.token_auth_methods)
        if client_id is None:
            return 401, {"error": "invalid_client"}
        grant = form.get("grant_type")
        subject = self.clients[client_id].subject
        resource, scope = form.get("resource", ""), form.get("scope", "")
        if grant == "authorization_code":
            issued = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "").encode()
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
            if issued is None or issued[0] != client_id or issued[2] != challenge.decode():
                return 400, {"error": "invalid_grant"}
            _, subject, _, resource, scope = issued
        elif grant == "refresh_token":
            held = self.refresh_tokens.pop(form.get("refresh_token", ""), None)
            if held is None or held[0] != client_id:
                return 400, {"error": "invalid_grant"}
            _, subject, resource, scope = held
        elif grant != "client_credentials":
            return 400, {"error": "unsupported_grant_type"}
        elif self.clients[client_id].secret is None and self.clients[client_id].public_key is None:
            return 401, {"error": "invalid_client"}  # a public client has no credentials
        if not resource:
            return 400, {"error": "invalid_target", "error_description": "resource is required"}
        if self.clients[client_id].token_format == "opaque":
            token = self.mint_opaque(client_id, resource, subject=subject, scope=scope)
        else:
            token = self.mint_jwt(client_id, resource, subject=subject, scope=scope)
        answer: dict[str, Any] = {"access_token": token, "token_type": self.token_type}
        answer["expires_in"] = self.expires_in
        if grant in ("authorization_code", "refresh_token"):
            refresh_token = secrets.token_urlsafe(24)
            self.refresh_tokens[refresh_token] = (client_id, subject, resource, scope)
            answer["refresh_token"] = refresh_token
        if scope:
            answer["scope"] = scope
        return 200, answer

    def introspect(
        self, headers: dict[str, str], form: dict[str, str]
    ) -> tuple[int, dict[str, Any]]:
        """RFC 7662 §2: callers authenticate as configured; unknown or expired is inactive."""
        methods = self.introspection_methods
        if "none" not in methods and self.authenticate_client(headers, form, methods) is None:
            return 401, {"error": "invalid_client"}
        answer = self.opaque.get(form.get("token", ""))
        if answer is None or answer["exp"] <= time.time():
            return 200, {"active": False}
        return 200, answer

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        body = b""
        while True:
            event: Any = await receive()
            body += event.get("body", b"")
            if not event.get("more_body", False):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        path = scope["path"]
        self.hits[path] = self.hits.get(path, 0) + 1
        location = None
        if scope["method"] == "GET" and path == "/authorize":
            query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
            status, answer, location = self.authorize(query)
        elif scope["method"] == "POST" and path == "/register":
            status, answer = self.register(json.loads(body or b"{}"))
        else:
            status, answer = self.route(scope["method"], path, headers, form)
        status = self.statuses.get(path, status)
        caching = f"max-age={self.jwks_max_age}" if path == "/jwks" else "no-store"
        sent = [(b"content-type", b"application/json"), (b"cache-control", caching.encode())]
        if location is not None:
            sent.append((b"location", location.encode()))
        await send(
            {"type": "http.response.start", "status": status, "headers": sent, "trailers": False}
        )
        body = self.bodies.get(path) or json.dumps(answer).encode()
        await send({"type": "http.response.body", "body": body, "more_body": False})

    def route(
        self, method: str, path: str, headers: dict[str, str], form: dict[str, str]
    ) -> tuple[int, dict[str, Any]]:
        if method == "GET" and path in METADATA_PATHS:
            return 200, self.metadata()
        if method == "GET" and path == "/jwks":
            keys = [self.key, *self.retired]
            published = [key.as_dict(private=False) for key in keys]
            return 200, {"keys": [*self.also_published, *published]}
        if method == "POST" and path == "/token":
            return self.token(headers, form)
        if method == "POST" and path == "/introspect":
            return self.introspect(headers, form)
        return 404, {"error": "not_found"}
