"""docs/presa-trio.service, the systemd unit docs/deployment.md ships, is one systemd
accepts, and its command line one presa accepts."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from presa_trio.cli.main import parse_args

UNIT = Path(__file__).parents[2] / "docs" / "presa-trio.service"
#: Where the unit expects presa installed.
INSTALLED = "/opt/presa/venv/bin/presa-trio"


def exec_start() -> list[str]:
    (line,) = [line for line in UNIT.read_text().splitlines() if line.startswith("ExecStart=")]
    return shlex.split(line.removeprefix("ExecStart="))


def test_the_unit_s_command_line_is_one_presa_accepts() -> None:
    """presa-defined (docs/deployment.md): every option of ExecStart exists, with a
    value it accepts."""
    program, *words = exec_start()
    assert program == INSTALLED
    args = parse_args(words)
    assert (args.command, args.workers, args.drain_delay, args.metrics) == ("serve", 0, 2.0, True)


def test_systemd_verifies_the_unit(tmp_path: Path) -> None:
    """presa-defined (docs/deployment.md): ``systemd-analyze verify`` accepts the unit,
    with presa's paths pointed at this installation."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed here")
    here = str(Path(sys.executable).parent / "presa-trio")
    unit = UNIT.read_text().replace(INSTALLED, here).replace("/opt/presa", str(tmp_path))
    (tmp_path / "presa-trio.service").write_text(unit)
    done = subprocess.run(
        [analyze, "verify", str(tmp_path / "presa-trio.service")],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
