"""One access line per HTTP request, at INFO on the ``presa_trio.access`` logger.

:class:`AccessLog` is ASGI middleware around the app. When an exchange ends
it logs the method and path, ``Mcp-Method`` and ``Mcp-Name`` as sent, the
status, the response body's size in bytes, the duration, and, when the
answer is a JSON-RPC error, its code and ``data.incident`` (the id a -32603
shares with the log record of its cause). Rejections are logged like any
other answer. A text line reads::

    POST /mcp status=200 bytes=312 ms=1.4 mcp-method=tools/call mcp-name=greet

and each field is also on the record (``extra``), for the JSON-lines format.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import attrs
import trio
from hypercorn.typing import (
    ASGIFramework,
    ASGIReceiveCallable,
    ASGISendCallable,
    ASGISendEvent,
    HTTPScope,
    Scope,
)

from presa_trio.http.transcript import decode_body, sse_messages

access_log = logging.getLogger("presa_trio.access")

#: A value written bare in a text line; anything else is written as a JSON string.
BARE = re.compile(r'[^\s"=]+')


@attrs.define(eq=False)
class _Exchange:
    """What the response of one exchange looked like."""

    status: int | None = None
    content_type: bytes = b""
    sent: int = 0
    # The last body chunk: the whole JSON body, or the final event of a stream.
    last: bytes = b""

    def observe(self, event: ASGISendEvent) -> None:
        if event["type"] == "http.response.start":
            self.status = event["status"]
            self.content_type = dict(event["headers"]).get(b"content-type", b"")
        elif event["type"] == "http.response.body":
            body = event.get("body", b"")
            self.sent += len(body)
            if not event.get("more_body", False):
                self.last = bytes(body)

    def jsonrpc_error(self) -> dict[str, Any]:
        """The ``error`` member of the final JSON-RPC message, if it is an error."""
        if b'"error"' not in self.last:  # most answers are results: no parsing for them
            return {}
        if self.content_type == b"text/event-stream":
            messages = sse_messages(self.last)
            final = messages[-1] if messages else None
        else:
            final = decode_body(self.last)
        error = final.get("error") if isinstance(final, dict) else None
        return error if isinstance(error, dict) else {}


def header(scope: HTTPScope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def text_value(value: Any) -> str:
    text = str(value)
    return text if BARE.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def log_exchange(scope: HTTPScope, exchange: _Exchange, seconds: float) -> None:
    error = exchange.jsonrpc_error()
    data = error.get("data")
    fields = {
        "status": exchange.status,
        "bytes": exchange.sent,
        "ms": round(seconds * 1000, 1),
        "mcp-method": header(scope, b"mcp-method"),
        "mcp-name": header(scope, b"mcp-name"),
        "jsonrpc-error": error.get("code"),
        "incident": data.get("incident") if isinstance(data, dict) else None,
    }
    shown = " ".join(
        f"{key}={text_value(value)}" for key, value in fields.items() if value is not None
    )
    extra = {key.replace("-", "_"): value for key, value in fields.items()}
    extra |= {"method": scope["method"], "path": scope["path"]}
    access_log.info("%s %s %s", scope["method"], text_value(scope["path"]), shown, extra=extra)


@attrs.define(eq=False, repr=False)
class AccessLog:
    """ASGI middleware logging one line per HTTP exchange when it ends."""

    app: ASGIFramework

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http" or not access_log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        exchange = _Exchange()
        started = trio.current_time()

        async def observed_send(event: ASGISendEvent) -> None:
            exchange.observe(event)
            await send(event)

        try:
            await self.app(scope, receive, observed_send)
        finally:
            log_exchange(scope, exchange, trio.current_time() - started)
