"""A fresh install, as a user makes one: the README's install command in a fresh checkout.

The module builds the wheel with ``python -m build`` (its contents are one
test), copies the checkout as git sees it (tracked and untracked files, none
it ignores) and runs there the README's install command exactly as the
README prints it (:func:`readme_install`), then installs in that venv what
the README's testing section says to install. It writes the README's
examples, and the typed example server, into a project directory of the
user's own, outside the checkout. Then each test runs one thing a user
would: the README's pytest snippet under pytest, ``mypy --strict`` on that
user code (which needs the package's ``py.typed`` and an install mypy can
follow), ``presa-trio serve`` on the README's hello server, and the
README's Python client against a served demo.

Rules of this file: every external command has a timeout; pip installs with
constraints.txt (``PIP_CONSTRAINT``, so the README's command runs as
written), the versions CI runs.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
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

README = REPOSITORY / "README.md"
#: The mypy a user type-checks with; the same as the typecheck session's.
MYPY = "mypy==2.4.1"
INSTALL_TIMEOUT = 600


def readme_block(after: str, language: str = "python") -> str:
    """The first ``language`` code block of the README after the text ``after``."""
    text = README.read_text()
    opening = f"```{language}\n"
    start = text.index(opening, text.index(after)) + len(opening)
    return text[start : text.index("```\n", start)]


def readme_install() -> list[list[str]]:
    """The README's install command, each of its ``&&`` parts, up to the server it starts.

    It is the README's first command line that makes the ``.venv``; the
    part that serves the demo is left out, since it runs until stopped.
    """
    line = next(
        line
        for line in README.read_text().splitlines()
        if line.startswith("python3 -m venv .venv ")
    )
    parts = [shlex.split(part) for part in line.split(" && ")]
    return [part for part in parts if "serve" not in part]


def checkout_copy(into: Path) -> Path:
    """A copy of the repository's files as a fresh clone would have them, plus untracked ones."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPOSITORY,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPOSITORY / name
        if source.is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def run(*command: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command to completion; its output, or a failure showing it."""
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


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
    checkout = checkout_copy(root / "checkout")
    env["PIP_CONSTRAINT"] = str(REPOSITORY / "constraints.txt")
    for command in readme_install():
        run(*command, cwd=checkout, env=env)
    bin_dir = checkout / ".venv" / "bin"
    run(bin_dir / "pip", "install", "-q", "pytest", "pytest-trio", MYPY, cwd=root, env=env)
    project = root / "project"
    (project / "examples").mkdir(parents=True)
    (project / "examples" / "__init__.py").write_text("")
    (project / "examples" / "hello_server.py").write_text(
        readme_block("`examples/hello_server.py`")
    )
    (project / "examples" / "task_tool.py").write_text(readme_block("`examples/task_tool.py`"))
    typed_server = REPOSITORY / "examples" / "typed_server.py"
    shutil.copy2(typed_server, project / "examples" / "typed_server.py")
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
    """presa-defined (typed for users): after exactly the README's install command,
    ``mypy --strict`` on the README's server and test code and on the typed example
    server (dataclasses, datetime, Decimal, UUID, a typed elicitation whose type
    ``assert_type`` checks) finds nothing: no missing module or py.typed, no
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
