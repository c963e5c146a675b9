"""A fresh install, as a user makes one: the wheel built and installed in a new venv.

The module builds the wheel with ``python -m build``, creates a venv,
installs the wheel and what the README's testing section says to install,
and writes the README's examples into a project directory exactly as the
README prints them. Then each test runs one thing a user would: the
README's pytest snippet under pytest, ``mypy --strict`` on that user code
(which needs the package's ``py.typed``), ``presa-trio serve`` on the
README's hello server, and the README's Python client against a served demo.

Rules of this file: every external command has a timeout; the venv installs
with constraints.txt, the versions CI runs.
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

import attrs
import httpx
import pytest
import trio

from presa_trio.testing import request
from tests.e2e.harness import headers
from tests.e2e.serve_process import REPOSITORY, presa_serve
from tests.installs import run

README = REPOSITORY / "README.md"
#: The mypy a user type-checks with; the same as the typecheck session's.
MYPY = "mypy==2.4.1"


def readme_block(after: str, language: str = "python") -> str:
    """The first ``language`` code block of the README after the text ``after``."""
    text = README.read_text()
    opening = f"```{language}\n"
    start = text.index(opening, text.index(after)) + len(opening)
    return text[start : text.index("```\n", start)]


@attrs.frozen
class Installed:
    build_output: str
    wheel: Path
    bin: Path
    project: Path


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("fresh")
    # The environment's own setting; it makes setuptools warn that it skips byte-compiling.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    dist = root / "dist"
    build_output = run(
        sys.executable, "-m", "build", "--outdir", dist, REPOSITORY, cwd=root, env=env
    )
    (wheel,) = dist.glob("*.whl")
    run(sys.executable, "-m", "venv", root / "venv", cwd=root)
    bin_dir = root / "venv" / "bin"
    constraints = REPOSITORY / "constraints.txt"
    run(
        bin_dir / "pip",
        "install",
        "-q",
        "-c",
        constraints,
        wheel,
        "pytest",
        "pytest-trio",
        MYPY,
        cwd=root,
    )
    project = root / "project"
    (project / "examples").mkdir(parents=True)
    (project / "examples" / "__init__.py").write_text("")
    (project / "examples" / "hello_server.py").write_text(
        readme_block("`examples/hello_server.py`")
    )
    (project / "examples" / "task_tool.py").write_text(readme_block("`examples/task_tool.py`"))
    (project / "pytest.ini").write_text(readme_block("pytest-trio` and `pytest.ini`", "ini"))
    (project / "test_hello.py").write_text(readme_block("`test_hello.py` runs with `pytest`"))
    return Installed(build_output, wheel, bin_dir, project)


def test_the_wheel_builds_without_warnings_and_carries_license_and_types(
    installed: Installed,
) -> None:
    """presa-defined (packaging): ``python -m build`` warns of nothing (an SPDX
    license string, no deprecated table); the wheel holds LICENSE and py.typed."""
    warnings = [line for line in installed.build_output.splitlines() if "warn" in line.lower()]
    assert warnings == []
    names = zipfile.ZipFile(installed.wheel).namelist()
    assert "presa_trio/py.typed" in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    metadata = next(name for name in names if name.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(installed.wheel).read(metadata).decode()
    assert "License-Expression: MIT" in text
    assert "Requires-Dist: h2" in text
    assert "hypercorn[h2]" not in text


def test_the_readme_pytest_snippet_runs_as_written(installed: Installed) -> None:
    """presa-defined (README, testing): with pytest and pytest-trio installed and
    the README's pytest.ini, its test file passes under plain ``pytest``."""
    output = run(installed.bin / "pytest", "-q", "-p", "no:cacheprovider", cwd=installed.project)
    assert "2 passed" in output


def test_mypy_strict_passes_on_the_readme_code(installed: Installed) -> None:
    """presa-defined (typed for users): ``mypy --strict`` on the README's server and
    test code, against the installed wheel, finds nothing: no missing py.typed, no
    untyped decorator."""
    output = run(
        installed.bin / "mypy", "--strict", "examples", "test_hello.py", cwd=installed.project
    )
    assert "Success: no issues found" in output


async def test_the_installed_wheel_serves_the_readme_hello_server(installed: Installed) -> None:
    """presa-defined (README, a server of your own): ``presa-trio serve
    examples.hello_server:server --port …`` from the fresh venv answers the tool."""
    message = request("tools/call", {"name": "greet", "arguments": {"name": "Ada", "times": 2}})
    python = installed.bin / "python"
    async with presa_serve(
        "examples.hello_server:server", python=python, cwd=installed.project
    ) as served:
        with trio.fail_after(10):
            async with httpx.AsyncClient(timeout=5) as http:
                response = await http.post(served.url, json=message, headers=headers(message))
    text = response.json()["result"]["content"][0]["text"]
    assert text == "Hello, Ada! Hello, Ada!"


async def test_the_readme_python_client_talks_to_the_installed_demo(installed: Installed) -> None:
    """presa-defined (README, connecting clients): the README's SDK snippet, with
    only its URL pointed at the served demo, prints the tool's answer."""
    async with presa_serve(python=installed.bin / "python", cwd=installed.project) as served:
        snippet = readme_block("**Python**, the official SDK").replace(
            "http://127.0.0.1:3000/mcp", served.url
        )
        done = await trio.run_process(
            [sys.executable, "-c", snippet], capture_stdout=True, capture_stderr=True, check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    assert "This is a simple text response for testing." in done.stdout.decode()
