"""End to end: ``presa-trio serve --workers N``, real processes on one address.

Rules of this file: the parent is a real child process of the test on a free
loopback port (``--port 0``; its "serving" line names the port), its workers
real processes it starts, on a fresh database of the run's PostgreSQL. Which
worker serves a request is made certain, not hoped for: the other is stopped
(SIGSTOP) while a fresh connection is served, since a stopped process cannot
accept. Every wait is bounded by ``trio.fail_after``; nothing asserts how
long anything took. The parent is ended by SIGTERM (the harness's way), which
drains its workers.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.e2e import second_refused_server
from tests.e2e.harness import PAUSING, call_pause, call_reporting
from tests.e2e.peers import PATIENCE, Peer, listening
from tests.e2e.serve_process import ServeProcess, presa_serve, serving
from tests.postgres import Postgres
from tests.systemd_unit import service_settings, signalled_on_stop

STARTED = r"worker (\d+) started \(pid (\d+)\)"
OPTIONS = ("--shutdown-grace", "2", "--store-timeout", "2")
#: The database password of the test that gives it in the environment.
PASSWORD = "not-on-any-command-line"


@asynccontextmanager
async def peer_of(served: ServeProcess) -> AsyncIterator[Peer]:
    """A client on connections of its own: each opened after the block begins."""
    async with httpx.AsyncClient(timeout=10) as http:
        yield Peer(http, served.url)


async def worker_pids(served: ServeProcess, total: int) -> dict[int, int]:
    """Worker slot -> pid, once ``total`` workers have started and each says it serves."""
    with trio.fail_after(PATIENCE):
        while True:  # the stderr lines so far, read again as more come
            pids = {int(m[1]): int(m[2]) for m in re.finditer(STARTED, served.stderr)}
            serving = served.stderr.count("presa_trio.http.serving: serving")
            if len(pids) >= total and serving >= total:
                return pids
            await trio.sleep(0.05)


@asynccontextmanager
async def stopped(pid: int) -> AsyncIterator[None]:
    """Worker ``pid`` stopped (SIGSTOP) for the block: it accepts nothing meanwhile."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def refusal(cwd: Path, *options: str, env: dict[str, str] | None = None) -> list[str]:
    """``presa-trio serve OPTIONS`` that must refuse to start: its exit status is 2, and
    this is what it wrote to stderr, line by line."""
    command = [sys.executable, "-m", "presa_trio", "serve", *options]
    with trio.fail_after(PATIENCE):
        done = await trio.run_process(command, cwd=cwd, env=env, check=False, capture_stderr=True)
    assert done.returncode == 2
    return done.stderr.decode().splitlines()


@pytest.mark.parametrize("store", ["memory:", "sqlite:///tasks.db"], ids=["memory", "sqlite"])
async def test_more_than_one_worker_is_refused_a_store_they_cannot_share(
    store: str, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "What each store allows"): ``--workers 2`` on
    a store that keeps tasks to one process ends at once with one line saying why,
    and exit status 2, before anything listens."""
    (line,) = await refusal(tmp_path, "--workers", "2", "--store", store)
    assert line.startswith("presa-trio: error: --workers 2: ")
    assert "postgresql://" in line


async def test_reload_is_refused_with_more_than_one_worker(tmp_path: Path) -> None:
    """presa-defined (docs/deployment.md, "Many processes"): ``--reload`` restarts one
    process; with ``--workers 2`` it is one line and exit status 2."""
    assert await refusal(tmp_path, "--workers", "2", "--reload") == [
        "presa-trio: error: --reload restarts one process: use it with --workers 1"
    ]


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--store", "bogus:"], "unknown store URL 'bogus:'"),
        (["--store", "postgresql://presa@127.0.0.1:1/presa", "--state-key", "short"], "16 bytes"),
    ],
    ids=["store-scheme", "state-key"],
)
async def test_a_mistake_the_parent_can_see_is_one_line_before_any_worker(
    tmp_path: Path, options: list[str], says: str
) -> None:
    """presa-defined (command line): a store URL of no known scheme, or a short
    requestState key, given with ``--workers 2``, is one line and exit status 2 from
    the parent, before it listens or starts a worker (not one line per worker)."""
    (line,) = await refusal(tmp_path, "--workers", "2", *options)
    assert line.startswith("presa-trio: error: ")
    assert says in line


@pytest.mark.parametrize(
    ("workers", "store"),
    [("1", "memory:"), ("2", "postgresql://presa@127.0.0.1:1/presa")],
    ids=["one-process", "workers"],
)
async def test_a_metrics_directory_that_is_none_is_one_line(
    tmp_path: Path, workers: str, store: str
) -> None:
    """presa-defined (docs/deployment.md, "Metrics"): ``--metrics`` with
    ``PROMETHEUS_MULTIPROC_DIR`` naming no directory is one line naming it and exit
    status 2, from the one process or from the parent before any worker starts (not a
    traceback, nor workers dying on it)."""
    missing = tmp_path / "missing"
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(missing)}
    (line,) = await refusal(
        tmp_path, "--port", "0", "--metrics", "--workers", workers, "--store", store, env=env
    )
    assert line.startswith("presa-trio: error: --metrics: PROMETHEUS_MULTIPROC_DIR")
    assert str(missing) in line


@pytest.mark.parametrize(
    ("workers", "store"),
    [("1", "memory:"), ("2", "postgresql://presa@127.0.0.1:1/presa")],
    ids=["one-process", "workers"],
)
async def test_a_metrics_directory_no_file_can_be_made_in_is_one_line(
    tmp_path: Path, workers: str, store: str
) -> None:
    """presa-defined (docs/deployment.md, "Metrics"): ``--metrics`` with
    ``PROMETHEUS_MULTIPROC_DIR`` naming a directory in which no file can be made is one
    line saying so and exit status 2, from the one process or from the parent before
    any worker starts: not a worker's, nor a line that blames the port ("cannot listen
    on …: Permission denied"). ``/proc`` stands for a directory the server's user may
    not write in: no file can be made there, by root either, as the tests may run."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": "/proc"}
    (line,) = await refusal(
        tmp_path, "--port", "0", "--metrics", "--workers", workers, "--store", store, env=env
    )
    assert line.startswith("presa-trio: error: --metrics: cannot write in PROMETHEUS_MULTIPROC_DIR")


