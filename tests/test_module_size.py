"""No module of ``presa_trio`` is over 500 lines: one topic a module, each one readable whole.

A module that outgrows the bound is split by topic (as the CLI's option
values and its Tasks options were split from the commands), not trimmed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import presa_trio

ROOT = Path(presa_trio.__file__).parent
MOST_LINES = 500


@pytest.mark.parametrize(
    "path", sorted(ROOT.rglob("*.py")), ids=lambda path: str(path.relative_to(ROOT))
)
def test_a_module_is_at_most_500_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MOST_LINES, f"{path.relative_to(ROOT.parent)} has {lines} lines"
