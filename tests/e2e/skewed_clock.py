"""``python tests/e2e/skewed_clock.py SECONDS serve …``: presa with its wall clock off.

A test launcher, not part of presa: it moves :func:`time.time` and
:func:`time.time_ns` of this one process by ``SECONDS`` (negative: behind),
as a host whose clock is wrong would, then runs the command line. Trio's
clock (monotonic) is left alone, as a wrong wall clock leaves it.
"""

from __future__ import annotations

import sys
import time

if __name__ == "__main__":
    offset = float(sys.argv[1])
    true_time, true_time_ns = time.time, time.time_ns
    time.time = lambda: true_time() + offset
    time.time_ns = lambda: true_time_ns() + round(offset * 1e9)
    from presa_trio.cli.main import main

    main(sys.argv[2:])