async def test_metrics_without_prometheus_client_is_one_line_from_the_parent(
    tmp_path: Path,
) -> None:
    """presa-defined (docs/deployment.md, "Metrics"): ``--workers 2 --metrics`` where
    prometheus_client cannot be imported (here a package of that name that fails) is
    one line and exit status 2 from the parent, before any worker starts: not one
    line from each worker."""
    shadow = tmp_path / "prometheus_client"
    shadow.mkdir()
    (shadow / "__init__.py").write_text('raise ImportError("not installed")\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    (line,) = await refusal(
        tmp_path,
        *("--port", "0", "--metrics", "--workers", "2"),
        *("--store", "postgresql://presa@127.0.0.1:1/presa"),
        env=env,
    )
    assert line == (
        "presa-trio: error: --metrics needs prometheus_client: pip install 'presa-trio[metrics]'"
    )


async def test_a_worker_that_cannot_start_stops_them_all(postgres_url: str) -> None:
    """presa-defined (docs/deployment.md, "Many processes"): a worker that exits with a
    usage error (here a target naming no module) is not started again: the parent
    stops every worker and exits 2."""
    command = [
        *("-m", "presa_trio", "serve", "no_such_module:server", "--port", "0"),
        *("--workers", "2", "--store", postgres_url),
    ]
    with trio.fail_after(PATIENCE):
        done = await trio.run_process([sys.executable, *command], check=False, capture_stderr=True)
    assert done.returncode == 2
    assert "cannot start (status 2): stopping every worker" in done.stderr.decode()
    assert "starting it again" not in done.stderr.decode()


async def test_a_store_that_refuses_every_worker_is_one_line_not_one_per_worker() -> None:
    """presa-defined (docs/deployment.md, "Many processes"): with a store that refuses
    every connection, the first worker says why in one line and the parent stops; the
    second worker, started only once the first serves, is never started to say it
    again."""
    command = [
        *("-m", "presa_trio", "serve", "--port", "0", "--workers", "2"),
        *("--store", "postgresql://presa@127.0.0.1:1/presa", "--store-timeout", "2"),
    ]
    with trio.fail_after(PATIENCE):
        done = await trio.run_process([sys.executable, *command], check=False, capture_stderr=True)
    stderr = done.stderr.decode()
    assert done.returncode == 2
    (line,) = [line for line in stderr.splitlines() if line.startswith("presa-trio: error: ")]
    assert "cannot connect to PostgreSQL" in line
    assert "worker 1 cannot start (status 2): stopping every worker" in stderr
    assert "worker 2 started" not in stderr


