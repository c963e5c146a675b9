"""HTTP admission: the checks a POST passes before its body is read as JSON-RPC.

Rungs 1–5 of wire §13.2, in order: path, Host/Origin (DNS rebinding), method,
Content-Type, Accept. A failure is a plain HTTP rejection (no JSON-RPC id is
known yet), raised as :class:`Rejection` and written by the app.

Spec: 2026-07-28 basic/transports/streamable-http §Security Warning,
§Sending Messages to the Server; wire §12 (statuses), §13.2.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

import attrs

#: Loopback names a local server answers to by default (wire §13.2 rung 2).
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})


class Rejection(Exception):
    """A plain HTTP rejection: status, a short reason, and extra headers."""

    def __init__(self, status: int, reason: str, headers: Iterable[tuple[bytes, bytes]] = ()):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.headers = list(headers)


@attrs.frozen
class Headers:
    """Request headers by lowercased name; repeated headers keep every value."""

    values: dict[str, list[str]]

    @classmethod
    def from_asgi(cls, raw: Iterable[tuple[bytes, bytes]]) -> Headers:
        values: dict[str, list[str]] = {}
        for name, value in raw:
            values.setdefault(name.decode("latin-1").lower(), []).append(
                value.decode("latin-1").strip()
            )
        return cls(values)

    def get_all(self, name: str) -> list[str]:
        return self.values.get(name, [])

    def get(self, name: str) -> str | None:
        found = self.values.get(name)
        return found[0] if found else None


def host_name(authority: str) -> str:
    """``localhost:3000`` -> ``localhost``; ``[::1]:80`` -> ``[::1]``."""
    if authority.startswith("["):
        return authority[: authority.find("]") + 1]
    return authority.rsplit(":", 1)[0] if ":" in authority else authority


@attrs.frozen
class AdmissionPolicy:
    """Which hosts and origins may reach the server; ``None`` allows any.

    presa chooses loopback names for both by default: a local server must
    refuse a browser page that rebinds a foreign name to 127.0.0.1.
    """

    allowed_hosts: frozenset[str] | None = LOOPBACK_HOSTS
    allowed_origin_hosts: frozenset[str] | None = LOOPBACK_HOSTS
    path: str = "/mcp"

    def check_host_and_origin(self, headers: Headers) -> None:
        """Rung 2: a bad Host is 421, a bad Origin is 403 (MUST)."""
        host = headers.get("host")
        if self.allowed_hosts is not None and (
            host is None or host_name(host).lower() not in self.allowed_hosts
        ):
            raise Rejection(421, "Host not allowed")
        origin = headers.get("origin")
        if origin is not None and self.allowed_origin_hosts is not None:
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or (
                host_name(parts.netloc).lower() not in self.allowed_origin_hosts
            ):
                raise Rejection(403, "Origin not allowed")


def check_method(method: str) -> None:
    """Rung 3: only POST (GET and DELETE SHOULD get 405)."""
    if method != "POST":
        raise Rejection(405, "Only POST is supported", [(b"allow", b"POST")])


def media_types(header: str | None) -> set[str]:
    """The media types of a Content-Type or Accept value, parameters dropped."""
    if header is None:
        return set()
    return {part.split(";", 1)[0].strip().lower() for part in header.split(",")}


def check_content_type(headers: Headers) -> None:
    """Rung 4: the body is ``application/json`` (parameters allowed)."""
    if media_types(headers.get("content-type")) != {"application/json"}:
        raise Rejection(415, "Content-Type must be application/json")


def check_accept(headers: Headers) -> None:
    """Rung 5: the client accepts both JSON and SSE (``*/*`` and ``type/*`` count)."""
    accepted: set[str] = set()
    for value in headers.get_all("accept"):
        accepted |= media_types(value)

    def admits(media_type: str) -> bool:
        major = media_type.split("/", 1)[0]
        return bool(accepted & {media_type, f"{major}/*", "*/*"})

    if not (admits("application/json") and admits("text/event-stream")):
        raise Rejection(406, "Accept must admit application/json and text/event-stream")
