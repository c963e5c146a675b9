"""docs/presa-trio.service, the systemd unit docs/deployment.md ships, read as systemd reads it.

Its ``[Service]`` settings (:func:`service_settings`), its command line
(:func:`exec_start`), and what ``systemctl stop`` signals first
(:func:`signalled_on_stop`, systemd.kill(5)), for the tests that hold the unit
to presa's behaviour.
"""

from __future__ import annotations

import shlex
from pathlib import Path

UNIT = Path(__file__).resolve().parents[1] / "docs" / "presa-trio.service"


def service_settings() -> dict[str, str]:
    """The unit's ``[Service]`` section, each setting by its name (the last one given)."""
    settings: dict[str, str] = {}
    section = ""
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            name, _, value = line.partition("=")
            settings[name] = value
    return settings


def exec_start() -> list[str]:
    """The unit's ``ExecStart=``, split into words as systemd splits it."""
    return shlex.split(service_settings()["ExecStart"])


def signalled_on_stop(main: int, group: list[int]) -> list[int]:
    """The processes ``systemctl stop`` sends the unit's ``KillSignal=`` to, by its
    ``KillMode=`` (systemd.kill(5)): the main process alone (``mixed``, ``process``),
    every process of the unit's control group (``control-group``, the default), or
    none."""
    mode = service_settings().get("KillMode", "control-group")
    if mode == "control-group":
        return [main, *group]
    if mode in ("mixed", "process"):
        return [main]
    return []
