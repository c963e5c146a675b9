"""Unexpected faults: a generic -32603 for the client, the detail for the operator.

The client reads only "Internal error" and ``data.incident``, a fresh id;
the log record of the cause (with its traceback) carries the same id, in its
message and as the ``incident`` field, so a client's report leads an operator
to the traceback without the traceback ever reaching the client.

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
