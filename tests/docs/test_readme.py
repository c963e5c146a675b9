"""The README as a reader follows it: short, its commands runnable as written, its claims true.

Its commands are copied into a shell that has not activated the venv, so
each runs the venv's own ``presa-trio``; none keeps a placeholder. Its
example server is ``examples/hello_server.py`` as written, and lists the
schema the README says it does. (``tests/e2e/test_fresh_install.py`` runs
the README's code in a fresh install; this file checks the rest cheaply.)
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from presa_trio.testing import open_client

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: Past this, details belong in docs/.
MOST_LINES = 300
#: ``presa-trio`` as a command word, not as ``.venv/bin/presa-trio``.
BARE_COMMAND = re.compile(r"(?<![\w./-])presa-trio\b")
#: Upper-case words a reader would have to replace before running a command.
PLACEHOLDER = re.compile(r"\b(URL|FILE|PATH|NAME|TOKEN|SECRET|MODULE|PORT|ID)\b")


def blocks(language: str) -> list[str]:
    """The README's fenced code blocks in ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", README.read_text(), re.M | re.S)


def commands() -> list[str]:
    """Each shell command of the README, its continuation lines joined."""
    joined = "\n".join(blocks("sh")).replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip()]


def test_the_readme_is_at_most_300_lines() -> None:
    """presa-defined: the README stays an introduction; details live in docs/."""
    assert len(README.read_text().splitlines()) <= MOST_LINES


def test_the_readme_opens_with_its_two_commands_serve_and_test() -> None:
    """presa-defined: the first block is the two commands, the first serving the
    address the text after it names, the second running every test with nox."""
    serve, test = blocks("sh")[0].splitlines()
    port = re.search(r"\.venv/bin/presa-trio serve --port (\d+)$", serve)
    assert port is not None, serve
    assert f"`http://127.0.0.1:{port[1]}/mcp`" in README.read_text()
    assert test.endswith(".venv-nox/bin/nox")


def test_every_command_runs_presa_trio_from_the_venv() -> None:
    """presa-defined: a command pasted into a shell without the venv activated
    works: ``presa-trio`` is always ``.venv/bin/presa-trio``, including the
    server a ``--stdio`` client starts after ``--``."""
    bare = [command for command in commands() if BARE_COMMAND.search(command)]
    assert bare == []
    assert any("-- .venv/bin/presa-trio stdio" in command for command in commands())


def test_no_command_keeps_a_placeholder() -> None:
    """presa-defined: every command runs as printed, against the demo the first
    command serves."""
    assert [command for command in commands() if PLACEHOLDER.search(command)] == []


def test_the_readme_runs_its_test_file_by_name() -> None:
    """presa-defined (README, "Testing it"): the reader works at the repository's
    root, where a bare ``pytest`` collects the repository's own ``tests/``
    (pyproject's ``testpaths``, whose conftest needs the ``test`` extra) and
    never ``test_hello.py``: the command the README gives names the file."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]
    text = " ".join(README.read_text().split())
    assert "`test_hello.py` runs with `pytest` (`.venv/bin/pytest test_hello.py`)" in text


def test_the_readme_server_is_the_example_file() -> None:
    """presa-defined: the README's server is ``examples/hello_server.py``, which
    tests/examples/test_examples.py runs."""
    written = (ROOT / "examples" / "hello_server.py").read_text()
    assert blocks("python")[0] == written


async def test_the_readme_server_lists_the_schema_the_readme_quotes() -> None:
    """presa-defined (README, "A server of your own"): every parameter after the
    context is a property, a default is the property's ``default``, a parameter
    without one is required: the ``inputSchema`` is the one the text quotes."""
    text = " ".join(README.read_text().split())
    quoted = re.search(r"`greet` is listed with `(\{.*?\}\})`, `(\w+)` required", text)
    assert quoted is not None
    namespace: dict[str, Any] = {}
    exec(compile(blocks("python")[0], "README.md", "exec"), namespace)
    async with open_client(namespace["server"]) as client:
        (greet,) = await client.list_tools()
    assert greet.input_schema["properties"] == json.loads(quoted[1])
    assert greet.input_schema["required"] == [quoted[2]]
