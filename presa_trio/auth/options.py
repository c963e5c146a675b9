"""The ``--auth-*`` command-line options, and the guard they build.

Authorization is off unless an ``--auth-*`` option is given; then
``--auth-issuer`` is required, since the Protected Resource Metadata must
name the authorization server clients get tokens from (authorization
§Authorization Server Location), and a missing one is one line and exit 2:

- ``--auth-issuer URL``: the authorization server, exactly as its metadata
  names itself; it is advertised in the metadata, and by itself means JWT
  access tokens (RFC 9068) checked against its JWKS;
- ``--auth-client-id ID`` (with ``--auth-client-secret`` or the
  ``PRESA_AUTH_CLIENT_SECRET`` environment variable, when the server wants
  one): opaque tokens through introspection (RFC 7662), at
  ``--auth-introspection-endpoint`` or the one the issuer's metadata names
  (the secret and the endpoint are refused without ``--auth-client-id``);
- ``--auth-token NAME=SECRET`` (repeatable): development tokens, for
  discussing the spec on loopback (on any other host they are served,
  with a warning);
- ``--auth-resource URL``: the canonical URI tokens must be issued for
  (default ``http://HOST:PORT/mcp``); ``--auth-scope SCOPE`` (repeatable):
  scopes every request needs, also advertised as ``scopes_supported``;
  ``--auth-tool-scope TOOL=SCOPE`` (repeatable): scopes a tool's calls need,
  and with them every request on a task the call made;
  ``--auth-scope-implies BROAD=NARROW`` (repeatable): the scope hierarchy, a
  token with BROAD holding NARROW too;
- ``--auth-cache-ttl``, ``--auth-key-refetch``, ``--auth-leeway``: how long
  an introspection answer is kept (the revocation lag), how often the key
  set may be fetched again, the clock skew allowed. They have defaults, so
  they do not turn authorization on: without ``--auth-client-id`` (the
  first) or ``--auth-issuer`` (the others) they would change nothing, and
  are refused (:class:`~presa_trio.needed_options.NeedsOption`).
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from presa_trio.auth.principal import DEFAULT_LEEWAY_S
from presa_trio.needed_options import NeedsOption
from presa_trio.wire.http_values import authority, in_the_clear, is_loopback

if TYPE_CHECKING:
    from presa_trio.auth.guard import ResourceGuard

CLIENT_SECRET_ENV = "PRESA_AUTH_CLIENT_SECRET"
#: Addresses that bind every interface: no canonical URI can be made from them.
WILDCARDS = frozenset({"0.0.0.0", "::", "[::]"})

#: Longest an introspection answer is kept, in seconds: a revoked token works this long.
DEFAULT_CACHE_TTL_S = 60.0
#: Least time between two fetches of the issuer's key set, in seconds.
DEFAULT_KEY_REFETCH_S = 10.0

log = logging.getLogger(__name__)


def add_auth_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "authorization (off by default; HTTP only, stdio takes credentials from its environment)"
    )
    group.add_argument(
        "--auth-issuer",
        metavar="URL",
        help="the authorization server, exactly as its metadata names itself; required with "
        "any --auth-* option; alone, JWT access tokens checked with its keys (default: none)",
    )
    group.add_argument(
        "--auth-client-id",
        metavar="ID",
        help="introspect opaque tokens (RFC 7662) as this client (default: none)",
    )
    group.add_argument(
        "--auth-client-secret",
        action=NeedsOption,
        needs="--auth-client-id",
        why="it is the introspection client's secret",
        metavar="SECRET",
        help="the introspection client's secret; needs --auth-client-id "
        f"(default: env {CLIENT_SECRET_ENV})",
    )
    group.add_argument(
        "--auth-introspection-endpoint",
        action=NeedsOption,
        needs="--auth-client-id",
        why="it is where tokens are introspected",
        metavar="URL",
        help="introspection endpoint; needs --auth-client-id "
        "(default: the issuer's introspection_endpoint)",
    )
    group.add_argument(
        "--auth-token",
        action="append",
        default=[],
        metavar="NAME=SECRET",
        help="a development token standing for principal NAME; repeatable; meant for "
        "loopback (a warning on any other host) (default: none)",
    )
    group.add_argument(
        "--auth-resource",
        metavar="URL",
        help="this server's canonical URI, the audience tokens must name "
        "(default: http://HOST:PORT/mcp)",
    )
    group.add_argument(
        "--auth-scope",
        action="append",
        default=[],
        metavar="SCOPE",
        help="a scope every request needs (advertised in scopes_supported); repeatable "
        "(default: none)",
    )
    group.add_argument(
        "--auth-tool-scope",
        action="append",
        default=[],
        metavar="TOOL=SCOPE",
        help="a scope calls of TOOL need, and every request on a task it made; repeatable "
        "(default: none)",
    )
    group.add_argument(
        "--auth-scope-implies",
        action="append",
        default=[],
        metavar="BROAD=NARROW",
        help="a token with scope BROAD holds scope NARROW too (a scope hierarchy); "
        "repeatable (default: none)",
    )
    group.add_argument(
        "--auth-leeway",
        action=NeedsOption,
        needs="--auth-issuer",
        why="it is the clock skew allowed on the issuer's JWT access tokens",
        type=int,
        default=DEFAULT_LEEWAY_S,
        metavar="SECONDS",
        help="clock skew allowed on a JWT's exp/nbf/iat and an introspected nbf (an "
        "introspected exp is the issuer's to judge); needs --auth-issuer "
        f"(default: {DEFAULT_LEEWAY_S})",
    )
    group.add_argument(
        "--auth-cache-ttl",
        action=NeedsOption,
        needs="--auth-client-id",
        why="it is how long an introspection answer is kept",
        type=float,
        default=DEFAULT_CACHE_TTL_S,
        metavar="SECONDS",
        help="longest an introspection answer is kept: a revoked opaque token keeps working, "
        "and a listen stream opened with it stays open, up to this long; needs "
        f"--auth-client-id (default: {DEFAULT_CACHE_TTL_S:g})",
    )
    group.add_argument(
        "--auth-key-refetch",
        action=NeedsOption,
        needs="--auth-issuer",
        why="it is how often the issuer's key set may be fetched",
        type=float,
        default=DEFAULT_KEY_REFETCH_S,
        metavar="SECONDS",
        help="least time between two fetches of the issuer's key set; a token of a new key "
        "waits (503, Retry-After) at most this long; needs --auth-issuer "
        f"(default: {DEFAULT_KEY_REFETCH_S:g})",
    )


def auth_requested(args: argparse.Namespace) -> bool:
    """Whether any ``--auth-*`` option (other than those with defaults, which need
    another) was given."""
    names = ("issuer", "client_id", "client_secret", "introspection_endpoint", "resource")
    listed = ("token", "scope", "tool_scope", "scope_implies")
    return any(getattr(args, "auth_" + name) for name in (*names, *listed))


def scope_pairs(flag: str, options: list[str]) -> dict[str, frozenset[str]]:
    """``NAME=SCOPE`` options -> the scopes of each name; a malformed one is ``ValueError``.

    ``--auth-tool-scope``: a tool's scopes; ``--auth-scope-implies``: a scope's narrower ones.
    """
    found: dict[str, set[str]] = {}
    for option in options:
        name, equals, scope = option.partition("=")
        if not (name and equals and scope):
            raise ValueError(f"{flag}: expected NAME=SCOPE, got {option!r}")
        found.setdefault(name, set()).add(scope)
    return {name: frozenset(scopes) for name, scopes in found.items()}


def is_canonical_uri(uri: str) -> bool:
    """Whether ``uri`` can name an MCP server: http(s), a host, a port if any that is
    one (1 to 65535), no fragment, and no space or control character.

    Spec: authorization §Canonical Server URI (``mcp.example.com``, without
    a scheme, and a URI with a fragment are invalid); RFC 8707 §2 (an absolute
    URI, RFC 3986 §4.3, whose characters hold no space, §2).
    """
    try:
        parts = urlsplit(uri)
        port_usable = parts.port != 0  # reading it checks it: ValueError when it is none
    except ValueError:  # a bracketed host that is no address, a port that is none
        return False
    return (
        port_usable
        and parts.scheme.lower() in ("http", "https")
        and bool(parts.hostname)
        and "#" not in uri
        and uri.isprintable()
        and " " not in uri
    )


def guard_from_args(args: argparse.Namespace, host: str) -> Callable[[int], ResourceGuard]:
    """The guard the options describe, for the port the server binds.

    A bad combination is ``ValueError`` at once, before anything is bound.
    Without ``--auth-resource`` the resource is ``http://HOST:PORT/mcp`` with
    the port as bound: with ``--port 0``, the port the system picked, which
    the metadata and every challenge name (and every token's ``aud`` must).

    The verifiers are imported here, not at the top: a server that runs
    without authorization never loads httpx, joserfc and cryptography.
    """
    from presa_trio.auth.guard import ResourceGuard, ScopeRules, Verifiers
    from presa_trio.auth.introspection import IntrospectionVerifier
    from presa_trio.auth.jwt_tokens import JwtVerifier
    from presa_trio.auth.static import StaticTokens, parse_token_option

    if not args.auth_issuer:
        raise ValueError(
            "authorization needs --auth-issuer: the metadata must name the authorization "
            "server that issues the tokens"
        )
    if not is_canonical_uri(args.auth_issuer) or urlsplit(args.auth_issuer).query:
        raise ValueError(
            f"--auth-issuer {args.auth_issuer}: an http(s) URL with a host, and no query "
            "or fragment (RFC 8414 §2), as the issuer's metadata names it"
        )
    endpoint = args.auth_introspection_endpoint
    if endpoint is not None and not is_canonical_uri(endpoint):
        raise ValueError(
            f"--auth-introspection-endpoint {endpoint}: an http(s) URL with a host, "
            "and no fragment (RFC 8414 §2)"
        )
    if not (args.auth_cache_ttl > 0 and args.auth_key_refetch > 0):
        raise ValueError("--auth-cache-ttl and --auth-key-refetch must be positive")
    if args.auth_resource is None and host in WILDCARDS:
        raise ValueError(f"--host {host} needs --auth-resource (this server's public URI)")
    if args.auth_resource is not None and not is_canonical_uri(args.auth_resource):
        raise ValueError(
            f"--auth-resource {args.auth_resource}: an absolute http(s) URI with a host "
            "and no fragment (authorization §Canonical Server URI)"
        )
    if args.auth_token and not is_loopback(host):
        log.warning("development tokens on %s: they are meant for loopback only", host)
    resource = args.auth_resource or f"http://{authority(host.lower(), 0)}/mcp"
    if in_the_clear(resource):
        log.warning(
            "%s is not HTTPS: clients would send their access tokens in the clear (OAuth 2.1 "
            "§1.5); serve it behind TLS and give --auth-resource https://…",
            f"--auth-resource {resource}" if args.auth_resource else f"the resource on {host}",
        )
    for flag in ("--auth-issuer", "--auth-introspection-endpoint"):
        url = getattr(args, flag[2:].replace("-", "_"))
        if url and in_the_clear(url):
            log.warning(
                "%s %s is not HTTPS: presa would trust its keys, and send it tokens, in the "
                "clear (authorization servers MUST be served over HTTPS)",
                flag,
                url,
            )
    tools = scope_pairs("--auth-tool-scope", args.auth_tool_scope)
    implied = scope_pairs("--auth-scope-implies", args.auth_scope_implies)
    try:
        rules = ScopeRules(every_request=frozenset(args.auth_scope), tools=tools, implied=implied)
    except ValueError as exc:
        raise ValueError(f"--auth-scope, --auth-tool-scope, --auth-scope-implies: {exc}") from exc
    static = None
    if args.auth_token:
        names = {secret: name for name, secret in map(parse_token_option, args.auth_token)}
        static = StaticTokens(names, scopes=rules.all())

    def guard_at(port: int) -> ResourceGuard:
        resource = args.auth_resource or f"http://{authority(host.lower(), port)}/mcp"
        introspection = None
        if args.auth_client_id:
            introspection = IntrospectionVerifier(
                args.auth_client_id,
                args.auth_client_secret or os.environ.get(CLIENT_SECRET_ENV),
                resource,
                issuer=args.auth_issuer,
                endpoint=args.auth_introspection_endpoint,
                max_cache_s=args.auth_cache_ttl,
                leeway_s=args.auth_leeway,
            )
        jwt = JwtVerifier(
            args.auth_issuer,
            resource,
            leeway_s=args.auth_leeway,
            refetch_interval_s=args.auth_key_refetch,
        )
        return ResourceGuard(
            resource=resource,
            verifier=Verifiers(static, jwt, introspection),
            authorization_servers=[args.auth_issuer],
            scopes=rules,
        )

    return guard_at
