"""One access line per HTTP request, at INFO on the ``presa_trio.access`` logger.

:class:`AccessLog` is ASGI middleware around the app. When an exchange ends
it logs the method and path, ``Mcp-Method`` and ``Mcp-Name`` as sent, the
status, the response body's size in bytes (0 for a HEAD), the duration,
and, when the answer is a JSON-RPC error, its code and ``data.incident``
(the id a -32603 shares with the log record of its cause). Rejections are logged like any
other answer. A text line reads::

    POST /mcp status=200 bytes=312 ms=1.4 mcp-method=tools/call mcp-name=greet

and each field is also on the record (``extra``), for the JSON-lines format.
A value that is not bare is a JSON string, in ASCII if it holds a character
that is not printable (:func:`text_value`).

**Written in batches.** Under ``presa-trio serve``'s own logging
configuration (:func:`presa_trio.logs.direct_handler`), a line is not
written when its exchange ends: that would put a ``write(2)``, and the
kernel's work behind it, on every request's path. Nor is its text made
then: the exchange's values are kept (an :class:`AccessLine`), and
:func:`batched_lines` (around :func:`~presa_trio.http.serving.serve_http`'s
serving) holds them in memory. One writer task in its nursery makes
their text and writes it every :data:`FLUSH_INTERVAL_S` seconds, sooner
when :data:`~presa_trio.logs.BATCH_LINES` are waiting, and writes the rest
when the server stops, as nginx's ``access_log … buffer= flush=`` do.
What that keeps and what it costs:

- every line, in its format, timed at its exchange's end; on stderr at
  most :data:`FLUSH_INTERVAL_S` seconds later;
- the request's path holds only the taking of the values; the text of a
  batch is made in one loop in the writer's thread (the same work, where
  the interpreter runs it fastest: docs/performance.md, "The lines made
  by the writer"), holding the interpreter's lock for under a millisecond
  a batch;
- the stream's order: a record logged after a line (a warning, a fault)
  is written after it (:meth:`~presa_trio.logs.StderrLines.emit`);
- whole lines: each write carries whole lines (the whole batch to a
  regular file, at most ``PIPE_BUF`` bytes to anything else:
  :func:`~presa_trio.logs.largest_whole_write`), so workers sharing one
  stderr never interleave within a line;
- an orderly end (a signal, a failure that ends the server, the
  interpreter's exit) writes every line; a crash that runs no Python
  (SIGKILL, a fault in C) loses the lines of its last interval at most;
- bounded memory: if the stream stops taking lines, once
  :data:`~presa_trio.logs.BATCH_LIMIT` are held the server waits for it,
  as it waited on every line when each was written at once.

A logging configuration of the user's own gets a record per exchange, at
once, handled by its handlers as they see fit.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Iterable
from contextlib import asynccontextmanager
from typing import NoReturn

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

from presa_trio import logs
from presa_trio.http.headers import mcp_headers
from presa_trio.wire.sse import parse_events
from presa_trio.wire.transcript import decode_body

access_log = logging.getLogger("presa_trio.access")

#: A value written bare in a text line; anything else is written as a JSON string.
BARE = re.compile(r'[^\s"=]+')
#: The longest an access line waits in memory before it is written, in seconds.
FLUSH_INTERVAL_S = 1.0
#: ``0.0`` to ``99.9``: a duration of under a tenth of a second as the line writes
#: it (milliseconds, to a tenth), by its tenths: looked up, not formatted.
TENTHS_OF_MS = tuple(f"{tenths // 10}.{tenths % 10}" for tenths in range(1000))


@attrs.define(eq=False)
class _Exchange:
    """What the response of one exchange looked like; its :meth:`send` passes events on."""

    # The server's own ``send``.
    downstream: ASGISendCallable
    status: int | None = None
    # The response's headers, looked at only when the final message is read.
    headers: Iterable[tuple[bytes, bytes]] = ()
    sent: int = 0
    # The last body chunk: the whole JSON body, or the final event of a stream.
    last: bytes = b""

    def send(self, event: ASGISendEvent) -> Awaitable[None]:
        """The app's ``send``: note the event, and give back the server's ``send`` of it.

        The app awaits what this returns, the server's own coroutine. This
        is not a coroutine itself, since it never waits: each of a request's
        sends goes through it, and a coroutine more on each is work on every
        request for nothing.
        """
        if event["type"] == "http.response.body":
            body = event.get("body", b"")
            self.sent += len(body)
            if not event.get("more_body", False):
                self.last = bytes(body)
        elif event["type"] == "http.response.start":
            self.status = event["status"]
            self.headers = event["headers"]
        return self.downstream(event)

    def final_message(self) -> object:
        """The final JSON-RPC message: the JSON body, or the data of the stream's last event."""
        if (b"content-type", b"text/event-stream") in self.headers:
            events = parse_events(self.last)
            return decode_body(events[-1].data) if events else None
        return decode_body(self.last)

    def jsonrpc_error(self) -> tuple[object, object]:
        """The code and ``data.incident`` of the final JSON-RPC message's ``error``, if any."""
        # Most answers are results: no parsing for them. ``find``, not ``in``:
        # ``bytes.__contains__`` first tries its operand as an integer (a byte
        # value), raising and clearing a TypeError for every other operand.
        if self.last.find(b'"error"') == -1:
            return None, None
        final = self.final_message()
        error = final.get("error") if isinstance(final, dict) else None
        if not isinstance(error, dict):
            return None, None
        data = error.get("data")
        return error.get("code"), (data.get("incident") if isinstance(data, dict) else None)


