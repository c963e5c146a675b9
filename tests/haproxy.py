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
    """docs/haproxy.cfg listening on ``frontend``, its first ``len(backends)`` servers on
    ``backends``.

    Each address is replaced where it stands, and nothing else: a server line
    keeps every option the recipe gives it, and a server line beyond
    ``backends`` is left out. A recipe whose addresses are not where this
    expects them is an error, not a silently different config.
    """
    lines: list[str] = []
    servers = iter(backends)
    binds = 0
    for line in RECIPE.read_text().splitlines(keepends=True):
        words = line.split()
        if words[:1] == ["bind"]:
            binds += 1
            line = line.replace(RECIPE_FRONTEND, f"127.0.0.1:{frontend}")
        elif words[:1] == ["server"]:
            port = next(servers, None)
            if port is None:
                continue
            line = line.replace(words[2], f"127.0.0.1:{port}")
        lines.append(line)
    config = "".join(lines)
    if binds != 1 or RECIPE_FRONTEND in config or next(servers, None) is not None:
        raise ValueError(f"{RECIPE} does not bind {RECIPE_FRONTEND} once, or has too few servers")
    return config
