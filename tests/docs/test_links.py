"""Every relative link in docs/*.md and the README leads somewhere: a file, and its heading.

A link's anchor is checked against the headings of the page it names, as
GitHub makes them: the heading's text, lower-cased, without punctuation but
for ``-`` and ``_``, spaces made hyphens, a repeated heading numbered
(``-1``, ``-2``). Headings and links inside fenced code blocks do not count.
A test a page cites by its node id (``tests/…/test_x.py::test_name``) is
checked to be defined in that file.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *#*$")


def prose(page: Path) -> Iterator[str]:
    """The page's lines outside fenced code blocks."""
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            yield line


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in prose(page):
        match = HEADING.match(line)
        if match is None:
            continue
        base = slug(match[1])
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(page: Path) -> Iterator[str]:
    for line in prose(page):
        for target in LINK.findall(line):
            if not re.match(r"[a-z][a-z0-9+.-]*:", target):
                yield target


def broken(page: Path) -> list[str]:
    problems = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            problems.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            problems.append(f"{target}: no such heading in {linked.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path) -> None:
    """presa-defined (docs/, README.md): a relative link names a file that exists and,
    with an anchor, a heading of that page."""
    assert broken(page) == []


def test_the_checker_finds_a_broken_anchor(tmp_path: Path) -> None:
    """presa-defined: the check fails on a missing file and on a missing heading, and
    reads headings as GitHub names them (punctuation dropped, repeats numbered)."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Where tasks live: `--store`\n## Step\n## Step\n"
        "[a](#where-tasks-live---store) [b](#step-1) [c](#nowhere) [d](gone.md)\n"
        "```\n# not a heading\n[e](#not-a-heading)\n```\n"
    )
    assert broken(page) == ["#nowhere: no such heading in page.md", "gone.md: no such file"]


#: A test named by its node id, ``tests/http/test_health.py::test_readyz_is_503_while_draining``.
NODE_ID = re.compile(r"((?:tests|bench|conformance)/[\w/]+\.py)::(\w+)")


@cache
def defined_names(path: Path) -> set[str]:
    """The functions, classes and module-level names a Python file defines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    for node in tree.body:
        if isinstance(node, ast.Assign):
            found.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return found


def missing_tests(text: str) -> list[str]:
    return [
        f"{file}::{name}"
        for file, name in NODE_ID.findall(text)
        if not (ROOT / file).exists() or name not in defined_names(ROOT / file)
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_test_a_page_cites_exists(page: Path) -> None:
    """presa-defined (docs/, README.md): a test named by its node id
    (``file.py::test_name``) is defined in that file, so "shown by" leads to it."""
    assert missing_tests(page.read_text(encoding="utf-8")) == []


def test_the_checker_finds_a_test_that_is_gone() -> None:
    """presa-defined: the check reads node ids and fails on a renamed test."""
    here = "tests/docs/test_links.py"
    assert missing_tests(f"`{here}::test_every_test_a_page_cites_exists`, `{here}::gone`") == [
        f"{here}::gone"
    ]
