"""Log output for the command line: text lines or JSON lines, on stderr.

Text is for people (``2026-11-30 15:00:00,123 INFO presa_trio.access: POST /mcp
status=200 …``); JSON lines are for machines: one object per record with
``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, every field
the record carries (an access line's ``status``, ``mcp_method``…; a fault's
``incident``) and ``exception`` when there is a traceback. stdout is never
used: the stdio transport owns it.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
from typing import Any

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
        entry: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry |= {key: value for key, value in vars(record).items() if key not in RECORD_ATTRIBUTES}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextLines(logging.Formatter):
    """``TEXT_FORMAT``, its timestamp written once per second and reused within it.

    ``logging.Formatter.formatTime`` converts and formats the time of every
    record; an access line per request made that a visible share of a
    request's cost. The milliseconds are still each record's own.
    """

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)
        self._second = -1
        self._stamp = ""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info:
            return super().format(record)  # the traceback's layout is the standard one
        record.message = record.getMessage()
        return f"{self.formatTime(record)} {record.levelname} {record.name}: {record.message}"

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        second = int(record.created)
        if second != self._second:
            self._second, self._stamp = second, super().formatTime(record, datefmt)[:-4]
        return f"{self._stamp},{int(record.msecs):03d}"


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
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if form == "json" else TextLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("hypercorn.error").setLevel(max(logging.WARNING, root.level))
