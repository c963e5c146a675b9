"""``presa-trio`` itself: the command line loaded, then run.

Loading the command line (the server, the demo, hypercorn) takes a moment;
a Ctrl-C within it ends the process with 130 and no word, as one while the
command runs does (:func:`presa_trio.cli.main.main`), not with a traceback
of the import it cut short.
"""

from __future__ import annotations

import sys

#: The exit status of a command Ctrl-C ended (128 + SIGINT): the client's
#: :data:`~presa_trio.client.errors.EXIT_CANCELLED`, which :func:`presa_trio.cli.main.main`
#: exits with too; written out here, since nothing may be imported before the ``try``.
EXIT_INTERRUPTED = 130


def main() -> None:
    try:
        from presa_trio.cli.main import main as run
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    run()
