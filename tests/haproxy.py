"""HAProxy for the tests and the bench: the distribution's package, and the recipe.

:func:`installed_haproxy` finds the ``haproxy`` binary, installing the
distribution's package with ``apt-get`` when it is missing and that is
possible (root, a Debian-like system); else it says why not.
:func:`recipe` is docs/haproxy.cfg as it ships, with the addresses it
listens on and forwards to replaced: the file itself is what is tested.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

RECIPE = Path(__file__).resolve().parents[1] / "docs" / "haproxy.cfg"
#: The address the recipe's frontend listens on.
RECIPE_FRONTEND = "127.0.0.1:8080"
INSTALL_TIMEOUT = 600


class HaproxyMissing(Exception):
    """HAProxy is not installed and cannot be; the message says why."""


def installed_haproxy() -> str:
    """The ``haproxy`` binary, installed with apt-get if missing and possible."""
    if shutil.which("haproxy") is None:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            raise HaproxyMissing(
                "haproxy is not installed, and apt-get cannot install it here (not root)"
            )
        install = ["apt-get", "install", "-y", "-q", "haproxy"]
        if apt_get(install).returncode != 0:  # the package lists may be missing or stale
            apt_get(["apt-get", "update", "-q"])
            done = apt_get(install)
            if done.returncode != 0:
                raise HaproxyMissing(
                    f"apt-get install haproxy failed: {done.stderr.decode()[-300:]}"
                )
    found = shutil.which("haproxy")
    if found is None:
        raise HaproxyMissing("apt-get installed haproxy, but it is not on PATH")
    return found


def apt_get(command: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(command, capture_output=True, timeout=INSTALL_TIMEOUT, check=False)


def recipe(frontend: int, backends: Sequence[int]) -> str:
    """docs/haproxy.cfg listening on ``frontend``, its servers (``a``, ``b``…) on ``backends``.

    The recipe's own server lines give way to one line per port, written as
    the recipe writes them; everything else is as it ships.
    """
    lines: list[str] = []
    for line in RECIPE.read_text().splitlines(keepends=True):
        if not line.lstrip().startswith("server "):
            lines.append(line.replace(RECIPE_FRONTEND, f"127.0.0.1:{frontend}"))
        elif not any(kept.lstrip().startswith("server ") for kept in lines):
            indent = line[: len(line) - len(line.lstrip())]
            lines += [
                f"{indent}server {chr(ord('a') + n)} 127.0.0.1:{port} check\n"
                for n, port in enumerate(backends)
            ]
    return "".join(lines)
