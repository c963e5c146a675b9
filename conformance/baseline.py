"""The baseline and the judgement: what the runner left, held against what we expect.

Pure: no Trio, no subprocesses, only text and files in, values out. Three
parts, in the order run.py uses them:

* the *catalogue*: the scenarios of one leg (``server`` or ``client``) of a
  requirement set, parsed from the runner's ``list --requirements`` output,
  scored and unscored;
* the *baseline*: ``expected-failures.yml``, in the subset of YAML the runner
  documents for its ``--expected-failures`` option (``server:`` and
  ``client:``, each with ``  - scenario`` or ``  - scenario:check-id`` items);
* the *results* (every ``server-<scenario>-<timestamp>/checks.json`` in the
  runner's output directory, ``<scenario>-<timestamp>/checks.json`` for the
  client leg, where ``auth/…`` scenarios nest a folder deeper) and their
  *judgement*.

presa applies the baseline itself instead of passing it to the runner with
``--expected-failures``: the runner's verdict scores only the 37 required
scenarios and ignores warnings outside a baseline, while presa holds all 50
that run, scored or not, to one rule and counts a WARNING like a FAILURE. The
rule is strict both ways:

* a check whose status is FAILURE or WARNING (or one this file does not know)
  and that the baseline does not list is *unexpected*;
* a baseline entry whose scenario (or scenario:check) produced no FAILURE or
  WARNING is *stale* -- stricter than the runner, which tolerates a listed
  check that is absent or skipped;
* a scenario that should have run but left no ``checks.json`` is *missing*
  (the runner crashed in it, or skipped it), whatever the baseline says.

SKIPPED and INFO never count.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import attrs

# Statuses that never make a check fail; everything else (FAILURE, WARNING or a
# status this harness does not know) has to be listed in the baseline.
HARMLESS = frozenset({"SUCCESS", "SKIPPED", "INFO"})

#: The legs of a requirement set, and the prefix of each one's result directories.
RESULT_PREFIX = {"server": "server-", "client": ""}
TIMESTAMP = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z"
# The runner colours its output.
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class HarnessError(Exception):
    """The harness itself cannot go on (exit status 2)."""


# --------------------------------------------------------------------------- #
# The scenario catalogue
# --------------------------------------------------------------------------- #


@attrs.frozen
class Catalogue:
    """Server scenarios of a requirement set, in the runner's order.

    ``unscored`` maps each scenario that is run but never scored to the reason
    the runner gives (``extension`` or ``pending``).
    """

    scored: tuple[str, ...]
    unscored: dict[str, str]

    @property
    def names(self) -> tuple[str, ...]:
        """All scenarios a full run executes, scored ones first."""
        return self.scored + tuple(self.unscored)

    def kind(self, scenario: str) -> str:
        """``scored`` or the reason the scenario is not scored."""
        return "scored" if scenario in self.scored else self.unscored.get(scenario, "?")


def parse_catalogue(listing: str, leg: str = "server") -> Catalogue:
    """Parse the output of ``conformance list --requirements REVISION`` for one leg.

    The listing has ``Server scenarios`` and ``Client scenarios`` blocks of
    ``  - name`` lines and a ``Run and reported, but never scored:`` block of
    ``  reason (n):`` headings followed by ``    - name [leg]`` lines.
    """
    scored: list[str] = []
    unscored: dict[str, str] = {}
    block = ""
    reason = ""
    for raw in ANSI.sub("", listing).splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            if block == leg:
                block = ""
            continue
        if not line.startswith(" "):
            if stripped.startswith(f"{leg.capitalize()} scenarios"):
                block = leg
            elif stripped.startswith("Run and reported, but never scored"):
                block = "unscored"
            else:
                block = ""
            continue
        if block == leg and stripped.startswith("- "):
            scored.append(stripped[2:].strip())
        elif block == "unscored":
            heading = re.fullmatch(r"(\S+) \(\d+\):", stripped)
            entry = re.fullmatch(r"- (\S+) \[(\w+)\]", stripped)
            if heading:
                reason = heading.group(1)
            elif entry and entry.group(2) == leg:
                unscored[entry.group(1)] = reason
    if not scored:
        raise HarnessError(f"could not read the scenario list from the runner:\n{listing}")
    return Catalogue(tuple(scored), unscored)


# --------------------------------------------------------------------------- #
# The baseline
# --------------------------------------------------------------------------- #


@attrs.frozen
class BaselineEntry:
    """One ``- scenario`` or ``- scenario:check-id`` line of the baseline."""

    scenario: str
    check_id: str | None
    line: int

    def __str__(self) -> str:
        """The entry as written in the file."""
        return self.scenario if self.check_id is None else f"{self.scenario}:{self.check_id}"


def parse_baseline(text: str, source: str = "baseline", leg: str = "server") -> list[BaselineEntry]:
    """Parse the expected-failures file: the entries of one leg's section.

    Only the subset the runner documents is accepted: ``server:`` and
    ``client:`` keys (or ``server: []``) each followed by ``  - name`` or
    ``  - name:check-id`` items, with ``#`` comments and blank lines
    anywhere; the other leg's section is read past. Entries are checked the
    way the runner checks them: no space after the colon, no duplicates, and
    no check entries for a scenario that is listed whole.
    """
    entries: list[BaselineEntry] = []
    section: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if not line.strip():
            continue
        where = f"{source}:{number}"
        key = re.fullmatch(r"([A-Za-z_]+):\s*(\[\s*\])?", line)
        if key:
            section = key.group(1)
            if section not in ("server", "client"):
                raise HarnessError(f"{where}: unknown key {section!r} (expected server or client)")
            continue
        item = re.fullmatch(r"\s+-\s+(.*)", line)
        if not item or section is None:
            raise HarnessError(f"{where}: expected 'server:' or '  - <scenario>[:<check-id>]'")
        if section != leg:
            continue
        value = item.group(1).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        scenario, colon, check_id = value.partition(":")
        if not scenario or (colon and not check_id) or any(c.isspace() for c in value):
            raise HarnessError(
                f"{where}: {value!r} is not '<scenario>' or '<scenario>:<check-id>'"
                " (no spaces, nothing empty around the colon)"
            )
        entries.append(BaselineEntry(scenario, check_id if colon else None, number))
    seen: set[str] = set()
    whole = {e.scenario for e in entries if e.check_id is None}
    for entry in entries:
        if str(entry) in seen:
            raise HarnessError(f"{source}:{entry.line}: {entry} is listed twice")
        seen.add(str(entry))
        if entry.check_id is not None and entry.scenario in whole:
            raise HarnessError(
                f"{source}:{entry.line}: {entry.scenario} is listed whole, so {entry} is redundant"
            )
    return entries


# --------------------------------------------------------------------------- #
# Results and their judgement
# --------------------------------------------------------------------------- #


@attrs.frozen
class Check:
    """The fields of one runner check that the report uses."""

    id: str
    status: str
    name: str = ""
    error_message: str = ""


@attrs.define
class ScenarioResult:
    """What the runner left for one scenario; ``checks`` is None when nothing."""

    scenario: str
    checks: list[Check] | None
    path: Path | None = None
    problem: str = ""


def read_checks(path: Path) -> list[Check]:
    """Read one ``checks.json`` (a JSON array of check objects)."""
    data: object = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise TypeError("not a JSON array")
    checks: list[Check] = []
    for item in cast("list[object]", data):
        if not isinstance(item, dict):
            raise TypeError("an element is not an object")
        fields = cast("dict[str, object]", item)
        checks.append(
            Check(
                id=str(fields.get("id", "?")),
                status=str(fields.get("status", "?")),
                name=str(fields.get("name", "")),
                error_message=str(fields.get("errorMessage") or ""),
            )
        )
    return checks


def collect_results(
    outdir: Path, expected: Sequence[str], leg: str = "server"
) -> dict[str, ScenarioResult]:
    """Map every scenario of ``leg`` to the ``checks.json`` the runner wrote for it.

    Scenarios in ``expected`` without a result directory or without a readable
    ``checks.json`` get ``checks=None`` and a ``problem`` saying why. Result
    directories for other scenarios are reported too.
    """
    pattern = re.compile(rf"^{RESULT_PREFIX[leg]}(?P<scenario>.+)-{TIMESTAMP}$")
    found: dict[str, list[Path]] = {}
    for child in sorted(outdir.rglob("*")) if outdir.is_dir() else []:
        match = pattern.match(child.relative_to(outdir).as_posix())
        if child.is_dir() and match:
            found.setdefault(match.group("scenario"), []).append(child)
    results: dict[str, ScenarioResult] = {}
    for scenario in [*expected, *(s for s in found if s not in expected)]:
        dirs = found.get(scenario, [])
        if not dirs:
            results[scenario] = ScenarioResult(scenario, None, problem="the runner did not run it")
            continue
        if len(dirs) > 1:
            results[scenario] = ScenarioResult(
                scenario, None, dirs[-1], problem=f"{len(dirs)} result directories"
            )
            continue
        checks_file = dirs[0] / "checks.json"
        if not checks_file.is_file():
            results[scenario] = ScenarioResult(
                scenario,
                None,
                dirs[0],
                problem="no checks.json (the scenario crashed or was skipped)",
            )
            continue
        try:
            results[scenario] = ScenarioResult(scenario, read_checks(checks_file), checks_file)
        except (OSError, ValueError, TypeError) as error:
            results[scenario] = ScenarioResult(
                scenario, None, checks_file, problem=f"unreadable checks.json: {error}"
            )
    return results


@attrs.define
class Verdict:
    """The baseline applied to one scenario."""

    result: ScenarioResult
    kind: str
    counts: Counter[str] = attrs.field(factory=Counter)
    unexpected: list[Check] = attrs.field(factory=list)
    expected: list[Check] = attrs.field(factory=list)
    stale: list[BaselineEntry] = attrs.field(factory=list)
    unknown: bool = False

    @property
    def missing(self) -> bool:
        """The scenario should have run but left no usable checks.json."""
        return self.result.checks is None

    @property
    def ok(self) -> bool:
        """Nothing in this scenario disagrees with the baseline."""
        return not (self.missing or self.unexpected or self.stale or self.unknown)


def judge(
    results: dict[str, ScenarioResult],
    baseline: Sequence[BaselineEntry],
    catalogue: Catalogue,
) -> list[Verdict]:
    """Apply the baseline strictly to every scenario in ``results``.

    A failing check (status not SUCCESS, SKIPPED or INFO) is expected when the
    baseline lists its scenario whole or lists ``scenario:check-id``; repeated
    check ids are judged one by one, so one entry covers all of them. An entry
    that covers no failing check is stale. A missing scenario is a problem of
    its own whatever the baseline says, and its entries are not called stale.
    """
    verdicts: list[Verdict] = []
    for scenario, result in results.items():
        verdict = Verdict(result, catalogue.kind(scenario), unknown=scenario not in catalogue.names)
        entries = [e for e in baseline if e.scenario == scenario]
        whole = any(e.check_id is None for e in entries)
        listed = {e.check_id for e in entries if e.check_id is not None}
        if result.checks is not None:
            verdict.counts.update(c.status for c in result.checks)
            failing = [c for c in result.checks if c.status not in HARMLESS]
            for check in failing:
                covered = whole or check.id in listed
                (verdict.expected if covered else verdict.unexpected).append(check)
            failing_ids = {c.id for c in failing}
            for entry in entries:
                if (entry.check_id is None and not failing) or (
                    entry.check_id is not None and entry.check_id not in failing_ids
                ):
                    verdict.stale.append(entry)
        verdicts.append(verdict)
    return verdicts
