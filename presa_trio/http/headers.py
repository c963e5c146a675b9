"""A request's headers, read once per exchange, whoever reads them first.

The access log, the metrics and the app each need a request's headers
(``Mcp-Method`` and ``Mcp-Name`` for the first two, every admission rung
for the app). ASGI hands them over as a list of pairs (ASGI HTTP scope,
``headers``); :func:`request_headers` reads that list into
:class:`~presa_trio.wire.http_values.Headers` once and keeps the reading in
the exchange's scope, which every layer of one exchange shares, so the
layers after the first look it up. The scope is the exchange's own and
ends with it.
"""

from __future__ import annotations

from typing import Any, cast

from hypercorn.typing import HTTPScope

from presa_trio.wire.http_values import Headers

#: The ASGI ``http_version`` values of HTTP/1.x, whose requests, unlike HTTP/2's, have a
#: request line (which may carry an absolute-form target), end their connection with
#: ``Connection: close``, and open a WebSocket with a GET.
HTTP1_VERSIONS = ("1.0", "1.1")
#: The scope key under which a request's read headers are kept (namespaced, as
#: ASGI leaves keys it does not define to the application).
HEADERS_KEY = "presa_trio.headers"


def request_headers(scope: HTTPScope) -> Headers:
    """The headers of the exchange ``scope`` describes, read at the first call."""
    kept = cast("dict[str, Any]", scope)
    headers: Headers | None = kept.get(HEADERS_KEY)
    if headers is None:
        headers = kept[HEADERS_KEY] = Headers.from_asgi(scope["headers"])
    return headers


def mcp_headers(scope: HTTPScope) -> tuple[str | None, str | None]:
    """``Mcp-Method`` and ``Mcp-Name`` as sent (the first of each), for the log and the metrics.

    Read as latin-1 and not trimmed: the access line shows what came.
    """
    first = request_headers(scope).first
    method = first.get(b"mcp-method")
    name = first.get(b"mcp-name")
    return (
        None if method is None else method.decode("latin-1"),
        None if name is None else name.decode("latin-1"),
    )