async def test_a_target_after_a_double_dash_is_served_by_every_worker(postgres_url: str) -> None:
    """presa-defined (command line): ``serve --workers 2 -- MODULE:ATTR`` (``--`` ends
    the options) starts two workers serving the target, each told to serve alone
    before the ``--``, not after it where the words are no options."""
    options = ("--workers", "2", "--store", postgres_url, *OPTIONS)
    async with presa_serve(*options, "--", "examples.hello_server:server") as served:
        await worker_pids(served, 2)
        async with peer_of(served) as peer:
            greeted = await peer.call("tools/call", {"name": "greet", "arguments": {"name": "A"}})
    assert greeted["content"][0]["text"] == "Hello, A!"


async def test_every_worker_serves_one_address_and_sees_every_task(postgres_url: str) -> None:
    """presa-defined (docs/deployment.md, "Many processes"): two workers accept on the
    one port the parent bound; a task created on one is read and cancelled on the
    other."""
    async with presa_serve("--workers", "2", "--store", postgres_url, *OPTIONS) as served:
        pids = await worker_pids(served, 2)
        async with stopped(pids[1]), peer_of(served) as on_second:
            created = await on_second.call(
                "tools/call", {"name": "slow_compute", "arguments": {"seconds": 60}}
            )
        async with stopped(pids[2]), peer_of(served) as on_first:
            task = await on_first.call("tasks/get", {"taskId": created["taskId"]})
            await on_first.call("tasks/cancel", {"taskId": created["taskId"]})
        assert task["status"] == "working"
        async with peer_of(served) as peer:
            with trio.fail_after(PATIENCE):
                await peer.until(created["taskId"], "cancelled")


async def test_a_multi_round_trip_retry_may_land_on_another_worker(postgres_url: str) -> None:
    """Spec-mandated (basic/patterns/mrtr §Basic Workflow: the retry carries the
    requestState back); presa-defined (docs/deployment.md, "Many processes"): the
    workers share one key, so a state sealed by one is taken by the other."""
    params: dict[str, Any] = {"name": "test_input_required_result_request_state"}
    async with presa_serve("--workers", "2", "--store", postgres_url, *OPTIONS) as served:
        pids = await worker_pids(served, 2)
        async with stopped(pids[2]), peer_of(served) as on_first:
            first = await on_first.call("tools/call", params)
        retry = {
            **params,
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
            "requestState": first["requestState"],
        }
        async with stopped(pids[1]), peer_of(served) as on_second:
            second = await on_second.call("tools/call", retry)
    assert first["resultType"] == "input_required"
    assert second["resultType"] == "complete"


async def test_a_killed_worker_is_started_again_and_its_task_recovered(
    postgres_url: str,
) -> None:
    """presa-defined (docs/deployment.md, "Many processes"): kill -9 of the worker
    running a task is logged, the worker is started again, and the task, whose lease
    runs out, is recovered and completes."""
    options = ("--task-lease", "1", *OPTIONS)
    async with presa_serve("--workers", "2", "--store", postgres_url, *options) as served:
        pids = await worker_pids(served, 2)
        async with stopped(pids[2]), peer_of(served) as on_first:
            created = await on_first.call(
                "tools/call", {"name": "slow_compute", "arguments": {"seconds": 2, "label": "x"}}
            )
        os.kill(pids[1], signal.SIGKILL)
        with trio.fail_after(PATIENCE):
            await served.wait_for_line(r"worker 1 exited with status -9: starting it again")
            again = await served.wait_for_line(rf"worker 1 started \(pid (?!{pids[1]}\))(\d+)\)")
        async with peer_of(served) as peer:
            with trio.fail_after(PATIENCE):
                done = await peer.until(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "Completed x"
        assert f"task {created['taskId']} recovered" in served.stderr
        assert alive(int(again[1]))


async def test_a_worker_that_keeps_dying_is_started_again_ever_less_often(
    postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "Many processes"): a worker that dies as it
    starts (here its target exits with status 3 as it is imported) is started again
    after one second, then two, then four: a worker that keeps dying does not cost a
    core a Python start each second. A signal meanwhile ends the parent at once."""
    (tmp_path / "dying.py").write_text("import os\n\nos._exit(3)\n")
    options = ("--workers", "2", "--store", postgres_url, *OPTIONS, "--", "dying:server")
    command = [sys.executable, "-m", "presa_trio", "serve", "--port", "0", *options]
    async with serving(command, pattern=r"serving (http://\S+/mcp) with", cwd=tmp_path) as served:
        with trio.fail_after(PATIENCE):
            for pause in ("1.0", "2.0", "4.0"):
                await served.wait_for_line(
                    rf"worker 1 exited with status 3: starting it again in {pause} s"
                )
        served.process.send_signal(signal.SIGTERM)
        with trio.fail_after(PATIENCE):
            assert await served.stopped() == 0


#: A target that forks a helper as it is imported (a forked process keeps every
#: descriptor the worker has, its end of the link too), then dies before serving.
DIES_LEAVING_A_HELPER = """
import os
import time

helper = os.fork()
if helper == 0:
    os.closerange(0, 3)  # the test's pipe is not held
    time.sleep(600)
    os._exit(0)
with open("helpers", "a") as helpers:
    helpers.write(f"{helper}\\n")
os._exit(3)
"""


def end_helpers(listing: Path) -> None:
    """Kill the processes a test's server started and left, named in ``listing``."""
    for pid in listing.read_text().split() if listing.exists() else []:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)


