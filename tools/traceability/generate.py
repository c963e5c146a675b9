#!/usr/bin/env python3
"""Build docs/traceability.md: every requirement id, and the tests that show it.

The table is derived, never kept by hand. Two inputs:

* ``requirements.toml`` (next to this file): each requirement id with a short
  statement of the rule, its kind, the conformance runner's check ids, and,
  only where no test of ours can show the rule, a ``reason`` (or a ``gap``
  where presa does not meet the rule yet);
* the test suite itself: pytest collects ``tests/`` (nothing runs) and every
  collected test's docstring is searched for the ids it cites, such as
  ``(SEP-2663 §Task Cancellation; T-41)``. A range is written
  ``T-27 to T-31`` or ``T-27–T-31``.

Exit status 1, with every problem listed, when:

* an id has no test, no reason and no gap;
* an id has a test and still a reason or a gap (drop the stale text);
* a docstring cites an id the data file does not define (a typo);
* the data file is malformed;
* a Markdown file under docs/ names a test (``tests/….py::test_…``) that the
  suite no longer has, so that links from prose to tests cannot rot;
* ``docs/traceability.md`` was out of date. The file is rewritten first, so
  running again passes; commit the new version. ``--check`` only compares
  and writes nothing.

Usage: ``python tools/traceability/generate.py [--check]`` from anywhere;
``nox -s traceability`` runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().with_name("requirements.toml")
OUTPUT = ROOT / "docs" / "traceability.md"
TESTS = "tests"

DOCS = ROOT / "docs"
#: A pytest node id as docs/ cite it, parameters optional.
NODE_ID = re.compile(r"tests/[\w/]+\.py::[\w:]+")
ID_SHAPE = re.compile(r"^(?P<prefix>[A-Z])-(?P<number>\d{2})$")
KINDS = ("MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY", "DEF", "CHOICE")
FIELDS = {"rule", "kind", "runner", "reason", "gap"}


@dataclass(frozen=True)
class Requirement:
    """One row of the data file."""

    id: str
    rule: str
    kind: str
    runner: tuple[str, ...] = ()
    reason: str = ""
    gap: str = ""


@dataclass(frozen=True)
class Group:
    """The ids sharing a prefix, and where they come from."""

    prefix: str
    title: str
    source: str


@dataclass
class Catalogue:
    groups: list[Group]
    requirements: dict[str, Requirement]


@dataclass(eq=False)
class Collected:
    """A pytest plugin: test ids (parameters dropped) and the docstring of each.

    ``eq=False`` keeps it hashable, as pytest's plugin registry needs.
    """

    docstrings: dict[str, str] = field(default_factory=dict)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            node_id = item.nodeid.split("[", 1)[0]
            parts = [getattr(getattr(item, "obj", None), "__doc__", None)]
            cls = getattr(item, "cls", None)
            if cls is not None:
                parts.append(cls.__doc__)
            self.docstrings[node_id] = "\n".join(p for p in parts if p)


def load(path: Path = DATA) -> tuple[Catalogue, list[str]]:
    """Read the data file; return it and whatever is wrong with it."""
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    problems: list[str] = []
    groups: list[Group] = []
    for prefix, entry in raw.pop("groups", {}).items():
        groups.append(Group(prefix, str(entry.get("title", "")), str(entry.get("source", ""))))
    prefixes = {g.prefix for g in groups}
    requirements: dict[str, Requirement] = {}
    for key, entry in raw.items():
        shape = ID_SHAPE.match(key)
        if shape is None or shape["prefix"] not in prefixes:
            problems.append(f"{path.name}: [{key}] is not an id of a declared group")
            continue
        if not isinstance(entry, dict):
            problems.append(f"{path.name}: [{key}] must be a table")
            continue
        unknown = set(entry) - FIELDS
        if unknown:
            problems.append(f"{path.name}: [{key}] has unknown fields {sorted(unknown)}")
        if not entry.get("rule") or entry.get("kind") not in KINDS:
            problems.append(f"{path.name}: [{key}] needs a rule and a kind among {KINDS}")
        requirements[key] = Requirement(
            id=key,
            rule=str(entry.get("rule", "")),
            kind=str(entry.get("kind", "")),
            runner=tuple(str(check) for check in entry.get("runner", [])),
            reason=str(entry.get("reason", "")),
            gap=str(entry.get("gap", "")),
        )
    return Catalogue(groups, requirements), problems


def cited_ids(text: str, prefixes: Iterable[str]) -> Iterator[str]:
    """The ids a docstring cites, ranges expanded, in order of appearance."""
    letters = "".join(sorted(prefixes))
    if not letters:
        return
    pattern = re.compile(
        rf"(?<![\w-])([{letters}])-(\d+)(?:\s*(?:to|–|—)\s*(?:\1-)?(\d+))?(?![\w-])"
    )
    for match in pattern.finditer(text):
        prefix, first, last = match[1], int(match[2]), match[3]
        width = len(match[2])
        for number in range(first, (int(last) if last else first) + 1):
            yield f"{prefix}-{number:0{width}d}"


def collect(root: Path = ROOT) -> Collected:
    """Collect the test suite with pytest (nothing runs); pytest's output is kept quiet."""
    collected = Collected()
    output = io.StringIO()
    with contextlib.chdir(root), contextlib.redirect_stdout(output):
        status = pytest.main(
            ["--collect-only", "-qq", "-p", "no:cacheprovider", TESTS], plugins=[collected]
        )
    if status != pytest.ExitCode.OK:
        sys.stdout.write(output.getvalue())
        raise SystemExit(f"traceability: collecting {TESTS}/ failed (pytest exit {status})")
    return collected


