"""presa as an OAuth 2.1 resource server: who may call, and with which scopes.

The :class:`ResourceGuard` is the HTTP edge's authorization rung. For each
request it:

1. reads the bearer token from the ``Authorization`` header — the only place
   a token may travel (a token in the query string is 400
   ``invalid_request``; authorization §Access Token Usage);
2. verifies it (:mod:`~presa_trio.auth.jwt_tokens`,
   :mod:`~presa_trio.auth.introspection`, :mod:`~presa_trio.auth.static`):
   no token, or one that does not verify, is 401 with a ``WWW-Authenticate:
   Bearer`` challenge naming the Protected Resource Metadata
   (``resource_metadata``), plus ``error="invalid_token"`` when a token was
   sent and the ``scope`` every request needs (RFC 6750 §3; authorization
   §Error Handling, §Scope Selection Strategy). A token verified before is
   answered from what the guard remembers of it, by its SHA-256 and a
   lookup (:meth:`ResourceGuard.remembered`, no coroutine); only a new one
   is verified (:meth:`ResourceGuard.authenticate`);
3. once the JSON-RPC method is known, checks the token's scopes against what
   this method (and, for ``tools/call``, this tool) requires: 403
   ``error="insufficient_scope"`` naming every required scope in one
   challenge (authorization §Runtime Insufficient Scope Errors).

It also serves the Protected Resource Metadata document (RFC 9728) at the
well-known URI for the endpoint's path and at the root form
(authorization-server-discovery §Protected Resource Metadata Discovery
Requirements).

The verified :class:`~presa_trio.auth.principal.Principal` goes with the
request to its handler, with an :class:`~presa_trio.auth.principal.Access`:
the scopes the request needed (a task keeps those of the call that made it,
and every later request on the task needs them too) and :meth:`lapsed`,
which a long-lived stream awaits to end when the token does. The token
itself is kept only by the request it came with.

An authorization server that cannot be reached is 503 with ``Retry-After``;
a configuration that cannot work with it is 500, logged once with the
reason (:class:`~presa_trio.auth.verifier.Misconfigured`).

Each decision is told to :attr:`ResourceGuard.on_decision` (``--metrics``) by
its outcome, one of seven: a request's scopes ``granted`` or
``insufficient_scope`` (a task's resource may ask again, later in the same
request), or its token refused: ``missing``, ``invalid_request``,
``invalid_token``; or not checked: ``unavailable``, ``misconfigured``.
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

import attrs
import httpx
import trio

from presa_trio.auth.jwt_tokens import looks_like_jwt
from presa_trio.auth.keys import KeysPending
from presa_trio.auth.principal import Access, Principal
from presa_trio.auth.verifier import (
    InvalidToken,
    Misconfigured,
    TokenCache,
    Verified,
    Verifier,
    VerifierUnavailable,
    token_digest,
)
from presa_trio.wire.http_values import B64TOKEN, Headers, Rejection

log = logging.getLogger(__name__)

WELL_KNOWN = "/.well-known/oauth-protected-resource"
#: How long presa waits for the authorization server (metadata, keys, introspection).
HTTP_TIMEOUT_S = 10.0
#: Least wait between two checks of a stream's token (a clock read early cannot spin).
RECHECK_MIN_S = 0.01


#: An RFC 6749 §3.3 ``scope-token``: printable ASCII but space, ``"`` and ``\``.
SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")


def scope_tokens(
    _: object,
    attribute: attrs.Attribute[Any],
    value: frozenset[str] | Mapping[str, frozenset[str]],
) -> None:
    """Refuse a scope that is no ``scope-token``: a challenge's ``scope`` and a token's
    ``scope`` claim separate scopes by spaces, so such a scope could never be held."""
    groups = list(value.values()) if isinstance(value, Mapping) else [value]
    for scopes in groups:
        for scope in scopes:
            if SCOPE_TOKEN.fullmatch(scope) is None:
                raise ValueError(
                    f"{attribute.name}: {scope!r} is not a scope-token "
                    '(RFC 6749 §3.3: printable ASCII, no space, " or \\)'
                )


@attrs.frozen
class ScopeRules:
    """The scopes a request needs: those of every request, its method's, its tool's.

    Usage::

        ScopeRules(
            every_request=frozenset({"mcp"}),
            methods={"tasks/cancel": frozenset({"tasks:cancel"})},
            tools={"delete_everything": frozenset({"admin"})},
            implied={"files": frozenset({"files:read", "files:write"})},
        )

    ``implied`` is the server's scope hierarchy: a token with a broader scope
    holds the narrower ones it implies, and what those imply in turn
    (authorization §Step-Up Authorization Flow: servers MUST account for scope
    hierarchies).
    """

    every_request: frozenset[str] = attrs.field(default=frozenset(), validator=scope_tokens)
    methods: Mapping[str, frozenset[str]] = attrs.field(factory=dict, validator=scope_tokens)
    tools: Mapping[str, frozenset[str]] = attrs.field(factory=dict, validator=scope_tokens)
    implied: Mapping[str, frozenset[str]] = attrs.field(factory=dict, validator=scope_tokens)
    # Every scope a request needs, worked out once: by method (for the methods
    # with a rule of their own) and, for ``tools/call``, by tool (for the tools
    # with one). :meth:`ResourceGuard.authorize` reads them.
    by_method: Mapping[str, frozenset[str]] = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(
            lambda self: {m: self.every_request | s for m, s in self.methods.items()},
            takes_self=True,
        ),
    )
    by_tool: Mapping[str, frozenset[str]] = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(
            lambda self: {
                tool: self.by_method.get("tools/call", self.every_request) | scopes
                for tool, scopes in self.tools.items()
            },
            takes_self=True,
        ),
    )

    def held(self, granted: frozenset[str]) -> frozenset[str]:
        """The scopes a token granted ``granted`` holds: those, and all they imply."""
        held = set(granted)
        pending = [scope for scope in granted if scope in self.implied]
        while pending:
            for scope in self.implied[pending.pop()] - held:
                held.add(scope)
                if scope in self.implied:
                    pending.append(scope)
        return frozenset(held)

    def all(self) -> frozenset[str]:
        """Every scope any request may need."""
        found = set(self.every_request)
        for scopes in (*self.methods.values(), *self.tools.values()):
            found |= scopes
        return frozenset(found)


@attrs.define(eq=False)
class Verifiers:
    """Try the development tokens, then JWT or introspection, as the token's shape says.

    A token shaped like a JWS goes to the JWT verifier when there is one; any
    other token goes to introspection when it is configured. An opaque token
    when only JWTs are checked (and no development tokens) is refused saying
    so, and logged once: the issuer may issue opaque tokens, which needs
    introspection (``--auth-client-id``).
    """

    static: Verifier | None = None
    jwt: Verifier | None = None
    introspection: Verifier | None = None
    _told_opaque: bool = False

    def pick(self, token: str) -> Verifier | None:
        """The verifier for the token's shape: JWT or introspection."""
        if self.jwt is not None and looks_like_jwt(token):
            return self.jwt
        return self.introspection

    async def verify(self, token: str, http: httpx.AsyncClient) -> Verified:
        failure = InvalidToken("The access token is not recognised")
        if self.static is not None:
            try:
                return await self.static.verify(token, http)
            except InvalidToken as exc:
                failure = exc
        verifier = self.pick(token)
        if verifier is not None:
            return await verifier.verify(token, http)
        if self.jwt is not None and self.static is None:
            if not self._told_opaque:
                self._told_opaque = True
                log.warning(
                    "a client sent an access token that is not a JWT, and presa checks JWTs "
                    "only: if the issuer issues opaque tokens, configure introspection "
                    "(--auth-client-id)"
                )
            raise InvalidToken("This server accepts JWT access tokens (RFC 9068) only")
        raise failure

    async def prepare(self, http: httpx.AsyncClient) -> None:
        for verifier in (self.static, self.jwt, self.introspection):
            if verifier is not None:
                await verifier.prepare(http)


