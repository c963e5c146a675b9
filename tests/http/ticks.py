"""A clock for recorded transcripts that ticks one step per reading."""

from __future__ import annotations


class Ticks:
    """A clock that advances 5 ms per reading: deterministic timings."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        self.now += 0.005
        return self.now
