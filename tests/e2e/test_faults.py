"""End to end: the faults a real deployment's store meets, on real servers.

Rules of this file: every server is a real ``presa-trio serve`` child process
on a loopback port, on a real store: a SQLite file, or a database on a
PostgreSQL of this module's own (tests/postgres.py), which the tests freeze
(SIGSTOP), make read-only, cut off and restart. Each test asserts what
docs/task-stores.md "Faults" promises: nothing lost, nothing run twice, every
request answered (a retryable -32603 while the store cannot answer) within
its bound, and service back without a restart. A bound is a hang guard
(``trio.fail_after``) a few times the store timeout, never a speed figure.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.e2e.peers import CONFIRM, PATIENCE, Peer, serving
from tests.e2e.serve_process import presa_serve
from tests.postgres import Postgres, temporary_postgresql

#: The store timeout the servers here run with (s), and the bound a request
#: sent while the store cannot answer must be answered within: the timeout,
#: plus room for a loaded machine.
STORE_TIMEOUT = 1.0
BOUND = 3 * STORE_TIMEOUT + 2
OPTIONS = ("--store-timeout", str(STORE_TIMEOUT), "--shutdown-grace", "2")
SKEWED_CLOCK = Path(__file__).with_name("skewed_clock.py")


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[Postgres]:
    """A PostgreSQL for this module alone: freezing it stops nobody else's test."""
    with temporary_postgresql() as server:
        yield server


def retryable(body: dict[str, Any]) -> bool:
    """Whether ``body`` is the store-unavailable answer: -32603, data.retryable."""
    error = body.get("error", {})
    return bool(error.get("code") == -32603 and error.get("data", {}).get("retryable"))


async def answered_within_bound(peer: Peer, method: str, params: dict[str, Any]) -> Any:
    """The response to one request, which must come within :data:`BOUND`."""
    with trio.fail_after(BOUND):
        return await peer.send(method, params)


