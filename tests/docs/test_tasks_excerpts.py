"""docs/tasks.md quotes the code of the design's sentence; each quote is the code as it is.

"One nursery per task supervises a worker …; tasks/cancel writes cancelled and
then cancels the scope": the page shows the two places that make it true,
``TaskRunner.cancel`` and the supervisor's nursery per task. A quote that
drifted from the code would teach a design the server no longer has, so each
of its lines, its comment left out, must be a line of the module it quotes,
in the same order.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "tasks.md"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)

#: Each quote, by its first line, and the module it quotes.
QUOTES = {
    "_, after = await self._built_writer().transition(scope, task_id, model.cancel)": (
        "presa_trio/tasks/runner.py"
    ),
    "try:": "presa_trio/tasks/supervisor.py",
}


def code_lines(text: str) -> list[str]:
    """The lines of ``text`` that hold code, stripped, each without its comment."""
    lines = (line.split("  # ")[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("first", sorted(QUOTES))
def test_a_quote_of_the_design_is_the_code_as_it_is(first: str) -> None:
    (quote,) = [block for block in BLOCK.findall(PAGE.read_text()) if code_lines(block)[0] == first]
    source = code_lines((ROOT / QUOTES[first]).read_text())
    at = 0
    for line in code_lines(quote):
        assert line in source[at:], f"{line!r} is not in {QUOTES[first]} (in this order)"
        at = source.index(line, at) + 1
