"""The runner tests' fixtures: a recording store, and a runner over it on Trio's clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from presa_trio.tasks import TaskRunner
from tests.tasks.helpers import TRIO_CLOCK, RecordingStore


@pytest.fixture
def store() -> RecordingStore:
    return RecordingStore()


@pytest.fixture
async def runner(store: RecordingStore) -> AsyncIterator[TaskRunner]:
    """A running runner; leaving the test shuts it down like a server shutdown."""
    runner = TaskRunner(store, TRIO_CLOCK, ttl_ms=60_000, poll_interval_ms=100)
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        yield runner
        nursery.cancel_scope.cancel()
