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
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
import time
from typing import TextIO

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: The attributes every record has; anything else came in through ``extra``.
RECORD_ATTRIBUTES = frozenset(
    [*logging.makeLogRecord({}).__dict__, "message", "asctime", "taskName"]
)


class JsonLines(logging.Formatter):
    """One JSON object per record, on one line."""

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
        """The line of a record made at ``created`` whose own fields (``extra``) are ``fields``."""
        entry: dict[str, object] = {
            "time": datetime.datetime.fromtimestamp(created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": level,
            "logger": logger,
            "message": message,
        }
        return json.dumps(entry | fields, ensure_ascii=False, default=str)


class TextLines(logging.Formatter):
    """``TEXT_FORMAT``, its timestamp written once per second and reused within it.

    ``logging.Formatter.formatTime`` converts and formats the time of every
    record, and the access log writes a record per request; within one
    second the text is the same. The milliseconds are still each record's own.
    """

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
        return f"{self._stamp},{int((created - second) * 1000):03d}"


class StderrLines(logging.StreamHandler[TextIO]):
    """The handler :func:`configure` puts on the root logger: stderr, as text or JSON lines.

    Besides handling records, it writes a line for which no record was
    made (:meth:`write`), for :func:`direct_handler`.
    """

    def __init__(self, lines: TextLines | JsonLines) -> None:
        super().__init__(sys.stderr)
        self.setFormatter(lines)
        self.lines = lines

    def write(self, level: int, logger: str, message: str, fields: dict[str, object]) -> None:
        """Write what :meth:`emit` writes for a record with these values, made now."""
        levelname = logging.getLevelName(level)
        line = self.lines.compose(time.time(), levelname, logger, message, fields)
        self.acquire()  # as emit's caller, Handler.handle, does: a thread's line stays whole
        try:
            self.stream.write(line + self.terminator)
            self.stream.flush()
        except Exception:  # as emit does: the failure is reported, the server goes on
            made = {"name": logger, "levelno": level, "levelname": levelname, "msg": message}
            self.handleError(logging.makeLogRecord(made | fields))
        finally:
            self.release()


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
