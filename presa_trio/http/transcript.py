"""Transcripts: every HTTP exchange as one JSON line, for settling spec discussions.

:class:`TranscriptRecorder` is ASGI middleware around the app. It copies
what crosses the edge — the request line, the MCP headers and the body; the
status, content type and body, or each SSE event with its time — and changes
nothing that is sent. Off by default; ``presa-trio serve --transcript FILE``
turns it on. ``presa-trio transcript FILE`` renders the file
(:mod:`presa_trio.http.transcript_render`).

The client (``presa-trio call … --transcript FILE``, :mod:`presa_trio.client`)
writes the same records from the other end, through :class:`Exchange` and
:class:`TranscriptFile`.

One line per exchange, appended when the exchange ends::

    {"started": 1764495283.12, "request": {"method": "POST", "path": "/mcp",
     "headers": {"mcp-method": "tools/call", ...}, "body": {...}},
     "response": {"status": 200, "contentType": "application/json",
     "body": {...}, "events": [{"at": 1764495283.13, "data": {...}}]}}
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import trio
from hypercorn.typing import (
    ASGIFramework,
    ASGIReceiveCallable,
    ASGIReceiveEvent,
    ASGISendCallable,
    ASGISendEvent,
    Scope,
)

from presa_trio.wire.sse import Event, EventStreamParser

#: Request headers worth keeping: the content negotiation and every MCP header.
KEPT_HEADERS = ("content-type", "accept", "origin")


def kept(name: str) -> bool:
    return name in KEPT_HEADERS or name.startswith("mcp-")


def decode_body(raw: bytes | str) -> Any:
    """JSON when it parses, else the text (bad input is part of the record)."""
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")


@attrs.define(eq=False)
class Exchange:
    """One exchange being recorded: fill it as bytes cross, then :meth:`record` it."""

    started: float
    request: dict[str, Any]
    body: bytearray = attrs.field(factory=bytearray)
    response: dict[str, Any] = attrs.field(factory=dict)
    response_body: bytearray = attrs.field(factory=bytearray)
    events: list[dict[str, Any]] = attrs.field(factory=list)
    # Reads the SSE body as it comes: an event is recorded when its chunk completes it.
    _parser: EventStreamParser = attrs.field(factory=EventStreamParser)

    def add_events(self, chunk: bytes, at: float) -> None:
        """A chunk of an SSE body, arrived at ``at``."""
        self.response_body += chunk
        self.events += [
            {"at": at, "data": decode_body(item.data)}
            for item in self._parser.feed(chunk)
            if isinstance(item, Event)
        ]

    def record(self) -> dict[str, Any]:
        self.request["body"] = decode_body(bytes(self.body))
        response = dict(self.response)
        if response.get("contentType") == "text/event-stream":
            response["events"] = self.events
        else:
            response["body"] = decode_body(bytes(self.response_body))
        return {"started": self.started, "request": self.request, "response": response}


@attrs.define(eq=False)
class TranscriptFile:
    """A JSON-lines transcript, appended one whole record at a time."""

    path: Path
    _lock: trio.Lock = attrs.field(factory=trio.Lock)

    async def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"
        async with self._lock:
            await trio.to_thread.run_sync(self._write, line)

    def _write(self, line: str) -> None:
        # A lone surrogate (a "\ud800" escape the JSON parser accepted) has no
        # UTF-8 form; written back as that same escape, the line stays its JSON.
        with self.path.open("a", encoding="utf-8", errors="backslashreplace") as file:
            file.write(line)


@attrs.define(eq=False, repr=False)
class TranscriptRecorder:
    """ASGI middleware that appends each HTTP exchange to a JSON-lines file."""

    app: ASGIFramework
    path: Path
    clock: Callable[[], float]
    file: TranscriptFile = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.file = TranscriptFile(self.path)

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope["headers"]
            if kept(name.decode("latin-1").lower())
        }
        exchange = Exchange(
            self.clock(),
            {"method": scope["method"], "path": scope["path"], "headers": headers},
        )

        async def recording_receive() -> ASGIReceiveEvent:
            event = await receive()
            if event["type"] == "http.request":
                exchange.body += event.get("body", b"")
            return event

        async def recording_send(event: ASGISendEvent) -> None:
            if event["type"] == "http.response.start":
                content_type = dict(event["headers"]).get(b"content-type", b"").decode()
                exchange.response = {"status": event["status"], "contentType": content_type}
            elif event["type"] == "http.response.body":
                exchange.add_events(bytes(event.get("body", b"")), self.clock())
            await send(event)

        try:
            await self.app(scope, recording_receive, recording_send)
        finally:
            with trio.CancelScope(shield=True):
                await self.file.append(exchange.record())