def text_value(text: str) -> str:
    """A string as a text line shows it: bare if it can be, else a JSON string.

    A client chooses the path and the header values, so a character that is
    not printable (a control such as ESC, a line or paragraph separator, a
    format character such as a right-to-left override) is never written as
    it is: the string is written in ASCII, each such character escaped, so
    no client can move an operator's terminal or forge a line.
    """
    printable = text.isprintable()
    if printable and BARE.fullmatch(text):
        return text
    return json.dumps(text, ensure_ascii=not printable)


@functools.lru_cache(maxsize=128)
def request_words(
    method: str, path: str, mcp_method: str | None, mcp_name: str | None
) -> tuple[str, str]:
    """What a text line says of the request: its words before the numbers, and after.

    The same few requests (a method, a path, a tool name) come on request
    after request, so the words of the last 128 kinds are remembered (a
    bound: a request head is at most hypercorn's 16 KiB).
    """
    tail = ""
    if mcp_method is not None:
        tail += f" mcp-method={text_value(mcp_method)}"
    if mcp_name is not None:
        tail += f" mcp-name={text_value(mcp_name)}"
    return f"{method} {text_value(path)}", tail


@attrs.define(eq=False)
class AccessLine:
    """One exchange as its access line tells it (a :class:`~presa_trio.logs.Line`).

    Its values are taken when the exchange ends; its text is made when it is
    written, for a batched line by the batch's writer (:class:`BatchWriter`).
    """

    #: When the exchange ended, as ``time.time()`` (a record's ``created``).
    created: float
    method: str
    path: str
    mcp_method: str | None
    mcp_name: str | None
    status: int | None
    #: The response body's size in bytes (0 for a HEAD).
    sent: int
    #: The duration in milliseconds, to a tenth, as tenths.
    tenths: int
    #: The ``code`` and ``data.incident`` of a JSON-RPC error answer.
    code: object
    incident: object

    def message(self) -> str:
        """The text line's message: the numbers need no quoting, so only strings are checked."""
        head, tail = request_words(self.method, self.path, self.mcp_method, self.mcp_name)
        tenths = self.tenths
        ms = TENTHS_OF_MS[tenths] if tenths < len(TENTHS_OF_MS) else f"{tenths // 10}.{tenths % 10}"
        line = f"{head} status={self.status} bytes={self.sent} ms={ms}{tail}"
        if self.code is not None:
            line += f" jsonrpc-error={text_value(str(self.code))}"
        if self.incident is not None:
            line += f" incident={text_value(str(self.incident))}"
        return line

    def fields(self) -> dict[str, object]:
        """The record's own fields (``extra``), for the JSON-lines format."""
        return {
            "status": self.status,
            "bytes": self.sent,
            "ms": self.tenths / 10,
            "mcp_method": self.mcp_method,
            "mcp_name": self.mcp_name,
            "jsonrpc_error": self.code,
            "incident": self.incident,
            "method": self.method,
            "path": self.path,
        }

    def compose(self, lines: logs.TextLines | logs.JsonLines) -> str:
        """The line as the record of this exchange is written by ``lines``."""
        fields = self.fields() if lines.with_fields else {}
        return lines.compose(self.created, "INFO", access_log.name, self.message(), fields)


