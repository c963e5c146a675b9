"""The request target: an absolute-form target read as the origin-form it names.

A client may name the resource by its whole URI, ``POST
http://127.0.0.1:3000/mcp HTTP/1.1``, and a server MUST accept that
absolute-form (RFC 9112 §3.2.2). hypercorn hands the target to the
application as it came: ``path`` and ``raw_path`` are the whole URI up to its
``?`` (only the query is split off). :class:`RequestTarget`, around every
other layer of the edge, reads it once, so that every layer (the transcript,
the access line, the metrics, the app) sees the same request:

- the path is the target's path (an empty one is ``/``: RFC 9112 §3.2.1),
  so the request is routed, logged and counted by it;
- the one ``Host`` is the target's authority: an origin server MUST ignore
  the received Host and use the target's host information instead (RFC 9112
  §3.2.2, §3.3; RFC 9110 §7.2). The DNS-rebinding check
  (:meth:`~presa_trio.http.admission.AdmissionPolicy.check_host_and_origin`)
  then judges the target's authority as it judges a Host: 421 when it is not
  allowed.

Any other target that is not a path is refused 400 where an unknown path
would be 404 (:func:`check_origin_form`): RFC 9112 §3 says an invalid
request-line SHOULD be answered 400. That covers an absolute-form with a
scheme other than ``http`` or ``https``, or with an empty host (RFC 9110
§4.2.1: a recipient MUST reject it as invalid), the authority-form (only
for CONNECT, RFC 9112 §3.2.3) and the asterisk-form (only for a server-wide
OPTIONS, §3.2.4). presa is no proxy and has no server-wide options, so it
chooses 400 for a CONNECT or an ``OPTIONS *`` too.

Over HTTP/2, hypercorn makes the ``:authority`` pseudo-header the request's
one ``host`` header (``hypercorn.utils.filter_pseudo_headers``), so the Host
check already judges it; and ``:path`` is origin-form (or ``*``) by RFC 9113
§8.3.1, so an HTTP/2 request whose ``:path`` is a whole URI is malformed,
left as it is, and refused 400.

Per request, an origin-form target (nearly all) costs one look at the
path's first character, and no frame more: :meth:`RequestTarget.__call__`
hands back the next layer's coroutine. Only an absolute-form target is
parsed, into a copy of the scope.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from urllib.parse import unquote

import attrs
from hypercorn.typing import (
    ASGIFramework,
    ASGIReceiveCallable,
    ASGISendCallable,
    HTTPScope,
    Scope,
)

from presa_trio.http.headers import HTTP1_VERSIONS
from presa_trio.http.websocket import as_http, http_response_on
from presa_trio.wire.http_values import Rejection

#: An absolute-form target up to its query (RFC 9112 §3.2.2, RFC 3986 §3): an http(s)
#: scheme, ``://``, a non-empty authority, and the path (possibly empty).
ABSOLUTE_FORM = re.compile(rb"(?i:https?)://(?P<authority>[^/?#]+)(?P<path>[^?#]*)")


def origin_form(scope: HTTPScope) -> HTTPScope:
    """``scope`` with an http(s) absolute-form target read as its path and Host.

    Any other scope is returned as it is: an origin-form target has nothing
    to read, and every other form is refused by :func:`check_origin_form`.
    """
    if scope["http_version"] not in HTTP1_VERSIONS:
        return scope
    target = ABSOLUTE_FORM.fullmatch(scope["raw_path"])
    if target is None:
        return scope
    raw_path = target["path"] or b"/"
    read = scope.copy()
    read["raw_path"] = raw_path
    read["path"] = unquote(raw_path.decode("ascii"))  # as hypercorn reads a path
    # The received Host, every line of it, is ignored (RFC 9112 §3.2.2).
    others = [(name, value) for name, value in scope["headers"] if name.lower() != b"host"]
    read["headers"] = [(b"host", target["authority"]), *others]
    return read


def check_origin_form(path: str) -> None:
    """400 for a target :func:`origin_form` left as it is and no path: RFC 9112 §3."""
    if not path.startswith("/"):
        raise Rejection(400, "Request target must be a path or an http(s) URI")


@attrs.frozen
class RequestTarget:
    """ASGI middleware: every HTTP request's target as :func:`origin_form` reads it, a
    request to open a WebSocket's too."""

    app: ASGIFramework

    def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> Awaitable[None]:
        """The next layer's call, with the scope read; not a coroutine, since it never waits.

        A request to open a WebSocket is handed on as the plain request it also is
        (:mod:`presa_trio.http.websocket`), so it too is read here, and every layer
        logs, counts and answers it as it would without the upgrade.
        """
        if scope["type"] == "websocket":
            scope, send = as_http(scope), http_response_on(send)
        if scope["type"] == "http" and not scope["path"].startswith("/"):
            scope = origin_form(scope)
        return self.app(scope, receive, send)
