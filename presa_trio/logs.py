"""Log output for the command line: text lines or JSON lines, on stderr.

Text is for people (``2026-11-30 15:00:00,123 INFO presa_trio.access: POST /mcp
status=200 …``); JSON lines are for machines: one object per record with
``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, every field
the record carries (an access line's ``status``, ``mcp_method``…; a fault's
``incident``) and ``exception`` when there is a traceback. stdout is never
used: the stdio transport owns it.

A line logged on every request (the access line) may skip the record and
be written straight to the stderr handler, with the same bytes, while the
logging configuration is still the one :func:`configure` made
(:func:`direct_handler`); any handler or filter added later gets records.
Such lines may also be batched (:meth:`StderrLines.batch_lines`): held in
memory as the values they show (a :class:`Line`), and made into text and
written many to a write by whoever batches them, on its own schedule (the
access log's writer, :mod:`presa_trio.http.access`).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import select
import stat
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TextIO

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: The attributes every record has; anything else came in through ``extra``.
RECORD_ATTRIBUTES = frozenset(
    [*logging.makeLogRecord({}).__dict__, "message", "asctime", "taskName"]
)
#: Batched lines past which the batch's owner is asked to write it before its time.
BATCH_LINES = 512
#: Batched lines past which they are written at once, where they are made: the
#: owner's writes do not keep up, so the server waits for the stream, as it does
#: for a line that is not batched, rather than holding ever more lines.
BATCH_LIMIT = 8 * BATCH_LINES


class Line(Protocol):
    """A line for :meth:`StderrLines.write`: its values taken when it happened, its text
    made when it is written.

    A batched line is made into text by the batch's writer, many in one loop,
    rather than on the path of whatever it tells of (a request): the same
    work, done where the interpreter runs it fastest, and off that path.
    """

    def compose(self, lines: TextLines | JsonLines) -> str:
        """The line as ``lines`` (the handler's formatter) writes it, without its terminator."""
        ...


class JsonLines(logging.Formatter):
    """One JSON object per record, on one line."""

    #: A line carries the record's own fields (``extra``) beside its message.
    with_fields = True

    def format(self, record: logging.LogRecord) -> str:
        fields = {key: value for key, value in vars(record).items() if key not in RECORD_ATTRIBUTES}
        if record.exc_info:
            fields["exception"] = self.formatException(record.exc_info)
        return self.compose(
            record.created, record.levelname, record.name, record.getMessage(), fields
        )

    def compose(
        self, created: float, level: str, logger: str, message: str, fields: dict[str, object]
    ) -> str:
        """The line of a record made at ``created`` whose own fields (``extra``) are ``fields``.

        A line holding a character that is not printable, which JSON leaves as
        it is (a line or paragraph separator, NEL, a right-to-left override, a
        C1 control), is written in ASCII, that character escaped, as a text
        line's value is (:func:`presa_trio.http.access.text_value`): a client
        chooses the path and the headers, and could otherwise split a line
        for a reader that splits on them, or reorder an operator's terminal.
        """
        entry: dict[str, object] = {
            "time": datetime.datetime.fromtimestamp(created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": level,
            "logger": logger,
            "message": message,
        }
        line = json.dumps(entry | fields, ensure_ascii=False, default=str)
        if line.isprintable():
            return line
        return json.dumps(entry | fields, default=str)


class TextLines(logging.Formatter):
    """``TEXT_FORMAT``, its timestamp written once per second and reused within it.

    ``logging.Formatter.formatTime`` converts and formats the time of every
    record, and the access log writes a record per request; within one
    second the text is the same. The milliseconds are still each record's own,
    their three digits looked up rather than formatted.
    """

    #: A line is its message: whatever fields a record has are written into it.
    with_fields = False
    #: ``,000`` to ``,999``: the end of a timestamp, by its milliseconds.
    MILLISECONDS = tuple(f",{ms:03d}" for ms in range(1000))

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)
        self._second = -1
        self._stamp = ""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info:
            return super().format(record)  # the traceback's layout is the standard one
        record.message = record.getMessage()
        return self.compose(record.created, record.levelname, record.name, record.message, {})

    def compose(
        self, created: float, level: str, logger: str, message: str, fields: dict[str, object]
    ) -> str:
        """The line of a record made at ``created``; its fields are already in ``message``."""
        return f"{self.stamp(created)} {level} {logger}: {message}"

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return self.stamp(record.created)

    def stamp(self, created: float) -> str:
        """``logging.Formatter``'s default time format, its second formatted once."""
        second = int(created)
        if second != self._second:
            self._second = second
            self._stamp = time.strftime(self.default_time_format, self.converter(second))
        return self._stamp + self.MILLISECONDS[int((created - second) * 1000)]


class StderrLines(logging.StreamHandler[TextIO]):
    """The handler :func:`configure` puts on the root logger: stderr, as text or JSON lines.

    Besides handling records, it writes a line for which no record was
    made (:meth:`write`), for :func:`direct_handler`. Those lines may be
    batched (:meth:`batch_lines`): kept in memory, in order, until the
    batch's owner calls :meth:`write_batch`. Whatever happens, a batched
    line reaches the stream before any record handled after it was made
    (:meth:`emit` writes the batch first), so the stream keeps the order
    in which its lines were made; and at the interpreter's exit
    (``logging.shutdown`` flushes every handler) nothing is left behind.
    """

    def __init__(self, lines: TextLines | JsonLines) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(lines)
        self.lines = lines
        # The lines :meth:`write` was given and nobody wrote yet, oldest first; ``None``
        # while not batching: each line is written as it is made. A deque, so
        # the thread that writes the batch takes lines while this one adds some.
        self.batch: deque[Line] | None = None
        # The batch's owner, told that the batch holds BATCH_LINES lines.
        self.on_full: Callable[[], None] = lambda: None

    def write(self, line: Line) -> None:
        """Write ``line``, or batch it: the same bytes :meth:`emit` writes for its record."""
        batch = self.batch
        if batch is None:
            self.write_lines(deque((line,)))
            return
        batch.append(line)
        if len(batch) >= BATCH_LINES:
            if len(batch) >= BATCH_LIMIT:
                self.write_batch()
            else:
                self.on_full()

    def batch_lines(self, on_full: Callable[[], None]) -> None:
        """From now on, keep the lines :meth:`write` makes until :meth:`write_batch`.

        ``on_full`` is called, in the thread that wrote the line, each time a
        line finds the batch :data:`BATCH_LINES` long.
        """
        self.batch = deque()
        self.on_full = on_full

    def stop_batching(self) -> None:
        """Write what the batch holds; from now on, :meth:`write` writes each line at once."""
        batch, self.batch = self.batch, None
        self.on_full = lambda: None
        if batch:
            self.write_lines(batch)

    def write_batch(self) -> None:
        """Write every line the batch holds now, oldest first; safe from any thread."""
        if self.batch:
            self.write_lines(self.batch)

    def write_lines(self, batch: deque[Line]) -> None:
        """Take the lines of ``batch``, make their text and write it, whole lines to a write.

        Each write carries at most what :func:`largest_whole_write` allows
        the stream as it is now (unless one line alone is longer): the lines
        of processes sharing one stderr (``--workers``) never interleave, as
        they did not when each line was written alone.
        """
        self.acquire()  # one writer at a time, the batch's order kept, the formatter's alone
        try:
            lines = [batch.popleft() for _ in range(len(batch))]
            try:
                texts = [line.compose(self.lines) + self.terminator for line in lines]
                # One line is one write to any stream: its limit is not looked up.
                most = largest_whole_write(self.stream) if len(texts) > 1 else None
                for chunk in whole_lines(texts, most):
                    self.stream.write(chunk)
                    self.stream.flush()
            except Exception:  # as emit does: the failure is reported, the server goes on
                made = {"msg": f"{len(lines)} lines could not be written", "levelno": logging.ERROR}
                self.handleError(logging.makeLogRecord(made))
        finally:
            self.release()

    def emit(self, record: logging.LogRecord) -> None:
        """Write the batch, then the record: the lines made before it come before it."""
        self.write_batch()
        super().emit(record)

    def flush(self) -> None:
        """Write the batch, then flush the stream (``logging.shutdown`` calls this at exit)."""
        self.write_batch()
        super().flush()


def largest_whole_write(stream: TextIO) -> int | None:
    """The most bytes one write to ``stream`` may carry and still reach it whole.

    A regular file takes any write whole, with respect to every other
    write to it (POSIX.1-2017, XSH 2.9.7 "Thread Interactions with Regular
    File Operations"): no limit. A pipe, a socket, a terminal, or a stream
    that is not a file at all promises that only up to ``PIPE_BUF`` bytes
    (XSH ``write()``, on pipes and FIFOs).
    """
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, AttributeError):  # io.UnsupportedOperation is an OSError
        return select.PIPE_BUF
    return None if stat.S_ISREG(mode) else select.PIPE_BUF