def log_exchange(scope: HTTPScope, exchange: _Exchange, seconds: float) -> None:
    """Log the exchange's line.

    One line per request is on every request's path, so that path only
    takes its values (:class:`AccessLine`). While the logging configuration
    is still the one ``presa-trio serve`` made, no record is made at all:
    the line goes straight to its stderr handler
    (:func:`presa_trio.logs.direct_handler`), which makes its text when it
    writes it. Otherwise a record is made, its fields set in one update
    rather than checked one by one as ``Logger.makeRecord``'s ``extra`` does
    (they are presa's own names, which no record attribute has).
    """
    code, incident = exchange.jsonrpc_error()
    mcp_method, mcp_name = mcp_headers(scope)
    method = scope["method"]
    line = AccessLine(
        created=time.time(),
        method=method,
        path=scope["path"],
        mcp_method=mcp_method,
        mcp_name=mcp_name,
        status=exchange.status,
        # A HEAD response has no body: the server leaves out the one the app gives
        # it (RFC 9110 §9.3.2).
        sent=0 if method == "HEAD" else exchange.sent,
        tenths=round(seconds * 10_000),
        code=code,
        incident=incident,
    )
    direct = logs.direct_handler(access_log, logging.INFO)
    if direct is not None:  # the configuration is still presa's own: the same bytes, no record
        direct.write(line)
        return
    record = access_log.makeRecord(
        access_log.name, logging.INFO, "(unknown file)", 0, line.message(), (), None
    )
    record.__dict__.update(line.fields())
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


@attrs.define(eq=False)
class BatchWriter:
    """The one task that writes the batched lines of ``handler``, in a worker thread.

    It writes every ``interval`` seconds, or as soon as the handler says its
    batch is full (:meth:`wake`, called where the line is logged: in the
    server's Trio thread).
    """

    handler: logs.StderrLines
    interval: float
    # Set when the batch is full; a new Event after each write.
    full: trio.Event = attrs.field(factory=trio.Event)

    def wake(self) -> None:
        self.full.set()

    async def run(self) -> NoReturn:
        while True:
            with trio.move_on_after(self.interval):
                await self.full.wait()
            self.full = trio.Event()
            if self.handler.batch:  # an idle server's writer wakes no thread
                # Not abandoned if cancelled: the block ends after the write it started.
                await trio.to_thread.run_sync(self.handler.write_batch)


@asynccontextmanager
async def batched_lines(interval: float = FLUSH_INTERVAL_S) -> AsyncIterator[None]:
    """Batch the access lines while the block runs (see the module docstring); by its
    end, every line is written.

    Only under the configuration ``presa-trio serve`` made, with the access
    log on, and only once per process: otherwise the block runs as it is.
    The writer's nursery holds the writer alone; a write that fails is
    reported by the logging module and ends nothing, so the nursery ends
    only with the block (or by a defect of the writer's, which propagates).
    The lines still held then are written at once, in this thread: even a
    cancelled shutdown writes them, and nothing else is served any more.
    """
    on = access_log.isEnabledFor(logging.INFO)
    handler = logs.direct_handler(access_log, logging.INFO) if on else None
    if handler is None or handler.batch is not None:
        yield
        return
    writer = BatchWriter(handler, interval)
    handler.batch_lines(writer.wake)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer.run)
            yield
            nursery.cancel_scope.cancel(reason="the server stopped")
    finally:
        handler.stop_batching()
