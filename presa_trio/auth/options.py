"""The ``--auth-*`` command-line options, and the guard they build.

Authorization is off unless one of ``--auth-issuer``, ``--auth-client-id``
or ``--auth-token`` is given:

- ``--auth-issuer URL``: JWT access tokens (RFC 9068) of that authorization
  server, checked against its JWKS; the issuer is advertised in the
  Protected Resource Metadata;
- ``--auth-client-id ID`` (with ``--auth-client-secret`` or the
  ``PRESA_AUTH_CLIENT_SECRET`` environment variable): opaque tokens through
  introspection (RFC 7662), at ``--auth-introspection-endpoint`` or the one
  the issuer's metadata names;
- ``--auth-token NAME=SECRET`` (repeatable): development tokens, for
  discussing the spec on loopback only;
- ``--auth-resource URL``: the canonical URI tokens must be issued for
  (default ``http://HOST:PORT/mcp``); ``--auth-scope SCOPE`` (repeatable):
  scopes every request needs, also advertised as ``scopes_supported``.
"""

from __future__ import annotations

import argparse
import logging
import os
from typing import TYPE_CHECKING

from presa_trio.auth.principal import DEFAULT_LEEWAY_S

if TYPE_CHECKING:
    from presa_trio.auth.guard import ResourceGuard

CLIENT_SECRET_ENV = "PRESA_AUTH_CLIENT_SECRET"
#: Addresses that bind every interface: no canonical URI can be made from them.
WILDCARDS = frozenset({"0.0.0.0", "::", "[::]"})


log = logging.getLogger(__name__)


def add_auth_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "authorization (off by default; HTTP only, stdio takes credentials from its environment)"
    )
    group.add_argument(
        "--auth-issuer",
        metavar="URL",
        help="accept JWT access tokens of this authorization server (keys from its metadata) "
        "(default: none)",
    )
    group.add_argument(
        "--auth-client-id",
        metavar="ID",
        help="introspect opaque tokens (RFC 7662) as this client (default: none)",
    )
    group.add_argument(
        "--auth-client-secret",
        metavar="SECRET",
        help=f"the introspection client's secret (default: env {CLIENT_SECRET_ENV})",
    )
    group.add_argument(
        "--auth-introspection-endpoint",
        metavar="URL",
        help="introspection endpoint (default: the issuer's introspection_endpoint)",
    )
    group.add_argument(
        "--auth-token",
        action="append",
        default=[],
        metavar="NAME=SECRET",
        help="a development token standing for principal NAME; repeatable; loopback only "
        "(default: none)",
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
        "--auth-leeway",
        type=int,
        default=DEFAULT_LEEWAY_S,
        metavar="SECONDS",
        help=f"clock skew allowed on exp/nbf/iat (default: {DEFAULT_LEEWAY_S})",
    )


def auth_requested(args: argparse.Namespace) -> bool:
    """Whether any ``--auth-*`` option (other than the leeway) was given."""
    names = ("issuer", "client_id", "client_secret", "introspection_endpoint", "resource")
    return any(getattr(args, "auth_" + name) for name in (*names, "token", "scope"))


def guard_from_args(args: argparse.Namespace, host: str, port: int) -> ResourceGuard:
    """The guard the options describe; a bad combination is ``ValueError``.

    The verifiers are imported here, not at the top: httpx, joserfc and
    cryptography cost a server that runs without authorization some 15 MiB.
    """
    from presa_trio.auth.guard import ResourceGuard, ScopeRules, Verifiers
    from presa_trio.auth.introspection import IntrospectionVerifier
    from presa_trio.auth.jwt_tokens import JwtVerifier
    from presa_trio.auth.static import StaticTokens, parse_token_option
    from presa_trio.wire.http_values import is_loopback

    if not (args.auth_issuer or args.auth_client_id or args.auth_token):
        raise ValueError("authorization needs --auth-issuer, --auth-client-id or --auth-token")
    if args.auth_resource is None and host in WILDCARDS:
        raise ValueError(f"--host {host} needs --auth-resource (this server's public URI)")
    if args.auth_token and not is_loopback(host):
        log.warning("development tokens on %s: they are meant for loopback only", host)
    resource = args.auth_resource or f"http://{host.lower()}:{port}/mcp"
    rules = ScopeRules(every_request=frozenset(args.auth_scope))
    static = None
    if args.auth_token:
        names = {secret: name for name, secret in map(parse_token_option, args.auth_token)}
        static = StaticTokens(names, scopes=rules.all())
    jwt = None
    if args.auth_issuer:
        jwt = JwtVerifier(args.auth_issuer, resource, leeway_s=args.auth_leeway)
    introspection = None
    if args.auth_client_id:
        secret = args.auth_client_secret or os.environ.get(CLIENT_SECRET_ENV)
        if not secret:
            raise ValueError(f"--auth-client-id needs --auth-client-secret or {CLIENT_SECRET_ENV}")
        endpoint = args.auth_introspection_endpoint
        if endpoint is None and not args.auth_issuer:
            raise ValueError(
                "--auth-client-id needs --auth-introspection-endpoint or --auth-issuer"
            )
        introspection = IntrospectionVerifier(
            args.auth_client_id, secret, resource, issuer=args.auth_issuer, endpoint=endpoint
        )
    return ResourceGuard(
        resource=resource,
        verifier=Verifiers(static, jwt, introspection),
        authorization_servers=[args.auth_issuer] if args.auth_issuer else [],
        scopes=rules,
    )
