"""Where a sign-in goes: the resource's metadata, its authorization server's, the scope.

Steps 1, 2 and 4 of a sign-in (:mod:`.oauth` does the rest):

1. the protected resource metadata (RFC 9728): the ``resource_metadata`` of
   the ``WWW-Authenticate`` challenge, else the well-known URI at the
   endpoint's path, else at the root; its ``resource`` must be this server
   (or its origin, or a path above it in whole segments);
2. the authorization server's metadata: RFC 8414 then OpenID discovery,
   path-inserted before path-appended, and its ``issuer`` must be the one
   the URL was built from; each endpoint of it the client uses is an
   absolute https URL (http on loopback);
4. the scope: the challenge's, else the resource's ``scopes_supported``,
   else none; on a step-up the union with what was asked before; plus
   ``offline_access`` when the authorization server lists it.

Spec: 2026-07-28 basic/authorization/authorization-server-discovery,
basic/authorization §Scope Selection Strategy, §Step-Up Authorization Flow,
security-considerations §Communication Security.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import attrs
import httpx

from presa_trio.client.errors import SignInFailed
from presa_trio.client.transport import decoded
from presa_trio.wire.http_values import authorization_server_metadata_urls, in_the_clear
from presa_trio.wire.models import JSONObject

OFFLINE_ACCESS = "offline_access"


def resource_of(url: str) -> str:
    """The canonical URI of the MCP server (RFC 8707 §2): no fragment, lower-case host."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, ""))


def well_known(base: str, suffix: str) -> list[str]:
    """RFC 8414 §3 / RFC 9728 §3: the suffix inserted before the path, then at the root."""
    parts = urlsplit(base)
    path = parts.path.rstrip("/")
    root = f"{parts.scheme}://{parts.netloc}/.well-known/{suffix}"
    return [root + path, root] if path else [root]


async def get_json(http: httpx.AsyncClient, url: str) -> JSONObject | None:
    """The JSON object at ``url``, or None for anything else (no JSON as a server's
    message is none: :func:`~presa_trio.client.transport.decoded`; a URL a server named
    that no request can go to, ``http://[::1``, holds none either)."""
    try:
        response = await http.get(url, headers={"accept": "application/json"})
    except (httpx.HTTPError, httpx.InvalidURL):
        return None
    document = decoded(response.content) if response.status_code == 200 else None
    return document if isinstance(document, dict) else None


def names_endpoint(named: str, endpoint: str) -> bool:
    """Whether the metadata's ``resource`` is ``endpoint``'s: the endpoint itself, or its
    origin or a path above it, whole segments (RFC 9728 §3.3: the URL the well-known
    suffix went into; the root one names the origin). Same scheme, host and port: a
    resource whose URL merely begins the endpoint's (``:4`` of ``:4000``, ``/mc`` of
    ``/mcp``) is another server, and a token for it must not come here (RFC 9728 §7.3).
    One with a fragment is no resource identifier (RFC 9728 §2, RFC 8707 §2;
    basic/authorization §Canonical Server URI), and would go as ``resource`` as named."""
    ours, theirs = urlsplit(resource_of(endpoint)), urlsplit(resource_of(named))
    if (theirs.scheme, theirs.netloc) != (ours.scheme, ours.netloc) or "#" in named:
        return False
    if theirs.query and theirs.query != ours.query:
        return False
    return (ours.path.rstrip("/") + "/").startswith(theirs.path.rstrip("/") + "/")


async def resource_metadata(
    http: httpx.AsyncClient, endpoint: str, challenge: dict[str, str]
) -> JSONObject:
    """RFC 9728 metadata: the challenge's URL, else the well-known ones; checked to be ours."""
    given = challenge.get("resource_metadata")
    urls = [given] if given else well_known(endpoint, "oauth-protected-resource")
    for url in urls:
        document = await get_json(http, url)
        if document is None:
            continue
        named = document.get("resource")
        if not isinstance(named, str) or not names_endpoint(named, endpoint):
            raise SignInFailed(
                f"the resource metadata at {url} is for {named!r}, "
                f"not {resource_of(endpoint)}: refused"
            )
        return document
    raise SignInFailed(f"{endpoint} publishes no protected resource metadata (RFC 9728)")


