"""End to end: a server whose task runner cannot start never serves (it does not answer 503).

Rules of this file: :func:`~presa_trio.http.serving.serve_http` itself, on a
free loopback port, in this process; the store is a real memory store whose
watch cannot start.
"""

from __future__ import annotations

import pytest
import trio

from presa_trio.http.serving import serve_http
from presa_trio.server import Server
from presa_trio.server.faults import ServerFailed
from presa_trio.tasks import TaskRunner, TasksExtension
from tests.e2e.failing_server import UnwatchableStore


async def test_a_runner_that_cannot_start_fails_the_startup_in_one_line() -> None:
    """presa-defined (docs/tasks.md, the failure policy): a task runner that cannot
    start (its store cannot be watched) fails the server's startup: serve_http raises
    ServerFailed with one line, instead of serving without its runtime."""
    server = Server("unwatchable", "1.0.0")
    server.add_extension(TasksExtension(TaskRunner(UnwatchableStore())))
    with trio.fail_after(10), pytest.raises(ServerFailed) as failed:
        await serve_http(server, port=0, shutdown_trigger=trio.sleep_forever)
    assert str(failed.value) == "StoreUnavailable: test: no announcements today"
