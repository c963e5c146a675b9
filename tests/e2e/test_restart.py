"""End to end: tasks outlive their process with ``presa-trio serve --store sqlite:///…``.

Rules of this file: the server is a real child process on a loopback port,
stopped with a real signal and started again on the same file. Every wait
is a bounded loop under ``trio.fail_after``, which fails only if the server
never gets there; nothing asserts how long anything took.
"""

from __future__ import annotations

import os
import pwd
import resource
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest
import trio

from tests.e2e.peers import CONFIRM, PATIENCE, serving
from tests.e2e.serve_process import REPOSITORY
from tests.postgres import UNPRIVILEGED, others_can_reach


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
async def test_parked_and_running_tasks_survive_a_restart(
    tmp_path: Path, stop: signal.Signals
) -> None:
    """presa-defined (tasks that outlive the process; spec-notes §44):
    after the process is stopped, the next one on the same file shows the parked
    task unchanged (same id, status, input requests, timestamps) and completes it
    when answered; the running task is run again and completes."""
    db, log = tmp_path / "tasks.db", tmp_path / "server.log"
    async with serving(f"sqlite:///{db}", log) as (process, peer):
        parked = await peer.call(
            "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"}}
        )
        running = await peer.call(
            "tools/call", {"name": "slow_compute", "arguments": {"seconds": 2, "label": "again"}}
        )
        with trio.fail_after(PATIENCE):
            before = await peer.until(parked["taskId"], "input_required")
        process.send_signal(stop)
        with trio.fail_after(PATIENCE):
            await process.wait()

    async with serving(f"sqlite:///{db}", log) as (_, peer):
        after = await peer.call("tasks/get", {"taskId": parked["taskId"]})
        assert after == before
        assert list(after["inputRequests"]) == ["confirm-delete"]
        await peer.call(
            "tasks/update",
            {"taskId": parked["taskId"], "inputResponses": {"confirm-delete": CONFIRM}},
        )
        with trio.fail_after(PATIENCE):
            done = await peer.until(parked["taskId"], "completed")
            rerun = await peer.until(running["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "Delete confirmed: true"
        assert done["createdAt"] == before["createdAt"]
        assert rerun["result"]["content"][0]["text"] == "Completed again"
    assert f"task {running['taskId']} recovered" in log.read_text()


@pytest.mark.parametrize(
    ("command", "url", "says"),
    [
        ("serve", "redis://localhost", "unknown store URL 'redis://localhost'"),
        ("serve", "sqlite:///", "bad store URL 'sqlite:///'"),
        ("serve", "sqlite:////no/such/dir/t.db", "cannot open sqlite:////no/such/dir/t.db"),
        ("stdio", "sqlite:////no/such/dir/t.db", "cannot open sqlite:////no/such/dir/t.db"),
        ("serve", "postgresql://%zz", 'bad PostgreSQL URL: invalid percent-encoded token: "%zz"'),
        ("stdio", "postgresql://db/?bogus=1", "bad PostgreSQL URL: invalid URI query parameter"),
        (
            "serve",
            "postgresql://presa:s3cret@[::1/tasks",
            'bad PostgreSQL URL: end of string reached when looking for matching "]" in IPv6'
            ' host address in URI: "postgresql://presa:[redacted]@[::1/tasks"',
        ),
    ],
)
async def test_a_store_that_cannot_be_opened_stops_the_start_with_one_line(
    command: str, url: str, says: str
) -> None:
    """presa-defined (operator errors): a bad ``--store`` ends the start with exit
    status 2 and one line naming the URL, never a traceback, nor the URL's password
    (the line goes to a terminal or a service's journal)."""
    with trio.fail_after(PATIENCE):
        finished = await trio.run_process(
            [sys.executable, "-m", "presa_trio", command, "--store", url],
            check=False,
            capture_stdout=True,
            capture_stderr=True,
            stdin=b"",
        )
    lines = finished.stderr.decode().splitlines()
    assert (finished.returncode, len(lines)) == (2, 1), lines
    assert lines[0].startswith(f"presa-trio: error: {says}")
    assert "s3cret" not in lines[0]
    assert finished.stdout == b""


async def test_a_full_file_system_stops_the_start_with_one_line(tmp_path: Path) -> None:
    """presa-defined (operator errors): a server whose files may not grow (a file-size
    limit of 0, RLIMIT_FSIZE) cannot write its pid into the lock file; the start ends
    with exit status 2 and one line naming that file, and leaves no file behind."""
    db = tmp_path / "tasks.db"

    def no_room() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))

    with trio.fail_after(PATIENCE):
        finished = await trio.run_process(
            [
                sys.executable,
                "-m",
                "presa_trio",
                "serve",
                "--port",
                "0",
                "--store",
                f"sqlite:///{db}",
            ],
            check=False,
            capture_stderr=True,
            preexec_fn=no_room,
        )
    lines = finished.stderr.decode().splitlines()
    assert (finished.returncode, lines) == (
        2,
        [f"presa-trio: error: cannot write {db}.lock: File too large"],
    )
    assert os.listdir(tmp_path) == []


async def test_a_read_only_file_is_refused_leaving_nothing_and_served_once_writable() -> None:
    """presa-defined (operator errors; docs/task-stores.md "Faults"): a store file its
    server may not write is refused at start in one line naming it, before SQLite
    makes a log and shared memory beside it in the file's read-only mode (a shared
    memory file left so refused every later start, the file writable again or not).
    Nothing is left beside the file; once the file is writable, the same command
    serves. The server runs as a user that file modes bind (``nobody`` under root)."""
    as_user: list[str] = []
    with tempfile.TemporaryDirectory(prefix="presa-ro-") as directory:
        root = Path(directory)
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if setpriv is None or not others_can_reach(REPOSITORY):
                pytest.skip(f"no setpriv, or {UNPRIVILEGED} cannot reach this checkout")
            owner = pwd.getpwnam(UNPRIVILEGED)
            os.chown(root, owner.pw_uid, owner.pw_gid)
            ids = ["--reuid", str(owner.pw_uid), "--regid", str(owner.pw_gid), "--clear-groups"]
            as_user = [setpriv, *ids]
        db = root / "tasks.db"

        async def start() -> tuple[int, list[str]]:
            """``stdio`` on the file, its input empty: it opens the store, then ends."""
            with trio.fail_after(PATIENCE):
                finished = await trio.run_process(
                    [
                        *as_user,
                        sys.executable,
                        "-m",
                        "presa_trio",
                        "stdio",
                        "--store",
                        f"sqlite:///{db}",
                    ],
                    check=False,
                    capture_stdout=True,
                    capture_stderr=True,
                    stdin=b"",
                    cwd=REPOSITORY,
                )
            errors = [line for line in finished.stderr.decode().splitlines() if "error" in line]
            return finished.returncode, errors

        assert await start() == (0, [])
        db.chmod(0o400)
        assert await start() == (2, [f"presa-trio: error: cannot open {db}: Permission denied"])
        assert sorted(os.listdir(root)) == ["tasks.db", "tasks.db.lock"]
        db.chmod(0o600)
        assert await start() == (0, [])
