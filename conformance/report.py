"""The printed report: one line per scenario, then what needs looking at.

The table counts each scenario's checks by status and marks it ✓ (no failure
or warning), ~ (failures and warnings, all in the baseline) or ✗ (look). Below
it come the details: every check when single scenarios were asked for, then
the unexpected failures and warnings with the runner's messages, the
scenarios without results with the runner's own lines about them (picked out
of the log, since the console only shows progress), and the stale baseline
entries.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from typing import TextIO

from conformance.baseline import ANSI, BaselineEntry, Verdict

# The server leg announces each scenario with ``=== Running scenario: NAME ===``,
# the client leg (which runs them in parallel) with ``Starting scenario: NAME``.
RUNNING_LINE = re.compile(
    r"^(?:=== Running scenario: (?P<scenario>\S+) ===|Starting scenario: (?P<started>\S+))$"
)
# Runner lines that say nothing about why a scenario went wrong.
ROUTINE = ("Running client scenario", "Results saved")


def runner_excerpt(log_text: str, scenario: str, limit: int = 12) -> list[str]:
    """Pick the runner's output about one scenario out of the log.

    A full run announces each scenario with ``=== Running scenario: NAME ===``;
    a single-scenario run is one command, which the log records as ``$ ...``.
    """
    lines: list[str] = []
    current: str | None = None
    for raw in ANSI.sub("", log_text).splitlines():
        line = raw.rstrip()
        announced = RUNNING_LINE.match(line.strip())
        if announced:
            current = announced.group("scenario") or announced.group("started")
        elif line.startswith("$ "):
            words = line.split()
            current = words[words.index("--scenario") + 1] if "--scenario" in words else None
        elif line.startswith("=== SUMMARY"):
            current = None
        elif current == scenario and line.strip() and not line.startswith(ROUTINE):
            lines.append(line)
    return lines[:limit]


def print_report(
    verdicts: Sequence[Verdict],
    baseline: Sequence[BaselineEntry],
    *,
    show_all_checks: bool,
    log_text: str,
    out: TextIO = sys.stdout,
) -> bool:
    """Print the per-scenario table and the details; return True if all is well."""

    def say(text: str = "") -> None:
        print(text, file=out)

    width = max([len(v.result.scenario) for v in verdicts] + [8])
    columns = ("pass", "fail", "warn", "skip", "info")
    statuses = ("SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO")
    say()
    say(f"   {'scenario':<{width}}  {'set':<9}" + "".join(f"{c:>6}" for c in columns) + "  note")
    for verdict in verdicts:
        if not verdict.ok:
            mark = "✗"
        elif verdict.expected:
            mark = "~"
        else:
            mark = "✓"
        if verdict.missing:
            numbers = "".join(f"{'-':>6}" for _ in columns)
        else:
            numbers = "".join(f"{verdict.counts[s]:>6}" for s in statuses)
        other = sum(n for s, n in verdict.counts.items() if s not in statuses)
        notes = []
        if verdict.missing:
            notes.append(verdict.result.problem)
        if verdict.unknown:
            notes.append("not in the requirement set")
        if verdict.unexpected:
            notes.append(f"{len(verdict.unexpected)} unexpected")
        if verdict.expected:
            notes.append(f"{len(verdict.expected)} expected")
        if verdict.stale:
            notes.append(f"{len(verdict.stale)} stale baseline")
        if other:
            notes.append(f"{other} with unknown status")
        name = f"{verdict.result.scenario:<{width}}"
        say(f"{mark}  {name}  {verdict.kind:<9}{numbers}  {', '.join(notes)}")
    say()
    say("✓ no failure or warning   ~ all failures and warnings in the baseline   ✗ look")

    if show_all_checks:
        for verdict in verdicts:
            if verdict.result.checks is None:
                continue
            say()
            say(f"── {verdict.result.scenario} ({verdict.result.path})")
            for check in verdict.result.checks:
                say(f"   {check.status:<8} {check.id}")
                if check.error_message:
                    say(f"            {check.error_message}")

    unexpected = [(v, c) for v in verdicts for c in v.unexpected]
    if unexpected:
        say()
        say(f"Unexpected failures and warnings ({len(unexpected)}), not in the baseline:")
        for verdict, check in unexpected:
            say(f"  ✗ {verdict.result.scenario}:{check.id}  [{check.status}]")
            if check.error_message:
                for text in check.error_message.splitlines() or [""]:
                    say(f"      {text}")
    missing = [v for v in verdicts if v.missing]
    if missing:
        say()
        say(f"Scenarios without results ({len(missing)}):")
        for verdict in missing:
            say(f"  ✗ {verdict.result.scenario}: {verdict.result.problem}")
            for text in runner_excerpt(log_text, verdict.result.scenario):
                say(f"      {text}")
    unknown = [v for v in verdicts if v.unknown]
    if unknown:
        say()
        say("Results for scenarios outside the requirement set:")
        for verdict in unknown:
            say(f"  ✗ {verdict.result.scenario}")
    stale = [(v, e) for v in verdicts for e in v.stale]
    if stale:
        say()
        say(f"Stale baseline entries ({len(stale)}), no failure or warning any more; remove them:")
        for _verdict, entry in stale:
            say(f"  ✗ {entry}  (line {entry.line})")

    clean = sum(1 for v in verdicts if v.ok and not v.expected)
    as_expected = sum(1 for v in verdicts if v.ok and v.expected)
    attention = sum(1 for v in verdicts if not v.ok)
    all_ok = attention == 0
    say()
    say(
        f"Scenarios: {len(verdicts)} judged; {clean} clean, {as_expected} failing as the baseline"
        f" expects, {attention} needing attention."
    )
    say(f"Baseline entries: {len(baseline)}; stale: {len(stale)}.")
    return all_ok
