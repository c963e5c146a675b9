"""The standard streams as a command finds them: closed, cut by their reader, or full.

A stream closed before the command started (``<&-``, ``>&-``, ``2>&-``) is
opened on ``/dev/null`` (:func:`open_closed_streams`), as Python's own
``print`` drops what it would write to a missing ``sys.stdout``: no stdin
means no person to ask, and no stdout means no output wanted. Opened
first thing, it takes the descriptor the shell left free, so no socket
or pipe the command opens later lands on 0, 1 or 2.

A reader that stops reading (``presa-trio list URL | head -1``) cuts the
pipe under stdout; the command ends at its next write, without a word,
with the status a shell reports for a writer a cut pipe ends, 141 (128 +
SIGPIPE), as ``yes | head -1`` does. Any other failure to write stdout (a
full disk) is a usage error, as a transcript file that cannot be written
is. Either way stdout is then pointed at ``/dev/null``
(:func:`stop_writing`), so that neither a later write nor Python's flush
at exit fails again. Stderr carries only what is said along the way: a
line it does not take is dropped, and the command goes on, but asks
nobody anything: a question there would be seen by no one, and wait for
ever.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from presa_trio.client.errors import OutputCut, UsageProblem


def open_closed_streams() -> None:
    """Each of stdin, stdout and stderr that is closed, opened on ``/dev/null``."""
    for name, mode in (("stdin", "r"), ("stdout", "w"), ("stderr", "w")):
        if getattr(sys, name) is None:  # typeshed has them never None; a closed one is
            setattr(sys, name, open(os.devnull, mode, encoding="utf-8"))  # noqa: SIM115


@contextmanager
def writing_stdout(stream: TextIO) -> Iterator[None]:
    """Writes to stdout (``stream``); a cut pipe as :class:`OutputCut`, another failure
    as a :class:`UsageProblem`, each after :func:`stop_writing`."""
    try:
        yield
    except BrokenPipeError:
        stop_writing(stream)
        raise OutputCut("stdout was closed by its reader") from None
    except OSError as error:
        stop_writing(stream)
        raise UsageProblem(f"cannot write to stdout: {error.strerror or error}") from None


#: The descriptors :func:`stop_writing` pointed at ``/dev/null``: a process's own, so
#: kept for the process (what goes there now is read by nobody).
_STOPPED: set[int] = set()


def stop_writing(stream: TextIO) -> None:
    """``stream``'s descriptor pointed at ``/dev/null``: what it still holds, and
    whatever is written to it later, goes nowhere, and fails nowhere."""
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError):  # no descriptor of its own (a StringIO): nothing to point
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, descriptor)
    finally:
        os.close(devnull)
    _STOPPED.add(descriptor)


def stopped(stream: TextIO) -> bool:
    """Whether :func:`stop_writing` pointed ``stream`` at ``/dev/null``: nobody reads it."""
    try:
        return stream.fileno() in _STOPPED
    except (OSError, ValueError):
        return False
