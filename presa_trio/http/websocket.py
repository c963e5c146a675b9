"""A request to open a WebSocket, answered as the plain request it also is.

presa serves no WebSocket. hypercorn hands a request that asks for one (an
HTTP/1.1 GET with ``Upgrade: websocket``, RFC 6455 §4.1; over HTTP/2 an
extended CONNECT, RFC 8441 §4) to the application as a ``websocket`` scope,
and answers 500 when the application returns without accepting or refusing
it. A server MAY ignore an upgrade (RFC 9110 §7.8), so the app answers such a
request as the request it is without the upgrade (:func:`as_http`), its
response sent through the ASGI ``websocket.http.response`` extension
(:func:`http_response_on`), which hypercorn offers: at the MCP endpoint a
GET is 405 (streamable-http §Earlier Streamable HTTP Revisions).

``serve_http`` reads it so at its outermost layer
(:class:`~presa_trio.http.target.RequestTarget`), so that every layer (the
target, the transcript, the access line, the metrics) sees the plain
request; :class:`~presa_trio.http.app.McpApp` reads one it is handed
directly as well.
"""

from __future__ import annotations

from typing import Any

from hypercorn.typing import ASGISendCallable, HTTPScope, WebsocketScope

from presa_trio.http.headers import HTTP1_VERSIONS


def as_http(scope: WebsocketScope) -> HTTPScope:
    """The ``http`` scope of the request ``scope`` describes, read without its upgrade."""
    method = "GET" if scope["http_version"] in HTTP1_VERSIONS else "CONNECT"
    return {
        "type": "http",
        "asgi": scope["asgi"],
        "http_version": scope["http_version"],
        "method": method,
        "scheme": "https" if scope["scheme"] == "wss" else "http",
        "path": scope["path"],
        "raw_path": scope["raw_path"],
        "query_string": scope["query_string"],
        "root_path": scope["root_path"],
        "headers": scope["headers"],
        "client": scope["client"],
        "server": scope["server"],
        "state": scope["state"],
        "extensions": {},
    }


def http_response_on(send: ASGISendCallable) -> ASGISendCallable:
    """A ``send`` taking an HTTP response's messages, that sends them on ``send`` as the
    ``websocket.http.response`` extension's."""

    async def send_http_response(message: Any) -> None:
        extension_message: Any = {**message, "type": f"websocket.{message['type']}"}
        await send(extension_message)

    return send_http_response
