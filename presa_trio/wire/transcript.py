"""The transcript format: every HTTP exchange as one JSON line, written by both ends.

A transcript settles spec discussions with what crossed the wire: the
request line, the MCP headers and the body; the status, content type and
body, or each SSE event with its time. The server writes it from its edge
(``presa-trio serve --transcript FILE``, :mod:`presa_trio.http.transcript`),
the client from the other end (``presa-trio call … --transcript FILE``,
:mod:`presa_trio.client.transport`, with its sign-in's exchanges from
:mod:`presa_trio.client.signin_transcript`, where a response also keeps
its ``www-authenticate`` under ``headers``), and ``presa-trio transcript
FILE`` renders either (:mod:`presa_trio.http.transcript_render`).

One line per exchange, appended when the exchange ends::

    {"started": 1764495283.12, "request": {"method": "POST", "path": "/mcp",
     "headers": {"mcp-method": "tools/call", ...}, "body": {...}},
     "response": {"status": 200, "contentType": "application/json",
     "body": {...}, "events": [{"at": 1764495283.13, "data": {...}}]}}

This module is the format: which headers are kept, how a body is read, how
one exchange becomes a record and a record its line. Appending the line to
a file is :class:`presa_trio.transcript_file.TranscriptFile`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from presa_trio.wire.envelope import parse_json
from presa_trio.wire.errors import ParseError
from presa_trio.wire.sse import Event, EventStreamParser

#: Request headers worth keeping: the content negotiation and every MCP header.
KEPT_HEADERS = ("content-type", "accept", "origin")


#: Control characters: C0, DEL and C1.
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")


def escape_controls(text: str) -> str:
    """``text`` with each control character written as its JSON escape (``\\u001b``)."""
    return CONTROLS.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def kept(name: str) -> bool:
    return name in KEPT_HEADERS or name.startswith("mcp-")


def decode_body(raw: bytes | str) -> Any:
    """JSON when the server's parser reads it, else the text (bad input is part of the record).

    The parser is the one that answers -32700 (:func:`~presa_trio.wire.envelope.parse_json`),
    so a body the server could not read (not UTF-8, ``NaN``, nested past the
    parser's depth) is never shown as JSON, and no record holds a ``NaN``.
    """
    if not raw:
        return None
    encoded = raw.encode("utf-8", errors="surrogatepass") if isinstance(raw, str) else raw
    try:
        return parse_json(encoded)
    except ParseError:
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

    def add_body(self, chunk: bytes, at: float) -> None:
        """A chunk of the response body, arrived at ``at``, once :attr:`response` is set."""
        if self.streamed:
            self.add_events(chunk, at)
        else:
            self.response_body += chunk

    @property
    def streamed(self) -> bool:
        return bool(self.response.get("contentType") == "text/event-stream")

    def add_events(self, chunk: bytes, at: float) -> None:
        """A chunk of an SSE body, arrived at ``at``: kept as the events it completes."""
        self.events += [
            {"at": at, "data": decode_body(item.data)}
            for item in self._parser.feed(chunk)
            if isinstance(item, Event)
        ]

    def record(self) -> dict[str, Any]:
        self.request["body"] = decode_body(bytes(self.body))
        response = dict(self.response)
        if self.streamed:
            response["events"] = self.events
        else:
            response["body"] = decode_body(bytes(self.response_body))
        return {"started": self.started, "request": self.request, "response": response}


def record_line(record: dict[str, Any]) -> bytes:
    """One record as its line of the file: compact JSON, UTF-8, a newline.

    A lone surrogate (a ``"\\ud800"`` escape the JSON parser accepted) has no
    UTF-8 form; written back as that same escape, the line stays its JSON.
    DEL and the C1 controls, which JSON leaves raw, are escaped as the C0
    ones are, so a line printed on a terminal drives nothing; they occur
    only inside strings, where the escape is the same text.
    """
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=False)
    return (escape_controls(text) + "\n").encode("utf-8", errors="backslashreplace")