#: What an ``error_description`` may not hold (RFC 6750 §3: printable ASCII but ``"``
#: and ``\``); it may name what the client sent, such as the request's method.
NOT_IN_DESCRIPTION = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")

#: A request's bearer token, as sent, and the caller it was verified to stand for.
Caller = tuple[bytes, Principal]


def quoted(value: str) -> str:
    """An RFC 7235 quoted-string."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def ignore_decision(outcome: str) -> None:
    """The default: nobody counts the decisions."""


@attrs.define(eq=False)
class ResourceGuard:
    """The authorization rung of one protected MCP endpoint."""

    # The server's canonical URI (RFC 8707 §2), e.g. ``https://mcp.example.com/mcp``.
    resource: str
    verifier: Verifier
    # Issuer identifiers of the authorization servers clients may use; at least
    # one (authorization §Authorization Server Location: the metadata MUST name one).
    authorization_servers: Sequence[str] = attrs.field(kw_only=True)
    scopes: ScopeRules = attrs.field(factory=ScopeRules)
    # The ``scopes_supported`` advertised; default: the scopes every request needs.
    scopes_supported: Sequence[str] | None = None
    resource_name: str | None = None
    _http: httpx.AsyncClient | None = None
    # Every verification made, by token digest, until it runs out (:meth:`remembered`).
    _verified: TokenCache[Verified] = attrs.field(factory=TokenCache)
    # Misconfigurations already logged (each is logged once).
    _told: set[str] = attrs.field(factory=set)
    # Told the outcome of each decision (see the module docstring); synchronous.
    on_decision: Callable[[str], None] = ignore_decision
    # Where the metadata document is, for ``resource_metadata`` (RFC 9728 §3.1), and
    # the paths it is served at. Worked out once, as fields: a ``cached_property``
    # would give this slotted class a ``__getattr__``, and every attribute read on
    # the request path (``self.verifier``, ``self.scopes``) would take the slow,
    # unspecialised lookup.
    metadata_url: str = attrs.field(init=False)
    metadata_paths: frozenset[str] = attrs.field(init=False)

    @authorization_servers.validator
    def _names_a_server(self, _: object, servers: Sequence[str]) -> None:
        if not servers:
            raise ValueError(
                "the Protected Resource Metadata must name at least one authorization server"
            )

    # --- metadata (RFC 9728) ------------------------------------------------------

    def __attrs_post_init__(self) -> None:
        # The well-known URI inserted between the host and the path and query (RFC
        # 9728 §3.1), and the root form; the paths served are matched without
        # the query, and percent-decoded, as a request's path comes (ASGI's
        # ``path``): a resource ``/caf%C3%A9/mcp`` has its document requested
        # at ``…/caf%C3%A9/mcp``, which arrives as ``…/café/mcp``.
        parts = urlsplit(self.resource)
        path = WELL_KNOWN + parts.path.rstrip("/")
        self.metadata_url = urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
        self.metadata_paths = frozenset({unquote(path), WELL_KNOWN})

    def metadata(self) -> dict[str, Any]:
        """The Protected Resource Metadata document (RFC 9728 §2)."""
        supported = self.scopes_supported
        if supported is None:
            supported = sorted(self.scopes.every_request)
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if supported:
            document["scopes_supported"] = list(supported)
        if self.resource_name is not None:
            document["resource_name"] = self.resource_name
        return document

    def metadata_json(self) -> bytes:
        return json.dumps(self.metadata(), separators=(",", ":")).encode()

    # --- lifetime -----------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the HTTP client that talks to the authorization server, for the server's life.

        Beside it, :meth:`check_wiring` asks the authorization server at once
        whether the configuration can work; requests are served meanwhile.
        Failure policy of this nursery: the check never raises what it
        expects (an unreachable or misconfigured issuer, logged); anything
        else is a defect, and ends the server's lifetime.
        """
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT_S) as http, trio.open_nursery() as checks:
            self._http = http
            try:
                checks.start_soon(self.check_wiring, http)
                task_status.started()
                await trio.sleep_forever()
            finally:
                self._http = None

    async def check_wiring(self, http: httpx.AsyncClient) -> None:
        """Fetch the issuer's metadata and keys now, and say in one line what cannot work.

        It never raises: an unreachable server is asked again on first use,
        and a misconfiguration is logged (once) and answered 500 until fixed.
        """
        try:
            await self.verifier.prepare(http)
        except VerifierUnavailable as exc:
            log.warning("authorization server unreachable at start, asked again on use: %s", exc)
        except Misconfigured as exc:
            self.tell(exc)

    # --- the checks -----------------------------------------------------------------

    def challenge(
        self,
        error: str | None = None,
        description: str | None = None,
        scopes: frozenset[str] = frozenset(),
    ) -> tuple[bytes, bytes]:
        """A ``WWW-Authenticate: Bearer`` header (RFC 6750 §3, RFC 9728 §5.1).

        A character the ``error_description`` may not hold is a ``?`` there.
        """
        params = [f"resource_metadata={quoted(self.metadata_url)}"]
        if error is not None:
            params.append(f"error={quoted(error)}")
        if description is not None:
            params.append(f'error_description="{NOT_IN_DESCRIPTION.sub("?", description)}"')
        if scopes:
            params.append(f"scope={quoted(' '.join(sorted(scopes)))}")
        return b"www-authenticate", ("Bearer " + ", ".join(params)).encode("latin-1", "replace")

    def bearer_token(self, headers: Headers, query_string: bytes) -> bytes:
        """The token of the ``Authorization: Bearer`` header, as sent; else the 400 or 401.

        The header's bytes are taken as they came, for :func:`token_digest`;
        :meth:`authenticate` checks the shape of a token not remembered (one
        that is remembered was well-formed when it was verified).
        """
        if query_string and "access_token" in parse_qs(query_string.decode("latin-1")):
            raise self.bad_request("Access tokens must not be sent in the query string")
        if b"authorization" in headers.repeated:
            raise self.bad_request("More than one Authorization header")
        # RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is
        # case-insensitive (RFC 9110 §11.1). "Bearer" alone leaves an empty
        # token and "Bearer a, Bearer b" one that is no b64token, which
        # :meth:`authenticate` answers as malformed.
        scheme, _, token = headers.first.get(b"authorization", b"").strip().partition(b" ")
        if scheme != b"Bearer" and scheme.lower() != b"bearer":
            header = self.challenge(scopes=self.scopes.every_request)
            self.on_decision("missing")
            raise Rejection(401, "Authorization required", [header])
        return token.lstrip()

    def bad_request(self, description: str) -> Rejection:
        self.on_decision("invalid_request")
        header = self.challenge("invalid_request", description)
        return Rejection(400, description, [header])

    def remembered(self, token: bytes) -> Principal | None:
        """The caller of a token verified before, while that holds: a lookup, no coroutine.

        This is the common case (clients reuse their token), and its whole
        cost is the token's digest and a dictionary lookup. A verification
        holds until its :attr:`~Verified.until` and while what it rests on is
        current (a JWT's key set, until the set is fetched again).
        """
        entry = self._verified.get(token_digest(token))
        if entry is None or time.time() >= entry[1]:
            return None
        verified = entry[0]
        basis = verified.basis
        return verified.principal if basis is None or basis.current else None

    async def authenticate(self, token: bytes) -> Principal:
        """The caller of a token not :meth:`remembered`, or the 400 (401, 500, 503) that
        answers it."""
        if B64TOKEN.fullmatch(token) is None:
            raise self.bad_request("Malformed bearer token")
        if self._http is None:
            self.on_decision("unavailable")
            raise Rejection(503, "The server is not running")
        try:
            verified = await self.verifier.verify(token.decode("ascii"), self._http)
        except InvalidToken as exc:
            self.on_decision("invalid_token")
            header = self.challenge("invalid_token", str(exc), self.scopes.every_request)
            raise Rejection(401, str(exc), [header]) from exc
        except VerifierUnavailable as exc:
            self.on_decision("unavailable")
            if not isinstance(exc, KeysPending):
                log.warning("cannot check an access token: %s", exc)
            retry = (b"retry-after", b"%d" % exc.retry_after_s)
            raise Rejection(503, "The authorization server is unavailable", [retry]) from exc
        except Misconfigured as exc:
            self.on_decision("misconfigured")
            self.tell(exc)
            raise Rejection(500, "This server's authorization is misconfigured") from exc
        if self.scopes.implied:  # once per verification, not per request
            principal = verified.principal
            principal = attrs.evolve(principal, scopes=self.scopes.held(principal.scopes))
            verified = attrs.evolve(verified, principal=principal)
        until = math.inf if verified.until is None else verified.until
        self._verified.put(token_digest(token), verified, until, time.time())
        return verified.principal

    def tell(self, problem: Misconfigured) -> None:
        """Log a misconfiguration, once per distinct reason."""
        if str(problem) not in self._told:
            self._told.add(str(problem))
            log.error("authorization cannot work: %s", problem)

    def authorize(self, caller: Caller, method: str, params: Mapping[str, Any]) -> Access:
        """The request's :class:`Access`: the scopes it needs, and its token to watch.

        It needs those of every request, its method's and, for ``tools/call``,
        its tool's (:class:`ScopeRules`), all at once, never one by one: 403
        ``insufficient_scope`` naming them all unless the token has every one.
        """
        token, principal = caller
        rules = self.scopes
        needed = rules.by_method.get(method, rules.every_request)
        if rules.by_tool and method == "tools/call":
            name = params.get("name")
            if isinstance(name, str):
                needed = rules.by_tool.get(name, needed)
        if not needed <= principal.scopes:
            raise self.insufficient(method, needed)
        self.on_decision("granted")
        return Access(needed, self, token)

    def insufficient(self, method: str, needed: frozenset[str]) -> Rejection:
        """The 403 naming every scope ``method`` needs (authorization §Runtime Insufficient
        Scope Errors)."""
        self.on_decision("insufficient_scope")
        description = f"{method} requires the scopes: {' '.join(sorted(needed))}"
        header = self.challenge("insufficient_scope", description, needed)
        return Rejection(403, description, [header])

    async def lapsed(self, token: bytes) -> None:
        """Return once ``token`` stops being valid: expired, revoked, its key withdrawn.

        The token is verified again whenever its last verification runs out
        (:attr:`Verified.until`: a JWT's ``exp`` plus the leeway, or the key
        set's expiry; an introspection answer's cache lifetime), so a stream
        ends within that bound, and as soon as what the verification rests
        on is superseded (a JWT's key set fetched again, which may have
        withdrawn its key). A check that cannot be made (the issuer is
        unreachable) ends it too: authority that cannot be confirmed is not
        assumed. A development token never lapses.
        """
        http = self._http
        text = token.decode("ascii")
        while http is not None:
            try:
                verified = await self.verifier.verify(text, http)
            except (InvalidToken, VerifierUnavailable, Misconfigured) as exc:
                log.info("a stream's access token lapsed: %s", exc)
                return
            if verified.until is None:
                await trio.sleep_forever()
            # Again when the verification runs out, or once what it rests on is superseded.
            with trio.move_on_after(max(verified.until - time.time(), RECHECK_MIN_S)):
                if verified.basis is None:
                    await trio.sleep_forever()
                else:
                    await verified.basis.superseded.wait()
