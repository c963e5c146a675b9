#!/usr/bin/env python3
"""Run the conformance runner's client leg on presa's client, judged by our baseline.

The client leg turns the runner around: for each client scenario of the
2026-07-28 requirement set it starts the scenario's own server (and, for
``auth/*``, its own authorization server), runs ``conformance/client.py``
with that server's URL, and scores what the client sent. A full run is::

    node node_modules/@modelcontextprotocol/conformance/dist/index.js \\
        client --command "PYTHON conformance/client.py" --requirements 2026-07-28 -o OUTDIR

which runs every scenario, scored and unscored, in parallel. ``--scenario
NAME`` runs single scenarios instead, one runner call each. The results
(``OUTDIR/<scenario>-<timestamp>/checks.json``) are judged like the server
leg's (run.py, baseline.py), by the ``client:`` section of
``expected-failures.yml``: anything failing that it does not list, an entry
that covers nothing, or a scenario without results makes the exit status 1.

Exit status: 0 when everything matches the baseline, 1 when not, 2 when the
harness could not run (bad options, no node, runner not installed).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import attrs
import trio

if not __package__:
    # Run as a file, so only conformance/ is on the path: add the checkout.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance.baseline import HarnessError, collect_results, judge, parse_baseline
from conformance.report import print_report
from conformance.run import (
    BASELINE,
    EXTENSION,
    HERE,
    REVISION,
    RUNNER_JS,
    find_node,
    in_output_dir,
    load_catalogue,
    run_runner,
)

LEG = "client"
CLIENT = HERE / "client.py"
#: The client's time per scenario: the runner starts every scenario's client at
#: once, so on two cores a Python start-up alone can take the runner's default 30 s.
CLIENT_TIMEOUT_MS = 120_000


@attrs.frozen
class Options:
    """Parsed command-line options."""

    scenarios: list[str]
    keep_output: Path | None
    baseline: Path
    node: str | None
    timeout_ms: int
    runner_timeout: float
    verbose: bool


def parse_options(argv: Sequence[str]) -> Options:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="Exit status: 0 matches the baseline, 1 does not, 2 harness error.",
    )
    parser.add_argument(
        "--scenario",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this client scenario (repeatable); default: the whole requirement set",
    )
    parser.add_argument(
        "--keep-output", type=Path, metavar="DIR", help="write the results to DIR and keep them"
    )
    parser.add_argument("--baseline", type=Path, default=BASELINE, help="expected-failures file")
    parser.add_argument("--node", help="node executable (default: node on PATH)")
    parser.add_argument(
        "--timeout",
        type=int,
        default=CLIENT_TIMEOUT_MS,
        metavar="MS",
        dest="timeout_ms",
        help="the client's time per scenario (default: %(default)s)",
    )
    parser.add_argument(
        "--runner-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="give up on the runner after S seconds (default: 600)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show all runner output")
    namespace = parser.parse_args(argv)
    return Options(
        scenarios=list(dict.fromkeys(namespace.scenario)),
        keep_output=namespace.keep_output,
        baseline=namespace.baseline,
        node=namespace.node,
        timeout_ms=namespace.timeout_ms,
        runner_timeout=namespace.runner_timeout,
        verbose=namespace.verbose,
    )


def client_command(node: str, outdir: Path, scenario: str | None, kind: str) -> list[str]:
    """The runner invocation: the whole requirement set, or one scenario at its wire."""
    command = [node, str(RUNNER_JS), LEG, "--command", f"{sys.executable} {CLIENT}"]
    command += ["-o", str(outdir)]
    if scenario is None:
        return [*command, "--requirements", REVISION]
    command += ["--scenario", scenario]
    return command if kind == EXTENSION else [*command, "--spec-version", REVISION]


async def run(options: Options, outdir: Path) -> int:
    """Run the client leg, judge it, print the report; the exit status."""
    node = await find_node(options.node)
    baseline_text = options.baseline.read_text(encoding="utf-8")
    baseline = parse_baseline(baseline_text, str(options.baseline), LEG)
    catalogue = await load_catalogue(node, LEG)
    unknown = [e for e in baseline if e.scenario not in catalogue.names]
    unknown_names = [str(e) for e in unknown] + [
        s for s in options.scenarios if s not in catalogue.names
    ]
    if unknown_names:
        raise HarnessError(f"not client scenarios of {REVISION}: {', '.join(unknown_names)}")
    expected = options.scenarios or list(catalogue.names)
    log_path = outdir / "runner-output.txt"
    started = time.monotonic()
    timed_out = False
    exit_codes: list[int] = []
    with log_path.open("w", encoding="utf-8") as log:
        with trio.move_on_after(options.runner_timeout) as scope:
            runs: list[str | None] = [*options.scenarios] or [None]
            for scenario in runs:
                kind = catalogue.kind(scenario) if scenario else ""
                command = client_command(node, outdir, scenario, kind)
                command += ["--timeout", str(options.timeout_ms)]
                exit_codes.append(await run_runner(command, log, verbose=options.verbose))
        timed_out = scope.cancelled_caught
    elapsed = time.monotonic() - started
    verdicts = judge(collect_results(outdir, expected, LEG), baseline, catalogue)
    all_ok = print_report(
        verdicts,
        baseline,
        show_all_checks=bool(options.scenarios),
        log_text=log_path.read_text(encoding="utf-8"),
    )
    codes = ", ".join(str(c) for c in exit_codes) or "none"
    print(f"Runner exit status: {codes} (not used; the baseline decides). Took {elapsed:.0f} s.")
    if timed_out:
        print(f"The runner was stopped after {options.runner_timeout:.0f} s.")
        all_ok = False
    print("Client conformance: OK" if all_ok else "Client conformance: NOT OK")
    return 0 if all_ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: prepare the output directory and run under Trio."""
    options = parse_options(sys.argv[1:] if argv is None else argv)
    return in_output_dir(
        options.keep_output,
        "presa-client-conformance-",
        lambda outdir: trio.run(run, options, outdir),
    )


if __name__ == "__main__":
    sys.exit(main())