async def server_metadata(http: httpx.AsyncClient, issuer: str) -> JSONObject:
    """RFC 8414 / OpenID metadata of ``issuer``, whose ``issuer`` must be identical; one
    at ``http://`` off loopback is not asked (security-considerations §Communication
    Security: every endpoint over HTTPS; RFC 8414 §2: the issuer is an ``https`` URL)."""
    try:
        clear = in_the_clear(issuer)
    except ValueError:
        raise SignInFailed(f"the authorization server {issuer!r} is no URL") from None
    if clear:
        raise SignInFailed(f"the authorization server {issuer} is not https: refused")
    for url in authorization_server_metadata_urls(issuer):
        document = await get_json(http, url)
        if document is None:
            continue
        if document.get("issuer") != issuer:
            raise SignInFailed(
                f"the metadata at {url} names the issuer {document.get('issuer')!r}, "
                f"not {issuer!r}: refused"
            )
        return document
    raise SignInFailed(f"{issuer} publishes no authorization server metadata")


def chosen_scope(
    challenge: dict[str, str], resource: JSONObject, server: JSONObject, before: str | None
) -> str | None:
    """basic/authorization §Scope Selection Strategy and §Step-Up Authorization Flow."""
    scopes: list[str] = []
    if challenge.get("scope"):
        scopes = challenge["scope"].split()
    elif isinstance(resource.get("scopes_supported"), list):  # RFC 9728 §2: strings
        scopes = [s for s in resource["scopes_supported"] if isinstance(s, str) and s]
    for scope in (before or "").split():
        if scope not in scopes:
            scopes.append(scope)
    supported = server.get("scopes_supported")
    offered = isinstance(supported, list) and OFFLINE_ACCESS in supported
    if offered and scopes and OFFLINE_ACCESS not in scopes:
        scopes.append(OFFLINE_ACCESS)
    return " ".join(scopes) or None


@attrs.frozen
class Discovered:
    """Where a sign-in goes: the resource, its authorization server, the scope to ask."""

    #: RFC 8707 §2 with RFC 9728 §3.3: the resource exactly as its metadata names it.
    resource: str
    issuer: str
    #: The authorization server's metadata, its ``issuer`` checked to be ``issuer``.
    server: JSONObject
    scope: str | None


async def discover(
    http: httpx.AsyncClient, endpoint: str, challenge: dict[str, str], before: JSONObject | None
) -> Discovered:
    """Steps 1, 2 and 4: the resource's metadata, its authorization server's, the scope."""
    protected = await resource_metadata(http, endpoint, challenge)
    servers = protected.get("authorization_servers")
    if not isinstance(servers, list) or not servers:
        raise SignInFailed(f"the resource metadata of {endpoint} names no authorization server")
    issuer = str(servers[0])
    server = await server_metadata(http, issuer)
    scope = chosen_scope(challenge, protected, server, (before or {}).get("scope"))
    return Discovered(str(protected["resource"]), issuer, server, scope)


def endpoint_of(server: JSONObject, name: str) -> str:
    """The authorization server's endpoint ``name``: an absolute https URL (http on
    loopback, where nothing crosses a network), else the sign-in stops
    (security-considerations §Communication Security: "MUST be served over HTTPS").
    The authorization endpoint is opened in the person's browser and printed: another
    scheme (``file:``) would open something else, and a control character, which no
    URI holds (RFC 3986 §2), would drive the terminal. One no request can go to (a port
    that is no number) stops it too, before the person is asked."""
    url = server.get(name)
    try:
        parts = urlsplit(url) if isinstance(url, str) and url.isprintable() else None
        usable = parts is not None and parts.scheme in ("http", "https") and bool(parts.hostname)
        if usable:
            httpx.URL(str(url))  # InvalidURL for one no request can go to
    except (ValueError, httpx.InvalidURL):
        usable = False
    if not usable:
        raise SignInFailed(f"the authorization server's metadata has no http(s) {name}: {url!r}")
    if in_the_clear(str(url)):
        raise SignInFailed(f"the authorization server's {name} {url} is not https: refused")
    return str(url)
