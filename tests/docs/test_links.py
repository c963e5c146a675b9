"""Every relative link in docs/*.md and the README leads somewhere: a file, and its heading.

A link's anchor is checked against the headings of the page it names, as
GitHub makes them: the heading's text, lower-cased, without punctuation but
for ``-`` and ``_``, spaces made hyphens, a repeated heading numbered
(``-1``, ``-2``). Headings and links inside fenced code blocks do not count.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
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
