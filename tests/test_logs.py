"""serve's stderr handler: a line written as it is made, or batched and written with others.

Rules of this file: the handler is :func:`presa_trio.logs.configure`'s own
kind, writing to a stream in memory that keeps each write apart; nothing
here runs a server or a thread (the access log's writer, which calls
``write_batch`` on a schedule, is tested in tests/http/test_access.py).
"""

from __future__ import annotations

import io
import logging
import os
import select
import time
from pathlib import Path
from typing import TextIO

import attrs

from presa_trio import logs


class Writes(io.StringIO):
    """A stream that keeps each write it gets."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


class FileWrites(io.TextIOWrapper):
    """A text stream on a real file (or pipe) descriptor that keeps each write it gets."""

    def __init__(self, fd: int) -> None:
        super().__init__(os.fdopen(fd, "wb"), encoding="utf-8")
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


def handler_on(stream: TextIO) -> logs.StderrLines:
    handler = logs.StderrLines(logs.TextLines())
    handler.setStream(stream)
    return handler


@attrs.frozen
class Said:
    """A line saying ``message`` at INFO on ``presa_trio.access``, made when it is written."""

    message: str

    def compose(self, lines: logs.TextLines | logs.JsonLines) -> str:
        return lines.compose(time.time(), "INFO", "presa_trio.access", self.message, {})


def line(handler: logs.StderrLines, message: str) -> None:
    handler.write(Said(message))


def test_a_batched_line_waits_for_the_batch_to_be_written() -> None:
    """presa-defined (logs): while batching, lines are held, then written oldest first."""
    stream = Writes()
    handler = handler_on(stream)
    handler.batch_lines(lambda: None)
    line(handler, "first")
    line(handler, "second")
    assert stream.getvalue() == ""
    handler.write_batch()
    written = stream.getvalue().splitlines()
    assert [text.rsplit(": ", 1)[1] for text in written] == ["first", "second"]
    assert len(stream.writes) == 1


def test_a_record_is_written_after_the_lines_batched_before_it() -> None:
    """presa-defined (logs): a record handled while lines are held comes after them on
    the stream, as it would had they been written at once."""
    stream = Writes()
    handler = handler_on(stream)
    handler.batch_lines(lambda: None)
    line(handler, "an access line")
    handler.handle(logging.makeLogRecord({"name": "x", "levelno": 30, "msg": "a warning"}))
    written = stream.getvalue().splitlines()
    assert written[0].endswith("INFO presa_trio.access: an access line")
    assert written[1].endswith("x: a warning")
    assert len(written) == 2


def test_each_write_carries_whole_lines_and_at_most_pipe_buf_bytes() -> None:
    """presa-defined (logs): a batch goes out in writes of whole lines, each small enough
    for a pipe to take at once, so processes sharing stderr never cut into a line; a
    line longer than that is a write of its own."""
    stream = Writes()
    handler = handler_on(stream)
    handler.batch_lines(lambda: None)
    messages = [f"request {n} " + "é" * 60 for n in range(200)]
    messages.insert(100, "long " + "x" * select.PIPE_BUF)
    for message in messages:
        line(handler, message)
    handler.write_batch()
    assert len(stream.writes) > 1
    assert all(write.endswith("\n") for write in stream.writes)
    assert [len(write.encode()) <= select.PIPE_BUF for write in stream.writes].count(False) == 1
    written = stream.getvalue().splitlines()
    assert [text.split(": ", 1)[1] for text in written] == messages


def test_a_batch_to_a_regular_file_is_one_write_and_to_a_pipe_whole_lines_of_pipe_buf(
    tmp_path: Path,
) -> None:
    """presa-defined (logs): a regular file takes any write whole (POSIX.1-2017 XSH
    2.9.7), so a batch to one is a single write; to a pipe, writes stay within PIPE_BUF."""
    messages = [f"request {n} " + "x" * 100 for n in range(200)]
    to_file = FileWrites(os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT))
    read_end, write_end = os.pipe()
    to_pipe = FileWrites(write_end)
    try:
        for stream in (to_file, to_pipe):
            handler = handler_on(stream)
            handler.batch_lines(lambda: None)
            for message in messages:
                line(handler, message)
            handler.write_batch()
        assert len(to_file.writes) == 1
        written = (tmp_path / "log").read_text().splitlines()
        assert [text.split(": ", 1)[1] for text in written] == messages
        assert len(to_pipe.writes) > 1
        assert all(len(write.encode()) <= select.PIPE_BUF for write in to_pipe.writes)
        piped = "".join(to_pipe.writes).splitlines()
        assert [text.split(": ", 1)[1] for text in piped] == messages
    finally:
        to_file.close()
        to_pipe.close()
        os.close(read_end)


def test_the_owner_is_told_of_a_full_batch_and_past_the_limit_lines_are_written_at_once() -> None:
    """presa-defined (logs): at BATCH_LINES held lines the batch's owner is told, at every
    line after; at BATCH_LIMIT, the owner not having written them, the line that reaches
    the limit writes them all itself: memory stays bounded."""
    stream = Writes()
    handler = handler_on(stream)
    told: list[int] = []
    handler.batch_lines(lambda: told.append(len(handler.batch or ())))
    for n in range(logs.BATCH_LINES - 1):
        line(handler, str(n))
    assert told == []
    line(handler, "full")
    assert told == [logs.BATCH_LINES]
    for n in range(logs.BATCH_LINES, logs.BATCH_LIMIT - 1):
        line(handler, str(n))
    assert stream.getvalue() == ""
    line(handler, "limit")
    assert len(told) == logs.BATCH_LIMIT - logs.BATCH_LINES
    assert len(stream.getvalue().splitlines()) == logs.BATCH_LIMIT
    assert handler.batch is not None
    assert len(handler.batch) == 0


def test_stopping_writes_what_is_held_and_then_each_line_at_once() -> None:
    """presa-defined (logs): when batching stops, the held lines are written, and a line
    made after it is written as it is made."""
    stream = Writes()
    handler = handler_on(stream)
    handler.batch_lines(lambda: None)
    line(handler, "held")
    handler.stop_batching()
    assert stream.getvalue().endswith(": held\n")
    line(handler, "after")
    assert stream.getvalue().endswith(": after\n")
    assert handler.batch is None


def test_logging_shutdown_writes_what_is_held() -> None:
    """presa-defined (logs): the interpreter's exit (``logging.shutdown``, which flushes
    every handler) leaves no held line unwritten."""
    stream = Writes()
    handler = handler_on(stream)
    handler.batch_lines(lambda: None)
    line(handler, "held at exit")
    logging.shutdown([lambda: handler])
    assert stream.getvalue().endswith(": held at exit\n")