async def until_served(peer: Peer, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Send until a result comes (the store is back); each answer within its bound."""
    with trio.fail_after(PATIENCE):
        while "result" not in (body := await answered_within_bound(peer, method, params)):
            assert retryable(body), body
            await trio.sleep(0.1)
    result: dict[str, Any] = body["result"]
    return result


def ran_once(log: Path, task_ids: list[str]) -> None:
    """Each task completed exactly once, and no task ran again from the start."""
    text = log.read_text()
    for task_id in task_ids:
        assert text.count(f"task {task_id} completed") == 1, text
        assert f"task {task_id} recovered" not in text, text


def slow(seconds: float) -> dict[str, Any]:
    return {"name": "slow_compute", "arguments": {"seconds": seconds}}


# --- PostgreSQL -----------------------------------------------------------------


async def test_a_frozen_database_answers_retryably_within_the_bound_then_recovers(
    own_postgres: Postgres, tmp_path: Path
) -> None:
    """presa-defined (docs/task-stores.md "Faults": database frozen): while PostgreSQL is
    stopped (SIGSTOP) under running and parked tasks, tasks/get, tasks/update,
    tasks/cancel and creation each get a retryable -32603 within the bound; once it
    goes on, the same server serves again, every running task completes once and
    the parked one takes its answer."""
    log = tmp_path / "server.log"
    async with serving(own_postgres.new_database(), log, "30", *OPTIONS) as (_, peer):
        running = [(await peer.call("tools/call", slow(2)))["taskId"] for _ in range(3)]
        parked = (
            await peer.call(
                "tools/call", {"name": "confirm_delete", "arguments": {"filename": "f"}}
            )
        )["taskId"]
        with trio.fail_after(PATIENCE):
            await peer.until(parked, "input_required")
        doomed = (await peer.call("tools/call", slow(30)))["taskId"]
        own_postgres.freeze()
        try:
            for method, params in [
                ("tasks/get", {"taskId": running[0]}),
                ("tasks/update", {"taskId": parked, "inputResponses": {"confirm-delete": CONFIRM}}),
                ("tasks/cancel", {"taskId": doomed}),
                ("tools/call", slow(0)),
            ]:
                assert retryable(await answered_within_bound(peer, method, params))
            await trio.sleep(2)  # the running tasks end meanwhile: their writes wait
        finally:
            own_postgres.thaw()
        update = {"taskId": parked, "inputResponses": {"confirm-delete": CONFIRM}}
        await until_served(peer, "tasks/update", update)
        await until_served(peer, "tasks/cancel", {"taskId": doomed})
        with trio.fail_after(PATIENCE):
            for task_id in [*running, parked]:
                await peer.until(task_id, "completed")
        assert (await peer.call("tasks/get", {"taskId": doomed}))["status"] == "cancelled"
    ran_once(log, [*running, parked])


async def test_readiness_fails_while_the_database_is_frozen_and_returns_after(
    own_postgres: Postgres, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "Health checks"): while PostgreSQL is frozen,
    ``GET /readyz`` answers 503 naming the store within the bound, and ``/healthz``
    stays 200 (the process serves); once it goes on, ``/readyz`` is 200 again."""
    async with serving(own_postgres.new_database(), tmp_path / "server.log", "30", *OPTIONS) as (
        _,
        peer,
    ):
        base = peer.url.removesuffix("/mcp")
        assert (await peer.http.get(f"{base}/readyz")).status_code == 200
        own_postgres.freeze()
        try:
            with trio.fail_after(BOUND):
                ready = await peer.http.get(f"{base}/readyz")
            assert ready.status_code == 503
            assert ready.text.startswith("the task store does not answer"), ready.text
            assert (await peer.http.get(f"{base}/healthz")).status_code == 200
        finally:
            own_postgres.thaw()
        with trio.fail_after(PATIENCE):
            while True:  # polled, as a load balancer polls it
                if (await peer.http.get(f"{base}/readyz")).status_code == 200:
                    break
                await trio.sleep(0.1)


async def test_shutdown_ends_within_its_grace_while_the_database_is_frozen(
    own_postgres: Postgres, tmp_path: Path
) -> None:
    """presa-defined (docs/task-stores.md "Faults": shutdown): SIGTERM while PostgreSQL is
    frozen and a worker's write waits for it ends the process within its shutdown
    grace plus the store timeout; the next process recovers the task (its lease
    ran out) and runs it to completion."""
    url = own_postgres.new_database()
    log = tmp_path / "server.log"
    async with serving(url, log, "2", *OPTIONS) as (process, peer):
        task_id = (await peer.call("tools/call", slow(1)))["taskId"]
        own_postgres.freeze()
        try:
            await trio.sleep(1.5)  # the job ends; its write waits for the store
            process.send_signal(signal.SIGTERM)
            with trio.fail_after(2 + STORE_TIMEOUT + BOUND):
                await process.wait()
        finally:
            own_postgres.thaw()
    async with serving(url, log, "2", *OPTIONS) as (_, peer):
        with trio.fail_after(PATIENCE):
            await peer.until(task_id, "completed")


async def test_terminated_sessions_a_read_only_spell_and_a_restart_cost_retries_only(
    own_postgres: Postgres, tmp_path: Path
) -> None:
    """presa-defined (docs/task-stores.md "Faults": sessions terminated, read-only,
    restarted): after pg_terminate_backend of every session, a few seconds of
    default_transaction_read_only, and a database restart, each request is a
    result or a retryable -32603 within the bound, the process serves again by
    itself, and a parked task on it still wakes on its answer (its listening
    connection came back)."""
    url = own_postgres.new_database()
    name = url.rsplit("/", 1)[1]
    log = tmp_path / "server.log"
    async with serving(url, log, "30", *OPTIONS) as (_, peer):
        tasks = []
        for fault in ("terminate", "read-only", "restart"):
            async with trio.open_nursery() as nursery:
                if fault == "terminate":
                    own_postgres.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        f" WHERE datname = '{name}'"
                    )
                elif fault == "read-only":
                    read_only(own_postgres, True)
                    nursery.start_soon(read_write_again, own_postgres)
                else:
                    own_postgres.restart()
                created = await until_served(peer, "tools/call", slow(0.5))
            tasks.append(created["taskId"])
        created = await until_served(peer, "tools/call", slow(0.5))
        tasks.append(created["taskId"])
        parked = await until_served(
            peer, "tools/call", {"name": "confirm_delete", "arguments": {"filename": "f"}}
        )
        with trio.fail_after(PATIENCE):
            await peer.until(parked["taskId"], "input_required")
        own_postgres.restart()
        update = {"taskId": parked["taskId"], "inputResponses": {"confirm-delete": CONFIRM}}
        await until_served(peer, "tasks/update", update)
        with trio.fail_after(PATIENCE):
            for task_id in [*tasks, parked["taskId"]]:
                await peer.until(task_id, "completed")
    ran_once(log, [*tasks, parked["taskId"]])


