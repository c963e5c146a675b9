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

import functools
import json
import logging
import re
import time
from collections.abc import Iterable

import attrs
from hypercorn.typing import (
    ASGIFramework,
    ASGIReceiveCallable,
    ASGISendCallable,
    ASGISendEvent,
    HTTPScope,
    Scope,
)

from presa_trio import logs
from presa_trio.wire.sse import parse_events
from presa_trio.wire.transcript import decode_body

access_log = logging.getLogger("presa_trio.access")

#: A value written bare in a text line; anything else is written as a JSON string.
BARE = re.compile(r'[^\s"=]+')


@attrs.define(eq=False)
class _Exchange:
    """What the response of one exchange looked like; its :meth:`send` passes events on."""

    # The server's own ``send``.
    downstream: ASGISendCallable
    status: int | None = None
    # The response's headers, looked at only when the answer is a JSON-RPC error.
    headers: Iterable[tuple[bytes, bytes]] = ()
    sent: int = 0
    # The last body chunk: the whole JSON body, or the final event of a stream.
    last: bytes = b""

    async def send(self, event: ASGISendEvent) -> None:
        """The app's ``send``: note the event, then hand it to the server."""
        if event["type"] == "http.response.body":
            body = event.get("body", b"")
            self.sent += len(body)
            if not event.get("more_body", False):
                self.last = bytes(body)
        elif event["type"] == "http.response.start":
            self.status = event["status"]
            self.headers = event["headers"]
        await self.downstream(event)

    def jsonrpc_error(self) -> tuple[object, object]:
        """The code and ``data.incident`` of the final JSON-RPC message's ``error``, if any."""
        if b'"error"' not in self.last:  # most answers are results: no parsing for them
            return None, None
        if (b"content-type", b"text/event-stream") in self.headers:
            events = parse_events(self.last)
            final = decode_body(events[-1].data) if events else None
        else:
            final = decode_body(self.last)
        error = final.get("error") if isinstance(final, dict) else None
        if not isinstance(error, dict):
            return None, None
        data = error.get("data")
        return error.get("code"), (data.get("incident") if isinstance(data, dict) else None)


def mcp_headers(scope: HTTPScope) -> tuple[str | None, str | None]:
    """``Mcp-Method`` and ``Mcp-Name`` as sent (the first of each), in one pass.

    ASGI hands header names over lowercased (ASGI HTTP scope, ``headers``).
    """
    method = name = None
    for key, value in scope["headers"]:
        if key == b"mcp-method" and method is None:
            method = value.decode("latin-1")
        elif key == b"mcp-name" and name is None:
            name = value.decode("latin-1")
    return method, name


@functools.lru_cache(maxsize=128)
def text_value(text: str) -> str:
    """A string as a text line shows it: bare if it can be, else a JSON string.

    The same few method names, tool names and paths come on request after
    request, so the shown form of the last 128 is remembered (a bound:
    a request head is at most hypercorn's 16 KiB).
    """
    return text if BARE.fullmatch(text) else json.dumps(text, ensure_ascii=False)


def log_exchange(scope: HTTPScope, exchange: _Exchange, seconds: float) -> None:
    """Log the exchange's line; the numbers need no quoting, so only strings are checked.

    One line per request is on every request's path, so it is built
    directly, field by field, rather than through a table of fields, and
    the fields, presa's own names that no record attribute has, are set on
    the record in one update rather than checked one by one as
    ``Logger.makeRecord``'s ``extra`` does. While the logging configuration
    is still the one ``presa-trio serve`` made, no record is made at all:
    the line goes straight to its stderr handler (:func:`presa_trio.logs.direct_handler`).
    """
    code, incident = exchange.jsonrpc_error()
    mcp_method, mcp_name = mcp_headers(scope)
    ms = int(seconds * 10_000 + 0.5) / 10  # to a tenth of a millisecond; round() is dearer
    method, path = scope["method"], scope["path"]
    line = f"{method} {text_value(path)} status={exchange.status} bytes={exchange.sent} ms={ms}"
    if mcp_method is not None:
        line += f" mcp-method={text_value(mcp_method)}"
    if mcp_name is not None:
        line += f" mcp-name={text_value(mcp_name)}"
    if code is not None:
        line += f" jsonrpc-error={text_value(str(code))}"
    if incident is not None:
        line += f" incident={text_value(str(incident))}"
    fields: dict[str, object] = {
        "status": exchange.status,
        "bytes": exchange.sent,
        "ms": ms,
        "mcp_method": mcp_method,
        "mcp_name": mcp_name,
        "jsonrpc_error": code,
        "incident": incident,
        "method": method,
        "path": path,
    }
    direct = logs.direct_handler(access_log, logging.INFO)
    if direct is not None:  # the configuration is still presa's own: the same bytes, no record
        direct.write(logging.INFO, access_log.name, line, fields)
        return
    record = access_log.makeRecord(
        access_log.name, logging.INFO, "(unknown file)", 0, line, (), None
    )
    record.__dict__.update(fields)
    access_log.handle(record)  # the level was checked before the exchange began


@attrs.define(eq=False, repr=False)
class AccessLog:
    """ASGI middleware logging one line per HTTP exchange when it ends.

    The duration is read from :func:`time.perf_counter`, the clock trio's
    default clock reads too, without going through the run's clock object.
    """

    app: ASGIFramework

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http" or not access_log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        exchange = _Exchange(send)
        started = time.perf_counter()
        try:
            await self.app(scope, receive, exchange.send)
        finally:
            log_exchange(scope, exchange, time.perf_counter() - started)
