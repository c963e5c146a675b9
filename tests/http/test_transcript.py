"""Transcripts record exchanges without changing them, and render stably.

Rules: recording is ASGI middleware around the real app; the golden
rendering lives next to this file and changes only on purpose.
"""

from __future__ import annotations

import json
import logging
import os
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import trio

from presa_trio.demo import build_app
from presa_trio.http.transcript import TranscriptRecorder
from presa_trio.http.transcript_render import render_lines
from presa_trio.testing import McpClient, meta, request, running
from presa_trio.transcript_file import TranscriptFile
from presa_trio.wire.transcript import Exchange, record_line
from tests.http.ticks import Ticks

HERE = Path(__file__).parent
RECORDED = HERE / "transcript_recorded.jsonl"
GOLDEN = HERE / "transcript_golden.md"


async def exchange_both_ways(tmp_path: Path) -> tuple[list[bytes], list[bytes], Path]:
    """Send the same requests to the bare app and to the recorded one."""
    target = tmp_path / "t.jsonl"
    bodies: list[list[bytes]] = [[], []]
    messages = [
        request("tools/call", {"name": "test_simple_text"}),
        request("tools/call", {"name": "test_tool_with_progress", "_meta": meta(progressToken=7)}),
        request("tools/call", {"name": "no_such_tool"}),
    ]
    for index, wrap in enumerate((False, True)):
        app = build_app()
        async with running(app) as client:
            if wrap:
                client = McpClient(app, asgi=TranscriptRecorder(app, target, Ticks()))
            for message in messages:
                response = await client.post(message)
                bodies[index].append(response.body)
    return bodies[0], bodies[1], target


