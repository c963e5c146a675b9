"""A module holds one topic; one over 600 lines says in its docstring why it is still one.

Modules are cut by topic, not by size: a long module is fine when what it
holds belongs together, and then its docstring says so, in a paragraph that
begins "One topic" ("One topic: the whole state machine, its table and its
transitions, ..."). A reader who opens a long module learns first why it
was not split.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import presa_trio

ROOT = Path(presa_trio.__file__).parent
#: Lines past which a module's docstring must say why it is one topic.
LONG = 600
#: How that paragraph of the docstring begins.
SAYS_WHY = "One topic"


def one_topic_or_says_why(source: str) -> bool:
    """Whether ``source`` is at most :data:`LONG` lines, or its docstring says why it is longer."""
    if len(source.splitlines()) <= LONG:
        return True
    docstring = ast.get_docstring(ast.parse(source)) or ""
    return any(paragraph.startswith(SAYS_WHY) for paragraph in docstring.split("\n\n"))


@pytest.mark.parametrize(
    "path", sorted(ROOT.rglob("*.py")), ids=lambda path: str(path.relative_to(ROOT))
)
def test_a_module_over_600_lines_says_in_its_docstring_why_it_is_one_topic(path: Path) -> None:
    """presa-defined (docs/architecture.md): modules by topic, not by size."""
    source = path.read_text(encoding="utf-8")
    lines = len(source.splitlines())
    assert one_topic_or_says_why(source), (
        f"{path.relative_to(ROOT.parent)} has {lines} lines and its docstring has no"
        f" paragraph beginning {SAYS_WHY!r}"
    )


def test_the_check_refuses_a_long_module_whose_docstring_does_not_say_why() -> None:
    """presa-defined: the check is not vacuous."""
    body = "x = 1\n" * (LONG + 1)
    assert not one_topic_or_says_why('"""Things."""\n' + body)
    assert not one_topic_or_says_why(
        '"""Things."""\n# One topic: a comment is not the docstring\n' + body
    )
    assert one_topic_or_says_why('"""Things.\n\nOne topic: they belong together."""\n' + body)
    assert one_topic_or_says_why('"""Things."""\n' + "x = 1\n" * 10)
