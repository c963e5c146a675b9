"""HTTP values without I/O: a request's headers, a plain rejection, the loopback names.

Shared by the HTTP edge (:mod:`presa_trio.http`), which reads the headers,
writes the rejections and admits the loopback names by default, and the
resource server (:mod:`presa_trio.auth`), which reads ``Authorization``,
answers 400/401/403/503 with a ``WWW-Authenticate`` challenge, and warns
about development tokens off loopback: so neither imports the other. The
client's sign-in (:mod:`presa_trio.client.discovery`) refuses what is in the
clear off loopback by the same test, and the client sends only a token the
resource server reads as one (:data:`B64TOKEN`). Both find an authorization
server's metadata at the same well-known URLs
(:func:`authorization_server_metadata_urls`).

Spec: RFC 9110 §5 (fields), §15 (status codes); 2026-07-28
basic/transports/streamable-http §Security & Endpoint, §Sending Messages;
spec-notes §4; basic/authorization/security-considerations §Communication
Security; basic/authorization/authorization-server-discovery.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

import attrs

#: Optional whitespace around a header value: space and horizontal tab (RFC 9110 §5.6.3).
OWS = " \t"
#: Loopback names a local server answers to by default (spec-notes §4).
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})
#: The token of an ``Authorization: Bearer`` header (RFC 6750 §2.1 ``b64token``);
#: anything else there is a malformed request, not a token to verify.
B64TOKEN = re.compile(rb"[A-Za-z0-9\-._~+/]+=*")


def is_bearer_token(value: object) -> bool:
    """Whether ``value`` can be sent as ``Authorization: Bearer VALUE``: a string that is
    an RFC 6750 §2.1 ``b64token`` (so no space, no control character, ASCII only)."""
    return isinstance(value, str) and B64TOKEN.fullmatch(value.encode()) is not None


def is_loopback(host: str) -> bool:
    """Whether a host or bind address is loopback-only (``localhost``, 127.0.0.0/8, ``::1``).

    Every name of :data:`LOOPBACK_HOSTS` is one; so are the other addresses
    of 127.0.0.0/8, which a server may bind but does not answer to by name.
    """
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"


def in_the_clear(url: str) -> bool:
    """Whether ``url`` is plain ``http`` to a host other than loopback.

    Spec: basic/authorization/security-considerations §Communication
    Security: implementations MUST follow OAuth 2.1 §1.5 (tokens are
    protected in transit), and "All authorization server endpoints MUST be
    served over HTTPS"; loopback, where nothing crosses a network, is
    exempt, as redirect URIs on ``localhost`` are in that same section.
    """
    parts = urlsplit(url)
    return parts.scheme.lower() == "http" and not is_loopback(parts.hostname or "")


def authority(host: str, port: int) -> str:
    """``host:port``, an IPv6 literal in brackets (RFC 3986 §3.2.2), whether or not it came so."""
    bare = host.strip("[]")
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


class Rejection(Exception):
    """A plain HTTP rejection: status, a short reason, and extra headers."""

    def __init__(self, status: int, reason: str, headers: Iterable[tuple[bytes, bytes]] = ()):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.headers = list(headers)


def check_read_only(method: str) -> None:
    """Admit GET and HEAD to a document that is only read; anything else is 405.

    RFC 9110 §9.1: a general-purpose server supports GET and HEAD, and HEAD
    is GET without the body (§9.3.2), which the HTTP server leaves out; so
    a load balancer checking with ``HEAD /readyz`` gets GET's status.
    """
    if method not in {"GET", "HEAD"}:
        raise Rejection(405, "Only GET and HEAD are supported", [(b"allow", b"GET, HEAD")])


def split_unquoted(value: str, separator: str) -> list[str]:
    """``value`` split at each ``separator`` outside a quoted string (RFC 9110 §5.6.4).

    A list member's or a parameter's value may be a quoted string, holding
    commas, semicolons and backslash-escaped quotes (``profile="a,b"``): it
    stays whole, where ``str.split`` would cut it into pieces read as list
    members or parameters of their own. A value without a quote is split as
    ``str.split`` splits it.
    """
    if '"' not in value:
        return value.split(separator)
    pieces: list[str] = []
    start = 0
    quoted = escaped = False
    for at, char in enumerate(value):
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == separator and not quoted:
            pieces.append(value[start:at])
            start = at + 1
    pieces.append(value[start:])
    return pieces


@attrs.frozen
class Headers:
    """Request headers by lowercased name; repeated headers keep every value.

    A value is read as latin-1 (RFC 9110 §5.5: bytes beyond ASCII are opaque)
    and trimmed of surrounding spaces and tabs, HTTP's only optional
    whitespace (RFC 9110 §5.6.3): a byte such as 0xA0 or 0x85, which
    ``str.strip()`` would take for a space, stays in the value for the checks
    to refuse. A value is read only when a check asks for it: a request
    carries about ten headers and presa reads a few of them. ASGI servers
    send names lowercased (hypercorn does; HTTP/2 requires it, RFC 9113
    §8.2.1) and a request rarely repeats one, so that common case is the
    server's own pairs in one dict built by :func:`dict` in C. Only a
    request with a repeated or upper-case name pays for grouping its pairs
    by name in Python.
    """

    # Lowercased name -> its first value, as received.
    first: dict[bytes, bytes]
    # Lowercased name -> every value, for the names that came more than once.
    repeated: dict[bytes, list[bytes]] = attrs.field(factory=dict)

    @classmethod
    def from_asgi(cls, raw: Iterable[tuple[bytes, bytes]]) -> Headers:
        pairs = raw if isinstance(raw, list) else list(raw)
        first = dict(pairs)
        if len(first) == len(pairs) and b"".join(first).islower():
            return cls(first)
        first = {}
        repeated: dict[bytes, list[bytes]] = {}
        for name, value in pairs:
            key = name.lower()
            if key not in first:
                first[key] = value
            elif key in repeated:
                repeated[key].append(value)
            else:
                repeated[key] = [first[key], value]
        return cls(first, repeated)

    def get_all(self, name: str) -> list[str]:
        """Every value of the header ``name`` (lowercase), in the order received."""
        key = name.encode("latin-1")
        values = self.repeated.get(key)
        if values is not None:
            return [value.decode("latin-1").strip(OWS) for value in values]
        value = self.first.get(key)
        return [] if value is None else [value.decode("latin-1").strip(OWS)]

    def get(self, name: str) -> str | None:
        """The first value of the header ``name`` (lowercase), if it came."""
        value = self.first.get(name.encode("latin-1"))
        return None if value is None else value.decode("latin-1").strip(OWS)


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """The well-known URLs of ``issuer``'s metadata, in the order to try them
    (basic/authorization/authorization-server-discovery).

    ``https://as.example/tenant1`` gives the RFC 8414 path-inserted URL, the
    OpenID path-inserted URL, and the OpenID path-appended URL; an issuer
    without a path gives the first two.
    """
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")

    def at(well_known_path: str) -> str:
        return urlunsplit((parts.scheme, parts.netloc, well_known_path, "", ""))

    urls = [
        at("/.well-known/oauth-authorization-server" + path),
        at("/.well-known/openid-configuration" + path),
    ]
    if path:
        urls.append(at(path + "/.well-known/openid-configuration"))
    return urls