async def test_a_first_worker_that_dies_before_serving_is_seen_dead_whatever_it_started(
    postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "Many processes"): the first worker is waited
    for until it serves or exits; one that dies first (here as its target is imported)
    is started again, and the others start, even though a process it started lives on
    with its end of the link to the parent."""
    (tmp_path / "dying.py").write_text(DIES_LEAVING_A_HELPER)
    options = ("--workers", "2", "--store", postgres_url, *OPTIONS, "--", "dying:server")
    command = [sys.executable, "-m", "presa_trio", "serve", "--port", "0", *options]
    try:
        async with serving(
            command, pattern=r"serving (http://\S+/mcp) with", cwd=tmp_path
        ) as served:
            with trio.fail_after(PATIENCE):
                await served.wait_for_line(r"worker 1 exited with status 3: starting it again")
                await served.wait_for_line(r"worker 2 started")
            served.process.send_signal(signal.SIGTERM)
            with trio.fail_after(PATIENCE):
                assert await served.process.wait() == 0
    finally:
        end_helpers(tmp_path / "helpers")


#: A target that starts a process as it is imported, and whose tool starts another
#: that outlives the call (``os.system``: each is given every descriptor the worker
#: may pass on).
STARTS_A_HELPER = """
import os

from presa_trio.server import RequestContext, Server

os.system("sleep 600 >/dev/null 2>&1 & echo $! >> helpers")
server = Server("helping", "1.0.0")


@server.tool()
async def helper(ctx: RequestContext) -> str:
    \"\"\"Starts a helper that runs on.\"\"\"
    os.system("sleep 600 >/dev/null 2>&1 & echo $! >> helpers")
    return "started"
"""


async def test_a_tool_s_process_neither_holds_the_port_nor_the_link(
    postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "Draining" and "Many processes"): a process the
    target started as it was imported, or a tool started, still running after the
    server has stopped, holds neither the listening socket (a new connection is
    refused, not queued for no worker) nor the worker's end of its link to the
    parent."""
    (tmp_path / "helping.py").write_text(STARTS_A_HELPER)
    options = ("--workers", "2", "--store", postgres_url, *OPTIONS, "--", "helping:server")
    try:
        async with presa_serve(*options, cwd=tmp_path) as served:
            await worker_pids(served, 2)
            async with peer_of(served) as peer:
                for _ in range(2):  # on either worker, or both
                    await peer.call("tools/call", {"name": "helper", "arguments": {}})
            served.process.send_signal(signal.SIGTERM)
            with trio.fail_after(PATIENCE):
                assert await served.stopped() == 0
        helpers = (tmp_path / "helpers").read_text().split()
        held = [
            os.readlink(f"/proc/{pid}/fd/{fd}")
            for pid in helpers
            for fd in os.listdir(f"/proc/{pid}/fd")
        ]
        host, port = served.url.removeprefix("http://").removesuffix("/mcp").rsplit(":", 1)
        with pytest.raises(OSError, match="all attempts to connect"):
            await trio.open_tcp_stream(host, int(port))
    finally:
        end_helpers(tmp_path / "helpers")
    assert not [name for name in held if name.startswith("socket:")]


#: Two workers on PostgreSQL, with a grace far longer than the one-second call they drain.
DRAINING = ("--workers", "2", "--shutdown-grace", "30")