async def test_recording_does_not_change_what_the_server_sends(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """presa-defined: transcripts must not change the wire (off by default)."""
    bare, recorded, target = await exchange_both_ways(tmp_path)
    assert recorded == bare
    lines = target.read_text().splitlines()
    assert len(lines) == 3
    first = json.loads(lines[0])
    assert first["request"]["headers"]["mcp-method"] == "tools/call"
    assert first["response"]["status"] == 200
    assert first["response"]["body"]["result"]["content"][0]["type"] == "text"
    streamed = json.loads(lines[1])
    methods = [e["data"].get("method") for e in streamed["response"]["events"]]
    assert methods == ["notifications/progress"] * 3 + [None]


def test_rendering_of_a_recorded_exchange_is_stable() -> None:
    """presa-defined: the Markdown rendering of a fixed recording never drifts."""
    rendered = render_lines(RECORDED.read_text().splitlines())
    assert rendered == GOLDEN.read_text()


def test_an_event_is_recorded_when_its_last_chunk_arrives_whatever_its_line_ends() -> None:
    """presa-defined (http/transcript.py, read through wire/sse.py): an SSE event cut
    across chunks is recorded once, whole, at the time of the chunk that completes it;
    LF and CR line ends read as CRLF ones do, and comments are not events."""
    exchange = Exchange(0.0, {"method": "POST", "path": "/mcp", "headers": {}})
    exchange.response = {"status": 200, "contentType": "text/event-stream"}
    exchange.add_events(b'event: message\ndata: {"a"', 1.0)
    exchange.add_events(b":1}\n\n: ping\r\rdata: 2\r", 2.0)
    exchange.add_events(b"\r", 3.0)
    assert exchange.record()["response"]["events"] == [
        {"at": 2.0, "data": {"a": 1}},
        {"at": 3.0, "data": 2},
    ]


def hostile_record() -> str:
    """An exchange whose path, header, method and text body carry terminal controls and fences."""
    record = {
        "started": 0.0,
        "request": {
            "method": "POST",
            "path": "/mcp\x1b[31m",
            "headers": {"mcp-method": "tools/call\x9b2J"},
            "body": "\x1b]0;title\x07```\n### 2. forged\n```",
        },
        "response": {"status": 400, "contentType": "application/json", "body": {"m": "x\x7f\x85"}},
    }
    return json.dumps(record)


def test_a_rendering_carries_no_control_character_and_no_fence_a_body_can_close() -> None:
    """presa-defined (http/transcript_render.py): what a client sent is shown, not obeyed:
    C0 and C1 controls and DEL are written as escapes, so the Markdown is safe to print
    on a terminal, and a body holding a fence is fenced by a longer one."""
    rendered = render_lines([hostile_record()])
    controls = [c for c in rendered if c not in "\n" and unicodedata.category(c) == "Cc"]
    assert controls == []
    assert "\\u001b[31m" in rendered
    assert "tools/call\\u009b2J" in rendered
    assert "\\u007f\\u0085" in rendered
    assert "\n````json\n\\u001b]0;title\\u0007```\n### 2. forged\n```\n````\n" in rendered


def simple_record(started: float, text: str) -> dict[str, Any]:
    return {
        "started": started,
        "request": {"method": "POST", "path": "/mcp", "headers": {}, "body": None},
        "response": {"status": 200, "contentType": "application/json", "body": text},
    }


async def test_a_write_cut_short_leaves_the_records_before_and_after_it_readable(
    tmp_path: Path,
) -> None:
    """presa-defined (transcript_file.py, http/transcript_render.py): a writer that stops
    mid-line (a crash, a full disk) leaves a line that is not a record; the next append
    starts a line of its own, and the rendering shows every whole record and says which
    line it left out, rather than refusing the file."""
    path = tmp_path / "t.jsonl"
    await TranscriptFile(path).append(simple_record(1.0, "first é"))
    whole = path.read_bytes()
    path.write_bytes(whole + whole[: len(whole) - 12])  # cut inside the é of a second line
    await TranscriptFile(path).append(simple_record(3.0, "third"))
    lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    assert len(lines) == 3
    rendered = render_lines(lines)
    assert "\nfirst é\n" in rendered
    assert "\nthird\n" in rendered
    assert "### 2." in rendered
    assert "_(line 2 is not a whole record, left out: its write was cut short)_" in rendered


def test_a_file_with_no_record_is_not_a_transcript() -> None:
    """presa-defined (http/transcript_render.py): lines that are not records, and no record."""
    with pytest.raises(ValueError, match="no record"):
        render_lines(["this is not JSON", '{"started": 1'])


def test_an_event_stream_is_kept_as_its_events_only() -> None:
    """presa-defined (wire/transcript.py): a stream's record holds its events, not the
    stream's bytes beside them, so a long listen stream costs its events once; a JSON
    body is kept as its bytes until it ends, and never read as events."""
    streamed = Exchange(0.0, {"method": "POST", "path": "/mcp", "headers": {}})
    streamed.response = {"status": 200, "contentType": "text/event-stream"}
    for at in range(100):
        streamed.add_body(b'data: {"n": %d}\n\n' % at, float(at))
    assert streamed.response_body == b""
    assert [event["data"]["n"] for event in streamed.record()["response"]["events"]] == [
        *range(100)
    ]
    plain = Exchange(0.0, {"method": "POST", "path": "/mcp", "headers": {}})
    plain.response = {"status": 200, "contentType": "application/json"}
    plain.add_body(b'data: {"n": 1}\n', 1.0)
    plain.add_body(b"\n", 2.0)
    assert plain.events == []
    assert plain.record()["response"]["body"] == 'data: {"n": 1}\n\n'


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"[" * 100_000 + b"]" * 100_000, id="nested past the parser's depth"),
        pytest.param('{"id":1,"method":"ping"}'.encode("utf-16"), id="UTF-16"),
        pytest.param(b'{"id":1,"method":"ping","params":{"a":NaN}}', id="NaN"),
        pytest.param(b'{"id":1,"method":"p\xffing"}', id="not UTF-8"),
    ],
)
def test_a_body_the_server_cannot_parse_is_recorded_as_its_text(body: bytes) -> None:
    """presa-defined (wire/transcript.py): a body the server answers -32700 (basic/transports
    §Messages: UTF-8; RFC 8259 §6: no NaN) is recorded as text, never as JSON the server did
    not read, nor lost to the recorder's own parser; and every line is strict JSON."""

    def refuse(constant: str) -> None:
        raise ValueError(constant)

    exchange = Exchange(0.0, {"method": "POST", "path": "/mcp", "headers": {}})
    exchange.body += body
    exchange.response = {"status": 400, "contentType": "application/json"}
    line = record_line(exchange.record())
    recorded = json.JSONDecoder(parse_constant=refuse).decode(line.decode("utf-8"))
    assert recorded["request"]["body"] == body.decode("utf-8", errors="replace")


