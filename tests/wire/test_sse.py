"""The event stream format: what the one encoder writes and the one parser reads.

Spec: HTML Living Standard §9.2.5 "Parsing an event stream", §9.2.6
"Interpreting an event stream"; 2026-07-28 basic/transports/streamable-http
§Receiving Messages. Property tests build a stream from its fields, write it
with any mix of the three line ends, split it at any byte positions, and
check the parser against what the fields say.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from presa_trio.wire import sse
from presa_trio.wire.sse import (
    Comment,
    Event,
    EventStreamParser,
    encode_comment,
    encode_event,
    parse_events,
)

LINE_ENDS = ["\r\n", "\n", "\r"]


def feed_in_parts(stream: bytes, cuts: list[int]) -> list[Event | Comment]:
    """What the parser finds when ``stream`` arrives cut at ``cuts``."""
    parser = EventStreamParser()
    found: list[Event | Comment] = []
    start = 0
    for cut in [*sorted(cuts), len(stream)]:
        found += parser.feed(stream[start:cut])
        start = cut
    return found


# --- examples from the format -------------------------------------------------


def test_presa_writes_an_event_message_with_one_compact_data_line() -> None:
    """Spec-mandated (streamable-http §Receiving Messages): presa's events are
    ``event: message`` with the JSON on one ``data:`` line, and no ``id``."""
    assert encode_event(b'{"a":1}', event="message") == b'event: message\r\ndata: {"a":1}\r\n\r\n'
    assert encode_comment("ping") == b": ping\r\n\r\n"


def test_a_comment_of_several_lines_stays_comments() -> None:
    """Spec-mandated (HTML §9.2.5: a line starting with a colon is a comment; a line
    end ends it): each line of a comment's text is written as a comment line of its
    own, so text holding a line end can never write a field, nor an event, into the
    stream."""
    stream = encode_comment("a\ndata: injected\r\nb")
    assert stream == b": a\r\n: data: injected\r\n: b\r\n\r\n"
    assert EventStreamParser().feed(stream) == [
        Comment("a"),
        Comment("data: injected"),
        Comment("b"),
    ]


def test_data_lines_join_with_lf_and_one_space_after_the_colon_is_dropped() -> None:
    """Spec-mandated (HTML §9.2.6, the "data" field and the optional space)."""
    stream = b"data:first\ndata:  second\ndata\n\n"
    assert parse_events(stream) == [Event("first\n second\n")]


def test_an_event_without_data_is_not_dispatched_and_its_type_is_forgotten() -> None:
    """Spec-mandated (HTML §9.2.6, dispatch: an empty data buffer dispatches nothing)."""
    assert parse_events(b"event: other\n\ndata: x\n\n") == [Event("x")]


def test_the_last_event_id_persists_until_the_next_id_field() -> None:
    """Spec-mandated (HTML §9.2.6: the last event ID buffer is kept across events;
    an ``id`` holding NUL is ignored)."""
    stream = b"id: 1\ndata: a\n\ndata: b\n\nid: 2\0\ndata: c\n\nid\ndata: d\n\n"
    events = parse_events(stream)
    assert [e.last_event_id for e in events] == ["1", "1", "1", ""]


def test_retry_sets_the_reconnection_time_only_when_all_ascii_digits() -> None:
    """Spec-mandated (HTML §9.2.6, the "retry" field)."""
    parser = EventStreamParser()
    parser.feed(b"retry: 3000\n\n")
    assert parser.retry_ms == 3000
    parser.feed("retry: 12x\nretry: ²\nretry: -1\n\n".encode())
    assert parser.retry_ms == 3000


def test_one_byte_order_mark_at_the_start_is_dropped_and_no_other() -> None:
    """Spec-mandated (HTML §9.2.5: one leading U+FEFF is ignored)."""
    bom = "\ufeff".encode()
    assert parse_events(bom + b"data: x\n\n") == [Event("x")]
    # A second one starts the first line's field name, which is then no known field.
    assert parse_events(bom + bom + b"data: x\n\n") == []
    assert feed_in_parts(bom + b"data: x\n\n", [1, 2]) == [Event("x")]


def test_comments_and_unknown_fields_change_no_event() -> None:
    """Spec-mandated (HTML §9.2.6: a line starting with a colon is a comment;
    other field names are ignored)."""
    stream = b": ping\r\n\r\nfoo: bar\r\ndata: x\r\n:\r\n\r\n"
    assert EventStreamParser().feed(stream) == [Comment("ping"), Comment(""), Event("x")]


def test_an_event_the_stream_ends_inside_is_never_dispatched() -> None:
    """Spec-mandated (HTML §9.2.5: pending data at the end of the stream is discarded)."""
    assert parse_events(b"data: whole\n\ndata: cut off\n") == [Event("whole")]


def test_invalid_utf8_becomes_the_replacement_character() -> None:
    """Spec-mandated (HTML §9.2.5: the stream is decoded as UTF-8)."""
    assert parse_events(b"data: \xff\n\n") == [Event("\ufffd")]


def test_a_cr_at_the_end_of_a_chunk_dispatches_at_once() -> None:
    """presa-defined: an event ended by CR goes out with its chunk, and an LF in
    the next chunk completes that line end rather than making a blank line."""
    parser = EventStreamParser()
    assert parser.feed(b"data: a\r\r") == [Event("a")]
    assert parser.feed(b"data: b\r") == []
    assert parser.feed(b"\ndata: c\r\r") == [Event("b\nc")]


class CountingLineEnds:
    """The parser's line-end pattern, counting the characters it is given to search."""

    def __init__(self) -> None:
        self.searched = 0
        self.pattern = sse.LINE_END

    def finditer(self, text: str) -> Any:
        self.searched += len(text)
        return self.pattern.finditer(text)


