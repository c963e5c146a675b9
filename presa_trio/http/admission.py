"""HTTP admission: the checks a POST passes before its body is read as JSON-RPC.

Rungs 1–5 of the admission order (spec-notes §10): path, Host/Origin (DNS rebinding), method,
Content-Type, Accept. A failure is a plain HTTP rejection (no JSON-RPC id is
known yet), raised as :class:`Rejection` and written by the app.

Spec: 2026-07-28 basic/transports/streamable-http §Security & Endpoint,
§Sending Messages, §Earlier Streamable HTTP Revisions (405); spec-notes §4, §10,
§11 (statuses); RFC 6454 §7
(Origin), RFC 9110 §7.2 (Host), §12.5.1 (Accept).
"""

from __future__ import annotations

import functools
import ipaddress
import re

import attrs

from presa_trio.wire.http_values import (
    LOOPBACK_HOSTS,
    OWS,
    Headers,
    Rejection,
    split_unquoted,
)

#: How many header values' readings rungs 2, 4 and 5 remember. A client sends
#: the same Host, Origin, Content-Type and Accept on every request and a
#: reading depends on the value alone, so parsing each once per client is
#: enough; the bound keeps a client that varies them from growing the memory.
VERDICTS_KEPT = 64

#: ``host [":" port]`` (RFC 3986 §3.2.2–3.2.3): an IP literal in brackets, or a
#: reg-name / IPv4 address; no userinfo, path or anything after the port.
AUTHORITY = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(?::[0-9]*)?")
#: A serialized origin (RFC 6454 §6.2): scheme, ``://``, authority; nothing else.
ORIGIN = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>.*)")


@functools.lru_cache(maxsize=VERDICTS_KEPT)
def host_name(authority: str) -> str | None:
    """``localhost:3000`` -> ``localhost``; ``[::1]:80`` -> ``[::1]``; malformed -> None.

    A bracketed host must be an IPv6 address and nothing may follow it but
    a port, so ``[::1]evil.example`` is malformed, not ``[::1]``.
    """
    match = AUTHORITY.fullmatch(authority)
    if match is None:
        return None
    host = match["host"].lower()
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None
    return host


@functools.lru_cache(maxsize=VERDICTS_KEPT)
def origin_host(origin: str) -> str | None:
    """The host of an http(s) serialized origin; None for anything else (``null`` too)."""
    match = ORIGIN.fullmatch(origin)
    if match is None or match["scheme"].lower() not in ("http", "https"):
        return None
    return host_name(match["authority"])


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
        """Rung 2: a bad Host is 421, a bad Origin is 403 (MUST).

        presa admits exactly one Host naming an allowed host, and at most one
        Origin, an http(s) origin of an allowed host. A value it cannot parse
        (``http://[::1``, userinfo, a path), a repeated header or ``null`` is
        refused like a foreign name: what cannot be read cannot be trusted.
        """
        if self.allowed_hosts is not None:
            hosts = headers.get_all("host")
            if len(hosts) != 1 or host_name(hosts[0]) not in self.allowed_hosts:
                raise Rejection(421, "Host not allowed")
        origins = headers.get_all("origin")
        if (
            origins
            and self.allowed_origin_hosts is not None
            and (len(origins) > 1 or origin_host(origins[0]) not in self.allowed_origin_hosts)
        ):
            raise Rejection(403, "Origin not allowed")


def check_method(method: str) -> None:
    """Rung 3: only POST (GET and DELETE SHOULD get 405)."""
    if method != "POST":
        raise Rejection(405, "Only POST is supported", [(b"allow", b"POST")])


def media_types(header: str | None) -> set[str]:
    """The media types of a Content-Type value, parameters dropped (a quoted parameter
    value is read whole, commas and all: :func:`split_unquoted`)."""
    if header is None:
        return set()
    return {part.split(";", 1)[0].strip(OWS).lower() for part in split_unquoted(header, ",")}


def check_content_type(headers: Headers) -> None:
    """Rung 4: the body is ``application/json`` (parameters allowed), and not encoded.

    Repeated Content-Type lines are read together, as one comma-joined value
    (RFC 9110 §5.3), so every one of them must say ``application/json``: a
    second line naming another type is refused, whichever comes first.
    presa decodes no content coding, so a body declared gzip (or any coding
    but ``identity``) is refused too, rather than read as JSON it is not:
    415 with ``Accept-Encoding: identity`` (RFC 9110 §8.4, §12.5.3).
    """
    values = headers.get_all("content-type")
    if not is_json(", ".join(values) if values else None):
        raise Rejection(415, "Content-Type must be application/json")
    codings = headers.get_all("content-encoding")
    if codings and content_codings(codings) - {"identity"}:
        raise Rejection(
            415, "Content-Encoding is not supported", [(b"accept-encoding", b"identity")]
        )


def content_codings(values: list[str]) -> set[str]:
    """The codings Content-Encoding lines name, lowercased (RFC 9110 §8.4.1)."""
    return {part.strip(OWS).lower() for value in values for part in value.split(",")} - {""}


@functools.lru_cache(maxsize=VERDICTS_KEPT)
def is_json(content_type: str | None) -> bool:
    """Whether a Content-Type value names ``application/json`` and nothing else."""
    return media_types(content_type) == {"application/json"}


#: A weight (RFC 9110 §12.4.2): 0 to 1 with at most three decimals.
QVALUE = re.compile(r"0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?")


def media_ranges(values: list[str]) -> list[tuple[str, float]]:
    """The ``(range, weight)`` pairs of Accept values; a range with a malformed weight
    is dropped (it says nothing a server can rely on). A quoted parameter value is read
    whole: a comma or ``;q=0`` inside it is no range or weight (:func:`split_unquoted`)."""
    ranges: list[tuple[str, float]] = []
    for value in values:
        for part in split_unquoted(value, ","):
            media_range, *parameters = (piece.strip(OWS) for piece in split_unquoted(part, ";"))
            if not media_range:
                continue
            weight = 1.0
            for parameter in parameters:
                name, _, given = parameter.partition("=")
                if name.strip(OWS).lower() == "q":
                    weight = float(given) if QVALUE.fullmatch(given.strip(OWS)) else -1.0
            if weight >= 0:
                ranges.append((media_range.lower(), weight))
    return ranges


def acceptable(media_type: str, ranges: list[tuple[str, float]]) -> bool:
    """Whether ``media_type`` is acceptable: the most specific matching range decides,
    and a weight of 0 means "not acceptable" (RFC 9110 §12.5.1)."""
    major = media_type.split("/", 1)[0]
    for candidate in (media_type, f"{major}/*", "*/*"):
        weights = [weight for media_range, weight in ranges if media_range == candidate]
        if weights:
            return max(weights) > 0
    return False


def check_accept(headers: Headers) -> None:
    """Rung 5: the client accepts both JSON and SSE (``*/*`` and ``type/*`` count, ``q=0``
    refuses)."""
    if not accepts_json_and_sse(tuple(headers.get_all("accept"))):
        raise Rejection(406, "Accept must admit application/json and text/event-stream")


@functools.lru_cache(maxsize=VERDICTS_KEPT)
def accepts_json_and_sse(values: tuple[str, ...]) -> bool:
    """Whether the Accept values admit both ``application/json`` and ``text/event-stream``."""
    ranges = media_ranges(list(values))
    return acceptable("application/json", ranges) and acceptable("text/event-stream", ranges)