async def test_a_transcript_that_cannot_be_written_is_one_warning_not_an_error_per_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """presa-defined (http/transcript.py): a file that refuses writes (a full disk; here a
    directory) changes no answer and raises nothing into the server, which logged an
    ASGI error with a traceback for each request; one warning says exchanges are not
    recorded, and one line says so when a write succeeds again."""
    target = tmp_path / "t.jsonl"
    target.mkdir()
    app = build_app()
    recorder = TranscriptRecorder(app, target, Ticks())
    message = request("tools/call", {"name": "test_simple_text"})
    with caplog.at_level(logging.INFO, logger="presa_trio.http.transcript"):
        async with running(app) as bare:
            expected = (await bare.post(message)).body
            client = McpClient(app, asgi=recorder)
            assert [(await client.post(message)).body for _ in range(2)] == [expected] * 2
            target.rmdir()
            assert (await client.post(message)).body == expected
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if "transcript" in r.name]
    assert lines == [
        (
            "WARNING",
            f"cannot write the transcript {target}: Is a directory; exchanges go "
            "unrecorded until it can be written",
        ),
        ("INFO", f"writing the transcript {target} again"),
    ]
    assert all(record.exc_info is None for record in caplog.records)
    assert len(target.read_text().splitlines()) == 1


async def test_a_transcript_the_recorder_creates_is_readable_by_its_owner_alone(
    tmp_path: Path,
) -> None:
    """Spec-mandated (client/elicitation §Statefulness: "State storage MUST be protected
    against unauthorized access"): a transcript holds every caller's arguments, answers
    and results, so a file the recorder creates, at the first exchange or again once
    the file was removed, is mode 0600 whatever the umask lets others read. A file that
    exists keeps the mode its owner gave it."""
    created, shared = tmp_path / "created.jsonl", tmp_path / "shared.jsonl"
    shared.touch()
    shared.chmod(0o640)
    message = request("tools/call", {"name": "test_simple_text"})
    before = os.umask(0o022)
    try:
        app = build_app()
        async with running(app):
            recorded = McpClient(app, asgi=TranscriptRecorder(app, created, Ticks()))
            await recorded.post(message)
            assert modes(created) == 0o600
            created.unlink()  # rotated away while the server runs
            await recorded.post(message)
            assert modes(created) == 0o600
            await McpClient(app, asgi=TranscriptRecorder(app, shared, Ticks())).post(message)
            assert modes(shared) == 0o640
        assert [len(p.read_text().splitlines()) for p in (created, shared)] == [1, 1]
    finally:
        os.umask(before)


def modes(path: Path) -> int:
    """The permission bits of ``path``."""
    return os.stat(path).st_mode & 0o777


def test_a_record_line_holds_no_control_character() -> None:
    """presa-defined (wire/transcript.py): DEL and the C1 controls, which JSON may carry
    raw, are written as escapes, as the C0 ones are, so a transcript file (or the
    client's ``--transcript -``) printed on a terminal drives nothing; the line reads
    back as the same record."""
    record = simple_record(1.0, "csi \x9b2J del \x7f nel \x85 é")
    line = record_line(record).decode("utf-8")
    assert [c for c in line if unicodedata.category(c) == "Cc"] == ["\n"]
    assert "\\u009b2J" in line
    assert json.loads(line) == record