def test_a_long_line_in_many_chunks_is_searched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """presa-defined: each character is searched for a line end once, however many
    chunks a line comes in; searching the line so far again on each chunk made a
    20 MB event take seconds and a 100 MB one minutes."""
    counting = CountingLineEnds()
    monkeypatch.setattr("presa_trio.wire.sse.LINE_END", counting)
    parser = EventStreamParser()
    chunk = b"x" * 1000
    found = parser.feed(b"data: ")
    for _ in range(1000):
        found += parser.feed(chunk)
    found += parser.feed(b"\n\n")
    assert found == [Event("x" * 1_000_000)]
    assert counting.searched <= 1_000_000 + 100


@pytest.mark.parametrize(
    ("value", "field"), [("two\nlines", "event"), ("a\rb", "event_id"), ("nul\0", "event_id")]
)
def test_the_encoder_refuses_a_field_it_cannot_write(value: str, field: str) -> None:
    """presa-defined: a field value the parser would read differently is refused."""
    with pytest.raises(ValueError, match="cannot"):
        encode_event(b"x", **{field: value})


# --- properties ---------------------------------------------------------------

#: Field text: anything UTF-8 can carry, except the line ends.
values = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"))
#: One line of an event block: a field (name, value, whether a space follows the colon).
lines = st.one_of(
    st.tuples(st.sampled_from(["data", "event", "id", "retry", "other"]), values, st.booleans()),
    st.tuples(st.just(""), values, st.booleans()),  # a comment
)
blocks = st.lists(st.lists(lines, max_size=5), max_size=6)


def written(block: list[tuple[str, str, bool]]) -> list[str]:
    return [f"{name}:{' ' if space else ''}{value}" for name, value, space in block]


def expected(stream_blocks: list[list[tuple[str, str, bool]]]) -> list[Event | Comment]:
    """What the fields say, read straight from the format's rules."""
    found: list[Event | Comment] = []
    last_id = ""
    for block in stream_blocks:
        data: list[str] = []
        event_type = ""
        for name, value, space in block:
            read = value if space or not value.startswith(" ") else value[1:]
            if name == "":
                found.append(Comment(read))
            elif name == "data":
                data.append(read)
            elif name == "event":
                event_type = read
            elif name == "id" and "\0" not in read:
                last_id = read
        if data:
            found.append(Event("\n".join(data), event_type or "message", last_id))
    return found


@given(blocks, st.data())
def test_any_line_ends_and_any_chunk_splits_read_the_same_events(
    stream_blocks: list[list[tuple[str, str, bool]]], data: st.DataObject
) -> None:
    """Spec-mandated (HTML §9.2.5: lines end in CRLF, LF or CR, mixed freely): a
    stream of fields written with any line ends, cut into chunks at any byte
    positions, reads as its fields say."""
    text = ""
    for block in stream_blocks:
        for line in [*written(block), ""]:
            # CR, then an empty line ended by LF, would be one CRLF: not a blank line.
            ends = LINE_ENDS[:1] + LINE_ENDS[2:] if text.endswith("\r") and not line else LINE_ENDS
            text += line + data.draw(st.sampled_from(ends))
    stream = text.encode()
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=8))
    assert feed_in_parts(stream, cuts) == expected(stream_blocks)


@given(
    st.text(st.characters(blacklist_categories=["Cs"])),
    st.none() | values,
    st.none() | values.filter(lambda v: "\0" not in v),
)
def test_what_the_encoder_writes_the_parser_reads_back(
    text: str, event: str | None, event_id: str | None
) -> None:
    """presa-defined: any UTF-8 data (line ends inside it come back as LF), with or
    without ``event`` and ``id``, survives the encoder and the parser."""
    stream = encode_event(text.encode(), event=event, event_id=event_id)
    data = text.replace("\r\n", "\n").replace("\r", "\n")
    assert parse_events(stream) == [Event(data, event or "message", event_id or "")]


@given(st.lists(values, min_size=1, max_size=4), st.data())
def test_comments_round_trip_through_any_split(texts: list[str], data: st.DataObject) -> None:
    """presa-defined: a comment comes back as written, its line by line."""
    stream = b"".join(encode_comment(text) for text in texts)
    cuts: Any = data.draw(st.lists(st.integers(0, len(stream)), max_size=4))
    assert feed_in_parts(stream, cuts) == [Comment(text) for text in texts]


def test_every_cut_of_a_mixed_stream_reads_the_same() -> None:
    """Spec-mandated (HTML §9.2.5): a stream mixing CRLF, LF and CR, with a byte
    order mark and characters of several UTF-8 bytes, cut at every pair of byte
    positions, reads the same as whole."""
    stream = "\ufeffid: é\rdata: a\r\ndata: ü€\n: c\r\n\revent: x\ndata\r\n\n".encode()
    whole = EventStreamParser().feed(stream)
    assert whole == [Comment("c"), Event("a\nü€", "message", "é"), Event("", "x", "é")]
    for first in range(len(stream) + 1):
        for second in range(first, len(stream) + 1):
            assert feed_in_parts(stream, [first, second]) == whole