async def answered_across(served: ServeProcess, stop: Callable[[], Awaitable[None]]) -> int:
    """Run ``stop`` while a one-second call is in flight, and wait for the server to exit;
    its exit status, once the call is known to have been answered."""
    paused: list[dict[str, Any]] = []
    with trio.fail_after(PATIENCE):
        async with httpx.AsyncClient(timeout=PATIENCE) as http, trio.open_nursery() as nursery:
            running = trio.Event()
            nursery.start_soon(call_pause, http, served.url, 1.0, paused, running)
            await running.wait()
            await stop()
        status = await served.stopped()
    assert paused[-1]["result"]["content"] == [{"type": "text", "text": "rested"}]
    return status


async def test_sigterm_to_the_parent_drains_every_worker(postgres_url: str) -> None:
    """presa-defined (docs/deployment.md, "Draining"): SIGTERM to the parent reaches
    every worker once; a call in flight is answered, every worker exits, and the
    parent exits 0 with no worker left behind."""

    async def stop() -> None:
        served.process.send_signal(signal.SIGTERM)

    async with presa_serve(PAUSING, *DRAINING, "--store", postgres_url) as served:
        pids = await worker_pids(served, 2)
        assert await answered_across(served, stop) == 0
    assert not [pid for pid in pids.values() if alive(pid)]
    assert served.stderr.count("SIGTERM received") == 1  # the parent's, not a worker's
    assert served.stderr.count("asked by the parent: shutting down gracefully") == 2
    assert "Traceback" not in served.stderr


async def test_the_unit_s_stop_drains_every_worker(postgres_url: str) -> None:
    """presa-defined (docs/deployment.md, "As a systemd service"): ``systemctl stop`` of
    docs/presa-trio.service signals the processes its ``KillMode=`` names (systemd.kill(5));
    each worker gets the one SIGTERM that drains it, not a second one that stops it at
    once, so a call in flight is answered and the server exits 0."""
    settings = service_settings()

    async def stop() -> None:
        for pid in signalled_on_stop(served.process.pid, list(pids.values())):
            os.kill(pid, signal.Signals[settings["KillSignal"]])

    async with presa_serve(PAUSING, *DRAINING, "--store", postgres_url) as served:
        pids = await worker_pids(served, 2)
        assert await answered_across(served, stop) == 0
    assert "received again" not in served.stderr  # no process heard a second signal