def read_only(server: Postgres, on: bool) -> None:
    """Every transaction read-only from now on (``on``), or not any more."""
    value = "on" if on else "off"
    server.execute(f"ALTER SYSTEM SET default_transaction_read_only = {value}")
    server.execute("SELECT pg_reload_conf()")


async def read_write_again(server: Postgres) -> None:
    await trio.sleep(2)
    read_only(server, False)


async def test_a_process_with_a_clock_ahead_takes_no_live_task(
    own_postgres: Postgres, tmp_path: Path
) -> None:
    """presa-defined (one clock for leases; docs/task-stores.md "Faults": skewed clock):
    with leases of 3 s, a second process whose clock is 7 s ahead claims none of
    the first one's running tasks; each runs once, on the first; the second warns
    at start that its clock is off."""
    url = own_postgres.new_database()
    a_log, b_log = tmp_path / "a.log", tmp_path / "b.log"
    async with serving(url, a_log, "3", *OPTIONS) as (_, a):
        tasks = [(await a.call("tools/call", slow(5)))["taskId"] for _ in range(5)]
        ahead = (str(SKEWED_CLOCK), "7")
        async with serving(url, b_log, "3", *OPTIONS, program=ahead) as (_, b):
            with trio.fail_after(PATIENCE):
                for task_id in tasks:
                    await b.until(task_id, "completed")
    ran_once(a_log, tasks)
    b_text = b_log.read_text()
    assert "this process's clock is +7.0 s from the database's" in b_text
    for task_id in tasks:
        for taken in ("recovered", "cannot run again", "completed"):
            assert f"task {task_id} {taken}" not in b_text, b_text


# --- SQLite -------------------------------------------------------------------------


async def test_a_second_server_on_a_sqlite_file_exits_2_naming_the_first(
    tmp_path: Path,
) -> None:
    """presa-defined (one server per SQLite file; README "Tasks across restarts"): a
    second server on the same file exits with status 2 and one line naming the
    first one's pid; the first serves on; once it has stopped, the file is free."""
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    async with presa_serve("--store", store) as first:
        with trio.fail_after(PATIENCE):
            second = await trio.run_process(
                [sys.executable, "-m", "presa_trio", "serve", "--port", "0", "--store", store],
                capture_stderr=True,
                check=False,
            )
        assert second.returncode == 2
        assert second.stderr.decode().splitlines() == [
            f"presa-trio: error: {tmp_path / 'tasks.db'} is served by another presa process"
            f" (pid {first.process.pid}); one server per file"
        ]
    async with presa_serve("--store", store):
        pass


