"""The garbage collector's settings for a serving process (presa_trio.cli.collector)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from presa_trio.cli.collector import YOUNG_THRESHOLD, settle_for_serving


@pytest.fixture
def restored_collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("restored_collector")
def test_settling_raises_the_young_threshold_and_freezes_what_exists() -> None:
    gc.unfreeze()
    _, middle, old = gc.get_threshold()
    settle_for_serving()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, middle, old)
    assert gc.get_freeze_count() > 0