async def test_the_database_password_comes_from_the_environment(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "As a systemd service"): a store URL without
    its password, and the password in ``PGPASSWORD``, as the unit's environment file
    gives it: every worker inherits it and opens the store, and no process's command
    line holds it; without it, the server cannot start."""
    url = await trio.to_thread.run_sync(postgres.password_login, PASSWORD)
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    async with presa_serve("--workers", "2", "--store", url, *OPTIONS) as served:
        pids = [served.process.pid, *(await worker_pids(served, 2)).values()]
        command_lines = [await trio.Path(f"/proc/{pid}/cmdline").read_bytes() for pid in pids]
        async with httpx.AsyncClient(timeout=10) as http:
            ready = await http.get(served.url.replace("/mcp", "/readyz"))
        served.process.send_signal(signal.SIGTERM)
        with trio.fail_after(PATIENCE):
            assert await served.stopped() == 0
    assert ready.status_code == 200  # the store answers
    assert not [line for line in command_lines if PASSWORD.encode() in line]
    monkeypatch.delenv("PGPASSWORD")
    assert "no password supplied" in "\n".join(await refusal(tmp_path, "--store", url))


async def test_workers_signalled_by_a_supervisor_as_well_as_by_the_parent_still_drain(
    postgres_url: str,
) -> None:
    """presa-defined (docs/deployment.md, "Many processes"): a supervisor that signals
    every process of the service (systemd's default ``KillMode=control-group``) gives
    each worker a SIGTERM of its own besides its parent's request: one request to
    drain from each, not a second signal, so a call in flight is still answered.
    Here each worker has taken its own signal before the parent gets its one, the
    order in which a relayed signal would have stopped it at once."""

    async def stop() -> None:
        for pid in pids.values():
            os.kill(pid, signal.SIGTERM)
        await served.wait_for_lines("SIGTERM received: shutting down", len(pids))
        served.process.send_signal(signal.SIGTERM)

    async with presa_serve(PAUSING, *DRAINING, "--store", postgres_url) as served:
        pids = await worker_pids(served, 2)
        assert await answered_across(served, stop) == 0
    assert "stopping now" not in served.stderr


async def test_a_first_signal_while_the_workers_drain_for_one_that_cannot_start_drains(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """presa-defined (docs/deployment.md, "Many processes"): a worker that cannot start
    (status 2 at its first start, here the second one) makes the parent stop every
    worker, which drains; a first SIGTERM then (an operator's, or a supervisor's
    stop) asks them to drain, as it would have had nothing stopped them, rather than
    counting as a second request that stops them at once: a call in flight is
    still answered, and the parent exits 2."""
    monkeypatch.setenv(second_refused_server.DIRECTORY_ENV, str(tmp_path))
    target = "tests.e2e.second_refused_server:make"
    held: list[dict[str, Any]] = []
    async with presa_serve(target, *DRAINING, "--store", postgres_url) as served:
        with trio.fail_after(PATIENCE):
            await served.wait_for_line(r"worker 2 started")
            async with httpx.AsyncClient(timeout=PATIENCE) as http, trio.open_nursery() as nursery:
                running = trio.Event()
                nursery.start_soon(call_reporting, http, served.url, "hold", {}, held, running)
                await running.wait()
                (tmp_path / "refuse").touch()
                await served.wait_for_line("worker 2 cannot start")
                served.process.send_signal(signal.SIGTERM)
                await served.wait_for_line("SIGTERM received")
                (tmp_path / "release").touch()
            status = await served.stopped()
    assert held[-1]["result"]["content"] == [{"type": "text", "text": "released"}]
    assert status == 2
    assert "stopping now" not in served.stderr


async def test_workers_whose_parent_is_killed_drain_and_exit(postgres_url: str) -> None:
    """presa-defined (docs/deployment.md, "Many processes"): a parent killed with
    SIGKILL cannot stop its workers, but each sees the link to it close, drains
    (a call in flight is answered) and exits, rather than serve on unsupervised on a
    port a new parent could not bind. Every worker has exited once the stderr the
    workers share with the parent ends."""

    async def stop() -> None:
        served.process.kill()

    async with presa_serve(PAUSING, *DRAINING, "--store", postgres_url) as served:
        await worker_pids(served, 2)
        assert await answered_across(served, stop) == -signal.SIGKILL
    assert served.stderr.count("the parent exited: shutting down gracefully") == 2


async def test_draining_workers_stop_accepting_as_one_process_does(postgres_url: str) -> None:
    """presa-defined (docs/deployment.md, "Draining" and "Many processes"): once the
    workers stop accepting (here at once: no ``--drain-delay``), a new connection is
    refused while a call is still in flight, as to one process, so a load balancer
    tries another server at once; the parent's copy of the socket does not keep
    taking connections that no worker will accept."""
    paused: list[dict[str, Any]] = []
    options = ("--workers", "2", "--store", postgres_url, "--shutdown-grace", "60")
    async with presa_serve(PAUSING, *options) as served:
        await worker_pids(served, 2)
        host, port = served.url.removeprefix("http://").removesuffix("/mcp").rsplit(":", 1)
        with trio.fail_after(PATIENCE):
            async with httpx.AsyncClient(timeout=PATIENCE) as http, trio.open_nursery() as nursery:
                running = trio.Event()
                nursery.start_soon(call_pause, http, served.url, PATIENCE / 4, paused, running)
                await running.wait()
                served.process.send_signal(signal.SIGTERM)
                while True:  # until a connection is refused
                    try:
                        stream = await trio.open_tcp_stream(host, int(port))
                    except OSError:
                        break
                    await stream.aclose()
                    await trio.sleep(0.05)
                assert "result" not in paused[-1]  # the call still runs
            assert await served.stopped() == 0
    assert paused[-1]["result"]["content"] == [{"type": "text", "text": "rested"}]


async def test_a_hangup_of_the_parent_drains_every_worker_too(postgres_url: str) -> None:
    """presa-defined (docs/deployment.md, "Many processes"): SIGHUP (the parent's
    terminal hung up) is relayed like SIGTERM, since the workers, in a session of
    their own, would not get it: every worker drains and exits, and so does the
    parent, with no worker left serving on."""
    options = ("--workers", "2", "--store", postgres_url, *OPTIONS)
    async with presa_serve(*options) as served:
        pids = await worker_pids(served, 2)
        served.process.send_signal(signal.SIGHUP)
        with trio.fail_after(PATIENCE):
            assert await served.stopped() == 0
    assert not [pid for pid in pids.values() if alive(pid)]
    assert "SIGHUP received: draining 2 workers" in served.stderr
    assert served.stderr.count("asked by the parent: shutting down gracefully") == 2


async def test_metrics_sum_every_worker_and_agree_with_the_access_log(postgres_url: str) -> None:
    """presa-defined (docs/deployment.md, "Metrics"): with ``--metrics``, a scrape
    answered by either worker counts the requests both served, and the count
    matches their access lines, every one of them written once the server stops.
    An exchange is counted as it ends, just after its last byte went out, so a
    scrape right after a response may not count it yet: a worker is stopped
    only once the scrapes count what it served, and each worker is asked until
    it counts all three (or the test's patience runs out)."""
    options = ("--workers", "2", "--metrics", "--store", postgres_url, *OPTIONS)
    greet = {"name": "greet", "arguments": {"name": "Ada"}}
    async with presa_serve(*options) as served:
        pids = await worker_pids(served, 2)
        served_so_far = 0
        for busy, idle in ((1, 2), (2, 1)):
            async with stopped(pids[idle]), peer_of(served) as peer:
                for _ in range(busy):
                    await peer.call("tools/call", greet)
                served_so_far += busy
                await calls_counted(served, peer, served_so_far)
        scraped = []
        for idle in (1, 2):
            async with stopped(pids[idle]), peer_of(served) as peer:
                scraped.append(await calls_counted(served, peer, 3))
        served.process.send_signal(signal.SIGTERM)  # each worker writes its last access lines
        with trio.fail_after(PATIENCE):
            assert await served.stopped() == 0
    logged = [line for line in served.lines if "POST /mcp" in line and "mcp-name=greet" in line]
    assert scraped == [3, 3]
    assert len(logged) == 3


async def test_a_dead_worker_s_gauges_go_from_a_directory_the_operator_gave(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """presa-defined (docs/deployment.md, "Metrics"): with ``PROMETHEUS_MULTIPROC_DIR``
    set by the operator, as with the parent's own directory, the samples of things
    under way of a worker that died are removed before it is started again, so no
    scrape counts its streams as open for ever."""
    samples = tmp_path / "samples"
    samples.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(samples))  # the parent's, inherited
    options = ("--workers", "2", "--metrics", "--store", postgres_url, *OPTIONS)
    async with presa_serve(*options) as served:
        pids = await worker_pids(served, 2)
        async with stopped(pids[2]), peer_of(served) as on_first:
            await on_first.call("tools/list", {})
        gauges = f"gauge_livesum_{pids[1]}.db"
        assert (samples / gauges).exists()
        os.kill(pids[1], signal.SIGKILL)
        with trio.fail_after(PATIENCE):
            await served.wait_for_line(rf"worker 1 started \(pid (?!{pids[1]}\))")
        assert not (samples / gauges).exists()


async def calls_counted(served: ServeProcess, peer: Peer, at_least: int) -> float:
    """The ``tools/call`` answers ``/metrics`` counts, asked until they are ``at_least``
    or the test's patience runs out."""
    counted = 0.0
    with trio.move_on_after(PATIENCE):
        while counted < at_least:
            text = (await peer.http.get(served.url.removesuffix("/mcp") + "/metrics")).text
            counted = sum_of(text, 'mcp_method_name="tools/call"', 'outcome="ok"')
            await trio.sleep(0.05)
    return counted


def sum_of(text: str, *labels: str) -> float:
    """The summed ``_count`` samples of the operations histogram carrying ``labels``."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith("mcp_server_operation_duration_seconds_count{") and all(
            label in line for label in labels
        ):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.mark.parametrize("workers", ["1", "2"], ids=["one-process", "workers"])
async def test_a_directory_the_operator_gave_starts_empty_of_a_previous_run(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    """presa-defined (docs/deployment.md, "Metrics"): with ``PROMETHEUS_MULTIPROC_DIR``
    set by the operator, the samples a previous run left there (its counts; the
    gauges of a lone process killed with SIGKILL, which nobody marked dead) are
    removed as the server starts, by the one process or by the parent, so a new run
    counts neither the old one's requests nor its streams as open."""
    samples = tmp_path / "samples"
    samples.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(samples))
    options = ("--workers", workers, "--metrics", "--store", postgres_url, *OPTIONS)
    greet = {"name": "greet", "arguments": {"name": "Ada"}}
    async with presa_serve(*options) as served, peer_of(served) as peer:
        await peer.call("tools/call", greet)
        assert await calls_counted(served, peer, 1) == 1
        if workers == "1":
            served.process.kill()  # a crash: its gauges stay behind
        else:
            served.process.send_signal(signal.SIGTERM)
        with trio.fail_after(PATIENCE):
            await served.stopped()
    stale = sorted(path.name for path in samples.iterdir())
    assert [name for name in stale if name.startswith("histogram_")]
    async with presa_serve(*options) as served, peer_of(served) as peer:
        if workers == "2":
            await worker_pids(served, 2)
        text = (await peer.http.get(served.url.removesuffix("/mcp") + "/metrics")).text
    assert sum_of(text, 'mcp_method_name="tools/call"') == 0
    assert [name for name in stale if (samples / name).exists()] == []


@pytest.mark.parametrize(
    ("workers", "store"),
    [("1", "sqlite:///{samples}/tasks.db"), ("2", "postgresql://presa@127.0.0.1:1/presa")],
    ids=["one-process", "workers"],
)
async def test_a_directory_the_operator_gave_keeps_every_file_that_is_no_sample(
    tmp_path: Path, workers: str, store: str
) -> None:
    """presa-defined (docs/deployment.md, "Metrics"): a ``PROMETHEUS_MULTIPROC_DIR``
    that holds a ``*.db`` file other than prometheus_client's samples (here the
    server's own ``sqlite:`` store, or another program's file) is refused in one line
    and exit status 2, from the one process or from the parent before any worker
    starts, and the file stays: it is not emptied away with the old samples (a scrape
    would read it as samples, and fail)."""
    samples = tmp_path / "samples"
    samples.mkdir()
    (samples / "histogram_1.db").write_bytes(b"")  # an old run's samples
    others = samples / "tasks.db"
    if workers == "2":
        others.write_bytes(b"another program's file")
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(samples)}
    (line,) = await refusal(
        tmp_path,
        *("--port", "0", "--metrics", "--workers", workers),
        *("--store", store.format(samples=samples)),
        env=env,
    )
    assert line.startswith(f"presa-trio: error: --metrics: PROMETHEUS_MULTIPROC_DIR={samples}")
    assert "tasks.db" in line
    assert others.exists()