HOLD_LOCK = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("ROLLBACK")
"""


async def test_a_sqlite_file_locked_by_another_program_delays_no_read(tmp_path: Path) -> None:
    """presa-defined (docs/task-stores.md "Faults": SQLite locked): while another program
    holds the file's write lock, reads are served, and every write (creations,
    several queued at once) gets a retryable -32603 within the bound, however many
    wait; once the lock is let go the same server creates again and the task whose
    result waited completes once."""
    db = tmp_path / "tasks.db"
    log = tmp_path / "server.log"
    async with serving(f"sqlite:///{db}", log, "30", *OPTIONS) as (_, peer):
        done = (await peer.call("tools/call", slow(0)))["taskId"]
        with trio.fail_after(PATIENCE):
            await peer.until(done, "completed")
        waiting = (await peer.call("tools/call", slow(0.5)))["taskId"]
        holder = await trio.lowlevel.open_process(
            [sys.executable, "-c", HOLD_LOCK, str(db), "4"], stdout=subprocess.PIPE
        )
        assert holder.stdout is not None
        assert (await holder.stdout.receive_some()).startswith(b"locked")
        try:
            task = await answered_within_bound(peer, "tasks/get", {"taskId": done})
            assert task["result"]["status"] == "completed"
            answers: list[dict[str, Any]] = []

            async def create() -> None:
                answers.append(await answered_within_bound(peer, "tools/call", slow(0)))

            async with trio.open_nursery() as nursery:
                for _ in range(6):
                    nursery.start_soon(create)
            assert all(retryable(body) for body in answers), answers
        finally:
            await holder.wait()
        created = await until_served(peer, "tools/call", slow(0))
        with trio.fail_after(PATIENCE):
            for task_id in (waiting, created["taskId"]):
                await peer.until(task_id, "completed")
    ran_once(log, [done, waiting])


async def test_a_full_file_system_gives_retryable_errors_then_recovers(tmp_path: Path) -> None:
    """presa-defined (docs/task-stores.md "Faults": full disk): once the server's files may
    not grow (a file-size limit set on the running process, RLIMIT_FSIZE), reads are
    served and creations get a retryable -32603 within the bound; once the limit is
    lifted the same server creates again, and every task completes once."""
    db = tmp_path / "tasks.db"
    log = tmp_path / "server.log"
    async with serving(f"sqlite:///{db}", log, "30", *OPTIONS) as (process, peer):
        before = [(await peer.call("tools/call", slow(0)))["taskId"] for _ in range(10)]
        with trio.fail_after(PATIENCE):
            for task_id in before:
                await peer.until(task_id, "completed")
        # The write-ahead log only grows until a checkpoint: at its size, no commit fits.
        full = os.stat(f"{db}-wal").st_size
        resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (full, resource.RLIM_INFINITY))
        try:
            task = await answered_within_bound(peer, "tasks/get", {"taskId": before[0]})
            assert task["result"]["status"] == "completed"
            assert retryable(await answered_within_bound(peer, "tools/call", slow(0)))
        finally:
            unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
            resource.prlimit(process.pid, resource.RLIMIT_FSIZE, unlimited)
        created = await until_served(peer, "tools/call", slow(0))
        with trio.fail_after(PATIENCE):
            await peer.until(created["taskId"], "completed")
    ran_once(log, [*before, created["taskId"]])


async def test_a_worker_killed_while_the_database_is_frozen_is_started_again_after(
    own_postgres: Postgres,
) -> None:
    """presa-defined (docs/deployment.md, "Many processes"): a worker of ``--workers 2``
    killed while PostgreSQL is frozen cannot open the store when started again (status
    2); being a restart, not a first start, it is started again until the store
    answers, while the other worker serves on: the parent does not stop them all."""
    options = ("--workers", "2", "--store", own_postgres.new_database(), *OPTIONS)
    async with presa_serve(*options) as served:
        with trio.fail_after(PATIENCE):
            first = await served.wait_for_line(r"worker 1 started \(pid (\d+)\)")
            while True:  # each worker logs it once it serves
                if served.stderr.count("presa_trio.http.serving: serving") == 2:
                    break
                await trio.sleep(0.05)
        own_postgres.freeze()
        try:
            os.kill(int(first[1]), signal.SIGKILL)
            with trio.fail_after(PATIENCE):
                await served.wait_for_line(r"worker 1 exited with status 2: starting it again")
        finally:
            own_postgres.thaw()
        base = served.url.removesuffix("/mcp")
        async with httpx.AsyncClient(timeout=10) as http:
            with trio.fail_after(PATIENCE):
                while True:  # polled, as a load balancer polls it
                    if (await http.get(f"{base}/readyz")).status_code == 200:
                        break
                    await trio.sleep(0.1)
        assert served.process.returncode is None
        assert "stopping every worker" not in served.stderr
