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


def configure(level: str, form: str) -> None:
    """Send every log record at ``level`` or above to stderr, as ``text`` or ``json``.

    hypercorn's own INFO lines ("Running on …") are left out: presa says
    where it serves once, itself.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if form == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("hypercorn.error").setLevel(max(logging.WARNING, root.level))
