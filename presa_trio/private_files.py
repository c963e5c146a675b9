"""Files that hold what callers sent and were sent: readable by their owner alone.

The task store's SQLite file and the transcript both hold every caller's
arguments, answers and results, so no other user of the host may read them,
whatever the umask lets through (client/elicitation §Statefulness: "State
storage MUST be protected against unauthorized access"). A file that exists
keeps the mode its owner gave it.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path


def private_opener(path: str | os.PathLike[str], flags: int) -> int:
    """An ``opener`` for :func:`open`: a file it creates is mode 0600."""
    return os.open(path, flags, 0o600)


def create_private(path: Path) -> None:
    """Make ``path``, if it does not exist, readable and writable by its owner alone."""
    with suppress(FileExistsError):
        os.close(private_opener(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
