"""Commands that build and install: run to completion within a timeout, or fail with their output.

The tests that make a venv of their own (a fresh install of presa, the
comparison's FastMCP) run pip, build and what they installed through
:func:`run`, so a command that hangs on the registries fails the test
instead of holding the run. :func:`nodejs_pin` is the Node.js those that
run a TypeScript peer install.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

#: The checkout, whose noxfile.py holds the pins the sessions install.
REPOSITORY = Path(__file__).resolve().parents[1]
#: Longest a build or an install may take, in seconds.
INSTALL_TIMEOUT = 600


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


def nodejs_pin() -> str:
    """Node.js from PyPI, at the pin noxfile.py's conformance session installs."""
    found = re.search(r'^NODEJS = "(.+)"$', (REPOSITORY / "noxfile.py").read_text(), re.M)
    assert found is not None, "noxfile.py pins no NODEJS"
    return found.group(1)
