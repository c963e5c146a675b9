"""The garbage collector, set for a long-running server process.

CPython frees most objects by reference counting; the cyclic collector
exists for reference cycles, and it is triggered by allocations: a young
collection after every 700 net allocations by default, which then walks
every object still alive in the young generation. A server holds many
objects alive across its awaits (every request and task in flight), so at
the default most young collections walk objects that are still in use and
promote them, and older collections walk them again. Two settings, made
once when ``serve`` or ``stdio`` has built its server:

- **A first threshold of 7,000 allocations.** The objects of a request or
  a task creation mostly die, by reference counting, before a collection
  sees them.
- **``gc.freeze()`` once the server is built.** The modules, classes and
  registries made at start live as long as the process; frozen, no full
  collection walks them again.

Cycles are still collected: only how often, and what the collector walks,
changes. A program that serves presa's ``Server`` in its own process keeps
Python's defaults unless it calls :func:`settle_for_serving` too.
"""

from __future__ import annotations

import gc

#: Net allocations between two young collections (Python's default: 700).
YOUNG_THRESHOLD = 7_000


def settle_for_serving() -> None:
    """Raise the young threshold and freeze what exists now; call once, after building."""
    # Kept for speed: over 2 % of a tools/call's instructions with 32 task creations in flight.
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    gc.collect()
    gc.freeze()
