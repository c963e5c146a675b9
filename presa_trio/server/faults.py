"""Unexpected faults: a generic -32603 for the client, the detail for the operator.

The client reads only "Internal error" and ``data.incident``, a fresh id;
the log record of the cause (with its traceback) carries the same id, in its
message and as the ``incident`` field, so a client's report leads an operator
to the traceback without the traceback ever reaching the client.

A fault of the server's lifetime itself (the task runner cannot run on)
is no request's: every edge stops serving and raises :class:`ServerFailed`
with :func:`one_line` of it, and the command line exits non-zero with
that line, for a supervisor to restart the process.

Spec: 2026-07-28 basic/index §Error Codes (-32603 Internal error).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from presa_trio.wire.errors import InternalError


def report_fault(
    logger: logging.Logger, what: str, *args: Any, cause: BaseException | None = None
) -> InternalError:
    """Log ``what`` (a %-format with ``args``) with the traceback of ``cause``, or of the
    exception being handled if any; return the -32603 that names the record's incident."""
    error = InternalError.incident()
    handled = sys.exc_info()
    logger.error(
        f"{what} (incident %s)",
        *args,
        error.incident_id,
        exc_info=cause if cause is not None else handled if handled[0] is not None else None,
        extra={"incident": error.incident_id},
    )
    return error


#: What a handler may raise that ends its request or its task only: any ``Exception``,
#: and ``SystemExit``, which ``sys.exit()`` raises, and argparse's or click's exit,
#: inside a tool as anywhere; unanswered, it would end the server. ``KeyboardInterrupt``
#: (Ctrl-C, which Trio may raise inside any handler) and ``trio.Cancelled`` pass on.
HANDLER_FAILURES = (Exception, SystemExit)


class ServerFailed(Exception):
    """The server could not run on (its task runner failed): one line for an operator."""


def report_lifetime_failure(logger: logging.Logger, error: BaseException) -> str:
    """Log that the server cannot run, with ``error``'s traceback; return :func:`one_line` of
    it, for :class:`ServerFailed`. Every edge reports the failure of its lifetime here."""
    line = one_line(error)
    logger.error("the server cannot run: %s", line, exc_info=error)
    return line


def one_line(error: BaseException) -> str:
    """The first leaf of ``error`` (exception groups opened), as one line for an operator."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside ``error``, depth-first, exception groups opened at any depth."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]