async def test_a_file_in_the_samples_directory_that_is_none_makes_a_scrape_503_not_500(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """presa-defined (docs/deployment.md, "Metrics"): a scrape reads every ``*.db`` file
    of ``PROMETHEUS_MULTIPROC_DIR`` as samples; one that is none (put there while the
    server runs, or cut short as its process died) makes the scrape 503 with one line
    and a warning in the log, not a 500 with a traceback, and the server serves on."""
    samples = tmp_path / "samples"
    samples.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(samples))
    async with presa_serve("--metrics", *OPTIONS) as served, peer_of(served) as peer:
        (samples / "counter_1.db").write_bytes(b"no samples here")
        scraped = await peer.http.get(metrics_url(served))
        ready = await peer.http.get(served.url.removesuffix("/mcp") + "/readyz")
    assert (scraped.status_code, scraped.text) == (503, "the metric samples cannot be read\n")
    assert ready.status_code == 200
    assert "cannot read the metric samples" in served.stderr
    assert "Traceback" not in served.stderr


async def test_a_killed_worker_s_counts_stay_and_its_streams_are_not_open(
    postgres_url: str,
) -> None:
    """presa-defined (docs/deployment.md, "Metrics"): a worker killed with SIGKILL
    while a listen stream was open on it: once it is started again, a scrape still
    counts the requests it served, and no longer counts its stream as open."""
    options = ("--workers", "2", "--metrics", "--store", postgres_url, *OPTIONS)
    greet = {"name": "greet", "arguments": {"name": "Ada"}}
    slow = {"name": "slow_compute", "arguments": {"seconds": 600}}
    open_listens = 'mcp_server_requests_in_flight{mcp_method_name="subscriptions/listen"}'
    async with presa_serve(*options) as served:
        pids = await worker_pids(served, 2)
        async with stopped(pids[2]), peer_of(served) as on_first:
            await on_first.call("tools/call", greet)
            task = await on_first.call("tools/call", slow)
            with contextlib.suppress(httpx.HTTPError):  # the stream breaks with its worker
                async with listening(on_first, task["taskId"]) as incoming:
                    await anext(incoming)  # the acknowledgement: the stream is open
                    before = (await on_first.http.get(metrics_url(served))).text
                    os.kill(pids[1], signal.SIGKILL)
        with trio.fail_after(PATIENCE):
            await served.wait_for_line(rf"worker 1 started \(pid (?!{pids[1]}\))")
        async with peer_of(served) as peer:
            assert await calls_counted(served, peer, 2) == 2
            after = (await peer.http.get(metrics_url(served))).text
    assert f"{open_listens} 1.0" in before
    assert f"{open_listens} 1.0" not in after  # 0, or gone with the worker's samples


def metrics_url(served: ServeProcess) -> str:
    return served.url.removesuffix("/mcp") + "/metrics"
