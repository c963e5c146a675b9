"""One back-off for every retry in the runtime: 0.1 s, doubling, at most 5 s.

A worker's write that met an unavailable store, a background loop that
failed, a resync waiting for the store and a LISTEN connection that
dropped all wait the same way: the first delay, doubled after each
failure up to a cap, and back to the first once something succeeded.
Lease renewal's cap is its own period, a third of a lease, when that is
shorter (:meth:`~presa_trio.tasks.housekeeping.Housekeeping.loops`).
"""

from __future__ import annotations

import attrs
import trio

#: The first delay, and the most any delay grows to, in seconds.
FIRST = 0.1
CAP = 5.0


@attrs.define
class Backoff:
    """Delays between tries: ``first``, doubling after each, at most ``cap``."""

    first: float = FIRST
    cap: float = CAP
    _next: float = attrs.field(init=False, default=0.0)

    def reset(self) -> None:
        """Something succeeded: the next failure waits ``first`` again."""
        self._next = 0.0

    def delay(self) -> float:
        """The delay to wait now; the next one is twice as long, up to ``cap``."""
        current = self._next or self.first
        self._next = min(current * 2, self.cap)
        return current

    async def wait(self) -> None:
        """Sleep for :meth:`delay` seconds (a checkpoint, so a cancel ends it)."""
        await trio.sleep(self.delay())