def whole_lines(lines: Iterable[str], most: int | None) -> Iterator[str]:
    """``lines`` joined into chunks of at most ``most`` bytes (UTF-8), never cutting a line.

    A line longer than ``most`` is a chunk of its own; with no ``most``,
    every line is in one chunk.
    """
    if most is None:
        yield "".join(lines)
        return
    chunk: list[str] = []
    size = 0
    for line in lines:
        length = len(line) if line.isascii() else len(line.encode())
        if chunk and size + length > most:
            yield "".join(chunk)
            chunk, size = [], 0
        chunk.append(line)
        size += length
    if chunk:
        yield "".join(chunk)


def direct_handler(logger: logging.Logger, level: int) -> StderrLines | None:
    """The handler a record at ``level`` on ``logger`` would reach alone and unchanged, if any.

    This is a shortcut for a line logged on every request (the access
    line): making a ``LogRecord`` and handing it down the logging module's
    route costs more than the line itself. A record logged on ``logger``
    passes the logger's filters, then goes to the handlers of the logger
    and of each ancestor until one does not propagate, each handler with
    its level and filters (the logging HOWTO's "Logging Flow"). While that
    route is still exactly what :func:`configure` made of it, it ends in
    one :class:`StderrLines` that formats the record with its own
    formatter, so ``StderrLines.write`` writes the same bytes. That is
    the case when:

    - records are made by ``logging.LogRecord`` (no ``setLogRecordFactory``);
    - ``logger`` is enabled and has no filters (the root's filters, like
      any ancestor's, apply only to records logged on it directly);
    - ``logger`` and each ancestor below the root have no handlers and propagate;
    - the root's only handler is a ``StderrLines`` at ``level`` or below,
      without filters, formatting with the formatter it was made with.

    Anything else (a handler or filter a user adds at run time, another
    formatter) gives ``None``: the caller logs a record as usual.
    The caller has checked ``logger.isEnabledFor(level)``.
    """
    if logging.getLogRecordFactory() is not logging.LogRecord or logger.filters or logger.disabled:
        return None
    node: logging.Logger = logger
    while node.parent is not None:  # up to the root, whose parent is None
        if node.handlers or not node.propagate:
            return None
        node = node.parent
    if len(node.handlers) != 1:
        return None
    (handler,) = node.handlers
    if (
        type(handler) is not StderrLines
        or handler.filters
        or handler.level > level
        or handler.formatter is not handler.lines
    ):
        return None
    return handler


def skip_unused_record_fields() -> None:
    """Stop the logging module collecting what neither format shows.

    The caller's file and line (a walk up the stack for every record), the
    thread, process and multiprocessing names: the logging HOWTO's
    "Optimization" section names these switches for exactly this.
    """
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


def configure(level: str, form: str) -> None:
    """Send every log record at ``level`` or above to stderr, as ``text`` or ``json``.

    hypercorn's own INFO lines ("Running on …") are left out: presa says
    where it serves once, itself.
    """
    skip_unused_record_fields()
    handler = StderrLines(JsonLines() if form == "json" else TextLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("hypercorn.error").setLevel(max(logging.WARNING, root.level))
