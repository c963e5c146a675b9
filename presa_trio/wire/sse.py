"""Server-Sent Events: the one encoder and the one parser of the event stream format.

Every SSE byte presa writes comes from :func:`encode_event` and
:func:`encode_comment`; every SSE byte presa reads (the client, the
in-process test driver, transcripts, the access log) goes through
:class:`EventStreamParser`. Both are sans-IO: bytes in, bytes or values out.

The format, as the parser reads it (HTML Living Standard §9.2.5 "Parsing an
event stream", §9.2.6 "Interpreting an event stream"):

- The stream is UTF-8 (invalid sequences become U+FFFD); one byte order
  mark at its very start is dropped.
- Lines end with CRLF, LF or CR, and a stream may mix them. A CR that ends
  one chunk and an LF that begins the next are one line end.
- A line starting with ``:`` is a comment. Any other line is a field,
  ``name:value`` (one space after the colon is dropped) or a bare ``name``
  (the value is empty).
- ``data`` appends its value to the event's data, lines joined by LF;
  ``event`` names the event's type (``message`` by default); ``id`` sets the
  last event ID, which later events keep until another ``id`` (a value
  holding NUL is ignored); ``retry`` sets the reconnection time in
  milliseconds (only ASCII digits count). Other fields are ignored.
- A blank line dispatches the event, if it has data; one with no ``data``
  line is dropped. An event the stream ends before its blank line is never
  dispatched.

What presa writes (2026-07-28 basic/transports/streamable-http §Receiving
Messages): each JSON-RPC message as ``event: message`` with its compact JSON
on one ``data:`` line, no ``id``, CRLF line ends; ``: ping`` comments keep a
quiet stream alive.
"""

from __future__ import annotations

import codecs
import re

import attrs

#: What presa ends its lines with; the parser accepts all three line ends.
CRLF = b"\r\n"

#: The line ends of the format: CRLF, LF, CR.
LINE_END = re.compile(r"\r\n|\r|\n")
LINE_END_BYTES = re.compile(rb"\r\n|\r|\n")


@attrs.frozen
class Event:
    """One dispatched event: what an ``EventSource`` hands to its listeners."""

    # The ``data`` lines, joined by LF.
    data: str
    # The ``event`` field, or ``message`` when the event had none.
    type: str = "message"
    # The stream's last event ID when the event was dispatched ("" until an ``id`` field).
    last_event_id: str = ""


@attrs.frozen
class Comment:
    """A comment line, without its ``:`` and one space after it.

    Listeners never see comments; a test that watches a stream's keep-alive does.
    """

    text: str


def encode_event(data: bytes, *, event: str | None = None, event_id: str | None = None) -> bytes:
    """One event: its ``event`` and ``id`` fields if given, a ``data:`` line per line of data.

    ``data`` is UTF-8 text (presa's is compact JSON, one line); a line end
    inside it starts a new ``data:`` line, so the parser gives back the same
    text with LF line ends.
    """
    lines = []
    if event is not None:
        lines.append(b"event: " + _field_value(event))
    if event_id is not None:
        if "\0" in event_id:
            raise ValueError("an event id cannot hold NUL")
        lines.append(b"id: " + _field_value(event_id))
    lines += [b"data: " + line for line in LINE_END_BYTES.split(data)]
    return CRLF.join(lines) + CRLF + CRLF


def encode_comment(text: str) -> bytes:
    """A comment (e.g. ``: ping``), one ``:`` line per line of ``text``, then a blank line."""
    lines = [b": " + line.encode() for line in LINE_END.split(text)]
    return CRLF.join(lines) + CRLF + CRLF


def _field_value(value: str) -> bytes:
    if LINE_END.search(value):
        raise ValueError(f"a field value cannot span lines: {value!r}")
    return value.encode()


@attrs.define(eq=False)
class EventStreamParser:
    """Reads one event stream, chunk by chunk, however its bytes are split.

    :meth:`feed` returns the events and comments that the chunk completed, in
    stream order. :attr:`last_event_id` and :attr:`retry_ms` are the stream's
    state (what a client would reconnect with).
    """

    # The stream's last event ID, as of the last dispatch.
    last_event_id: str = ""
    # The reconnection time the stream asked for, in milliseconds; None until it does.
    retry_ms: int | None = None
    # UTF-8 decoding across chunk splits; drops one byte order mark at the stream's start.
    _decoder: codecs.IncrementalDecoder = attrs.field(
        factory=lambda: codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
    )
    # Text after the last line end, in the pieces it came in: the start of a line still to
    # come. Kept apart from the next chunk, so each character is searched for a line end
    # once however many chunks a line comes in.
    _partial: list[str] = attrs.field(factory=list)
    # Whether the last line ended with a CR at a chunk's end: an LF next is part of it.
    _after_cr: bool = False
    # The event being read: its data lines, type, and the id it will carry.
    _data: list[str] = attrs.field(factory=list)
    _type: str = ""
    _id: str = ""

    def feed(self, chunk: bytes) -> list[Event | Comment]:
        """The events and comments completed by ``chunk``, the stream's next bytes."""
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if self._after_cr and text[0] == "\n":
            text = text[1:]
        self._after_cr = False
        found: list[Event | Comment] = []
        start = 0
        for end in LINE_END.finditer(text):
            line = text[start : end.start()]
            if self._partial:
                line = "".join([*self._partial, line])
                self._partial.clear()
            item = self._line(line)
            if item is not None:
                found.append(item)
            start = end.end()
            self._after_cr = end.group() == "\r" and start == len(text)
        if start < len(text):
            self._partial.append(text[start:])
        return found

    def _line(self, line: str) -> Event | Comment | None:
        if not line:
            return self._dispatch()
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if not name:
            return Comment(value)
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._type = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> Event | None:
        """A blank line: the event read so far goes out, if it has data."""
        self.last_event_id = self._id
        data, event_type = self._data, self._type
        self._data, self._type = [], ""
        if not data:
            return None
        return Event("\n".join(data), event_type or "message", self.last_event_id)


def parse_events(body: bytes) -> list[Event]:
    """The events of a whole stream (or of whole events), comments left out."""
    return [item for item in EventStreamParser().feed(body) if isinstance(item, Event)]
