"""End to end: a shutdown ends within its grace plus one second, whatever the store does.

Rules of this file: a real ``presa-trio serve`` child process on a
PostgreSQL of this module's own (tests/postgres.py), frozen with SIGSTOP
under running and parked tasks and a worker's write in flight. The bound
is the one ``--shutdown-grace`` promises (docs/tasks.md, shutdown), with
room for the process to start its exit; nothing else is timed.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from tests.e2e.peers import PATIENCE, serving
from tests.postgres import Postgres, temporary_postgresql

GRACE = 3


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[Postgres]:
    """A PostgreSQL for this module alone: freezing it stops nobody else's test."""
    with temporary_postgresql() as server:
        yield server


async def test_shutdown_ends_within_its_grace_plus_one_second_with_the_database_frozen(
    own_postgres: Postgres, tmp_path: Path
) -> None:
    """presa-defined (docs/tasks.md, shutdown): SIGTERM while PostgreSQL is frozen,
    with a task running, a task parked on input and a worker's final write waiting
    for the store, ends the process within ``--shutdown-grace`` plus one second:
    every worker's store call ends with its stop, and the release of the leases is
    bounded."""
    log = tmp_path / "server.log"
    options = ("--shutdown-grace", str(GRACE))
    async with serving(own_postgres.new_database(), log, "30", *options) as (process, peer):
        slow = {"name": "slow_compute", "arguments": {"seconds": 1}}
        await peer.call("tools/call", slow)
        await peer.call("tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}})
        confirm = {"name": "confirm_delete", "arguments": {"filename": "f"}}
        parked = (await peer.call("tools/call", confirm))["taskId"]
        with trio.fail_after(PATIENCE):
            await peer.until(parked, "input_required")
        own_postgres.freeze()
        try:
            await trio.sleep(1.5)  # the first task ends; its write waits for the store
            process.send_signal(signal.SIGTERM)
            with trio.fail_after(GRACE + 1):
                await process.wait()
        finally:
            own_postgres.thaw()
    assert "INFO presa_trio.http.serving: stopped" in log.read_text()