def trace(
    catalogue: Catalogue, docstrings: Mapping[str, str]
) -> tuple[dict[str, list[str]], list[str]]:
    """Map each id to the tests citing it; list unknown citations and coverage problems."""
    prefixes = [g.prefix for g in catalogue.groups]
    tests: dict[str, set[str]] = defaultdict(set)
    problems: list[str] = []
    for node_id, doc in docstrings.items():
        for cited in cited_ids(doc, prefixes):
            if cited in catalogue.requirements:
                tests[cited].add(node_id)
            else:
                problems.append(f"{node_id} cites {cited}, which {DATA.name} does not define")
    for req in catalogue.requirements.values():
        shown = bool(tests.get(req.id))
        if not shown and not (req.reason or req.gap):
            problems.append(f"{req.id} has no test, no reason and no gap: cite it in a test")
        if shown and (req.reason or req.gap):
            problems.append(f"{req.id} is shown by a test now: drop its reason or gap")
        if req.reason and req.gap:
            problems.append(f"{req.id} has both a reason and a gap: keep one")
    return {key: sorted(value) for key, value in tests.items()}, sorted(set(problems))


def dangling_links(docstrings: Mapping[str, str], docs: Path = DOCS) -> list[str]:
    """Node ids named in docs/*.md (the generated table aside) that pytest did not collect.

    A test class (or a generated test case) may be named without its methods.
    """
    known = set(docstrings) | {
        node_id.rsplit("::", depth)[0]
        for node_id in docstrings
        for depth in range(1, node_id.count("::"))
    }
    problems = []
    for page in sorted(docs.glob("*.md")):
        if page == OUTPUT:
            continue
        for node_id in sorted(set(NODE_ID.findall(page.read_text(encoding="utf-8")))):
            if node_id not in known:
                problems.append(f"docs/{page.name} names {node_id}, which is not a collected test")
    return problems


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def test_link(node_id: str) -> str:
    path = node_id.split("::", 1)[0]
    return f"[`{node_id}`](../{path})"


def sort_key(requirement_id: str) -> tuple[str, int]:
    prefix, number = requirement_id.split("-")
    return prefix, int(number)


def render(catalogue: Catalogue, tests: Mapping[str, list[str]]) -> str:
    reqs = catalogue.requirements
    by_tests = [r for r in reqs.values() if tests.get(r.id)]
    by_runner = [r for r in reqs.values() if not tests.get(r.id) and r.runner]
    by_reason = [r for r in reqs.values() if r.reason]
    gaps = [r for r in reqs.values() if r.gap]
    lines = [
        "# Traceability: each rule and the tests that show it",
        "",
        "<!-- Generated by tools/traceability/generate.py (`nox -s traceability`)"
        " from the test suite and tools/traceability/requirements.toml."
        " Do not edit by hand. -->",
        "",
        "Each row is one server-side rule. **Tests** lists the tests whose docstrings cite",
        "the rule's id (pytest node ids; parameters left out). **Runner** names the checks of",
        "the pinned conformance runner that assert the same rule. Where no test of ours can",
        "show a rule, the row says why; where presa does not meet a rule yet, it says so.",
        "",
        f"{len(reqs)} ids: {len(by_tests)} shown by tests, "
        f"{len(by_runner)} with a runner check and no test of ours, "
        f"{len(by_reason)} with a reason instead of a test, {len(gaps)} not met.",
        "",
    ]
    for group in catalogue.groups:
        members = sorted(
            (r for r in reqs.values() if r.id.startswith(f"{group.prefix}-")),
            key=lambda r: sort_key(r.id),
        )
        lines += [f"## {group.prefix}: {group.title}", "", cell(group.source), ""]
        lines += ["| Id | Kind | Rule | Tests | Runner |", "| --- | --- | --- | --- | --- |"]
        for req in members:
            if tests.get(req.id):
                shown = "<br>".join(test_link(t) for t in tests[req.id])
            elif req.gap:
                shown = f"**Not met:** {cell(req.gap)}"
            else:
                shown = f"*No test:* {cell(req.reason)}"
            runner = "<br>".join(f"`{c}`" for c in req.runner) or "—"
            lines.append(f"| {req.id} | {req.kind} | {cell(req.rule)} | {shown} | {runner} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument(
        "--check", action="store_true", help="compare with docs/traceability.md, write nothing"
    )
    args = parser.parse_args(argv)
    catalogue, problems = load()
    docstrings = collect().docstrings
    tests, coverage = trace(catalogue, docstrings)
    problems += coverage + dangling_links(docstrings)
    text = render(catalogue, tests)
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else None
    if current != text:
        if args.check:
            problems.append(
                "docs/traceability.md is out of date: run `nox -s traceability` and commit it"
            )
        else:
            OUTPUT.write_text(text, encoding="utf-8")
            problems.append(
                "docs/traceability.md was out of date and has been rewritten: review and commit it"
            )
    for problem in problems:
        print(f"traceability: {problem}", file=sys.stderr)
    covered = sum(1 for key in catalogue.requirements if tests.get(key))
    print(f"traceability: {covered} of {len(catalogue.requirements)} ids shown by tests")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
