"""docs/presa-trio.service, the systemd unit docs/deployment.md ships, is one systemd
accepts, and its command line one presa accepts."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from presa_trio.cli.main import parse_args
from presa_trio.http.workers import stop_bound
from presa_trio.tasks.stores import url_passwords
from presa_trio.tasks.stores.postgres.database import Database
from presa_trio.tasks.stores.postgres.relay import RELAY_CHANNEL
from presa_trio.tasks.stores.postgres.schema import CHANNEL
from tests.systemd_unit import UNIT, exec_start, service_settings

DEPLOYMENT = Path(__file__).resolve().parents[2] / "docs" / "deployment.md"

#: Where the unit expects presa installed.
INSTALLED = "/opt/presa/venv/bin/presa-trio"


def test_the_unit_s_command_line_is_one_presa_accepts() -> None:
    """presa-defined (docs/deployment.md): every option of ExecStart exists, with a
    value it accepts."""
    program, *words = exec_start()
    assert program == INSTALLED
    args = parse_args(words)
    assert (args.command, args.workers, args.drain_delay, args.metrics) == ("serve", 0, 2.0, True)


def test_systemd_waits_for_the_drain_before_it_kills() -> None:
    """presa-defined (docs/deployment.md, "As a systemd service"): ``TimeoutStopSec=``
    is above the bound by which the parent has every worker drained or killed, so
    systemd's SIGKILL never cuts a drain short."""
    args = parse_args(exec_start()[1:])
    bound = stop_bound(args.drain_delay, args.shutdown_grace, args.store_timeout)
    assert float(service_settings()["TimeoutStopSec"]) > bound


def test_no_secret_is_in_the_unit_s_command_line() -> None:
    """presa-defined (docs/deployment.md, "As a systemd service"): the store URL holds
    no password and no requestState key is given there; both come from the
    environment file, since a command line is readable by every user of the host."""
    args = parse_args(exec_start()[1:])
    assert url_passwords(args.store) == []
    assert args.state_key == []
    assert service_settings()["EnvironmentFile"].endswith(".env")


def test_the_page_gives_the_postgresql_connections_each_worker_holds() -> None:
    """presa-defined (docs/deployment.md, "Many processes"): the connections to
    PostgreSQL each worker holds, which ``--workers N`` multiplies past a default
    ``max_connections`` on a host with many cores, are the number the store opens: its
    two lanes, and one listening on each channel: the tasks' changes, and the server's
    own notifications that the relay carries (``--task-events`` adds a third)."""
    database = Database("postgresql://presa@localhost/presa")
    listening = len((CHANNEL, RELAY_CHANNEL))
    held = database.request_connections + database.background_connections + listening
    page = " ".join(DEPLOYMENT.read_text().split())
    assert f"Each worker holds {held} connections" in page
    assert f"holds {held} × N" in page


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
