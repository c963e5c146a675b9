"""End to end: ``presa-trio serve --reload`` serves the new code after a change of its files.

Rules of this file: the server is a real process tree (the reloading parent
and its child) on a free loopback port; every wait is bounded by
``trio.fail_after``.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import trio

from presa_trio.testing import request
from tests.e2e.harness import call_pause, headers
from tests.e2e.peers import PATIENCE
from tests.e2e.serve_process import SERVING, ServeProcess, presa_serve, serving

MODULE = '''
from presa_trio.server import RequestContext, Server

server = Server("reloading", "1.0.0")


@server.tool()
async def version(ctx: RequestContext) -> str:
    """Which version of the code is served."""
    return "{answer}"
'''

#: A module whose ``pause`` tool is in flight as long as a test needs, to serve from a
#: directory of its own (the reloader watches the module's whole directory).
PAUSING_MODULE = (Path(__file__).parent / "pausing_server.py").read_text()


async def answer(url: str) -> str:
    message = request("tools/call", {"name": "version", "arguments": {}})
    async with httpx.AsyncClient(timeout=5) as http:
        response = await http.post(url, json=message, headers=headers(message))
    text: str = response.json()["result"]["content"][0]["text"]
    return text


async def next_url(served: ServeProcess) -> str:
    """The URL of the second child's "serving" line, once it has printed it."""
    return (await served.wait_for_lines(SERVING.pattern, 2))[-1][1]


async def test_a_change_of_the_module_restarts_the_server_on_the_new_code(tmp_path: Path) -> None:
    """presa-defined (``serve --reload``): editing the module's file stops the child
    and starts a new one, which serves the edited tool; the parent serves on."""
    source = tmp_path / "reloading_app.py"
    source.write_text(MODULE.format(answer="one"))
    async with presa_serve("--reload", "reloading_app:server", cwd=tmp_path) as served:
        with trio.fail_after(10):
            first = await answer(served.url)
        source.write_text(MODULE.format(answer="two"))
        later = source.stat().st_mtime_ns + 1_000_000_000
        os.utime(source, ns=(later, later))  # a coarse clock must still see a change
        with trio.fail_after(30):
            await served.wait_for_line("reload: .*reloading_app.py changed")
            second = await answer(await next_url(served))
    assert (first, second) == ("one", "two")


async def test_an_abbreviated_reload_starts_one_reloader(tmp_path: Path) -> None:
    """presa-defined (``serve --reload``): argparse takes ``--rel`` for ``--reload``; the
    child is started without it too, so it serves rather than reloading in turn."""
    (tmp_path / "reloading_app.py").write_text(MODULE.format(answer="one"))
    async with presa_serve("--rel", "reloading_app:server", cwd=tmp_path) as served:
        with trio.fail_after(10):
            assert await answer(served.url) == "one"
    assert served.stderr.count("reload: watching") == 1


async def test_ctrl_c_drains_the_child_once(tmp_path: Path) -> None:
    """presa-defined (``serve --reload``): a terminal's Ctrl-C reaches the reloader and
    its child, in one process group; the child takes its own SIGINT and the reloader's
    request as one request to drain each, not two signals: a call in flight is
    answered, and both exit."""
    (tmp_path / "pausing_app.py").write_text(PAUSING_MODULE)
    paused: list[dict[str, Any]] = []
    command = [sys.executable, "-m", "presa_trio", "serve", "--port", "0", "--reload"]
    command += ["--shutdown-grace", "30", "pausing_app:server"]
    async with serving(command, cwd=tmp_path, own_group=True) as served:
        with trio.fail_after(PATIENCE):
            async with httpx.AsyncClient(timeout=PATIENCE) as http, trio.open_nursery() as nursery:
                running = trio.Event()
                nursery.start_soon(call_pause, http, served.url, 1.0, paused, running)
                await running.wait()
                os.killpg(served.process.pid, signal.SIGINT)
            assert await served.stopped() == 0
    assert paused[-1]["result"]["content"] == [{"type": "text", "text": "rested"}]
    assert "stopping now" not in served.stderr


async def test_a_child_whose_reloader_is_killed_drains_and_exits(tmp_path: Path) -> None:
    """presa-defined (``serve --reload``): a reloader killed with SIGKILL cannot stop its
    child, but the child sees the link to it close, drains and exits, rather than
    serve on the port for ever. The child has exited once the stderr it shares with
    the reloader ends."""
    (tmp_path / "reloading_app.py").write_text(MODULE.format(answer="one"))
    async with presa_serve("--reload", "reloading_app:server", cwd=tmp_path) as served:
        served.process.kill()
        with trio.fail_after(PATIENCE):
            assert await served.stopped() == -signal.SIGKILL
    assert "the parent exited: shutting down gracefully" in served.stderr


async def test_a_second_signal_to_the_reloader_stops_the_child_at_once(tmp_path: Path) -> None:
    """presa-defined (``serve --reload``): SIGTERM to the reloader alone asks its child to
    drain; a second one is passed on too, as the parent of workers passes it on, and
    the child stops at once, its call in flight cut short; the reloader then exits 0,
    no signal left pending to end it by the default action."""
    (tmp_path / "pausing_app.py").write_text(PAUSING_MODULE)
    paused: list[dict[str, Any]] = []
    command = [sys.executable, "-m", "presa_trio", "serve", "--port", "0", "--reload"]
    command += ["--shutdown-grace", str(PATIENCE * 2), "pausing_app:server"]
    async with serving(command, cwd=tmp_path) as served:
        with trio.fail_after(PATIENCE):
            async with httpx.AsyncClient(timeout=PATIENCE) as http, trio.open_nursery() as nursery:
                running = trio.Event()
                nursery.start_soon(call_pause, http, served.url, PATIENCE * 2, paused, running)
                await running.wait()
                served.process.send_signal(signal.SIGTERM)
                await served.wait_for_line("asked by the parent: shutting down gracefully")
                served.process.send_signal(signal.SIGTERM)
            assert await served.stopped() == 0
    assert "asked by the parent again: stopping now" in served.stderr
    assert "rested" not in str(paused)
