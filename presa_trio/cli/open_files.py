"""The open files a serving process may hold, raised to what the system allows it.

Every connection is an open file (a socket), and so is every stream a
client holds open: a ``subscriptions/listen`` keeps its connection for as
long as the client wants. A process starts with the soft limit its parent
gave it, often 1,024 (a shell's default, and systemd's for a service,
whose hard limit is far higher: ``LimitNOFILE=1024:524288``). At that soft
limit one client holding the streams ``--listen-max-streams-per-client``
allows it by default (1,000) took nearly every descriptor, and another
client's connection then waited unaccepted (trio retries an ``accept``
that finds no descriptor free): the bound on one client did not leave room
for the others. ``presa-trio serve`` therefore raises the soft limit to the
hard one as it starts, as Go's runtime does for every program. A hard limit
the operator set still bounds it (``LimitNOFILE=N`` sets both; ``ulimit -Hn``).

A program that serves presa's ``Server`` in its own process keeps its
limits unless it calls :func:`raise_open_files_limit` too.
"""

from __future__ import annotations

import logging
import sys

log = logging.getLogger(__name__)


def raise_open_files_limit() -> None:
    """Raise ``RLIMIT_NOFILE``'s soft limit to its hard limit; a system that refuses
    (one whose hard limit is no number it takes) keeps the soft one; Windows has none."""
    if sys.platform == "win32":
        return
    import resource  # POSIX only

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        log.debug("open files: kept the soft limit %d (the hard limit is %d)", soft, hard)
