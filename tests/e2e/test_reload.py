"""End to end: ``presa-trio serve --reload`` serves the new code after a change of its files.

Rules of this file: the server is a real process tree (the reloading parent
and its child) on a free loopback port; every wait is bounded by
``trio.fail_after``.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import trio

from presa_trio.testing import request
from tests.e2e.harness import headers
from tests.e2e.serve_process import SERVING, ServeProcess, presa_serve

MODULE = '''
from presa_trio.server import RequestContext, Server

server = Server("reloading", "1.0.0")


@server.tool()
async def version(ctx: RequestContext) -> str:
    """Which version of the code is served."""
    return "{answer}"
'''


async def answer(url: str) -> str:
    message = request("tools/call", {"name": "version", "arguments": {}})
    async with httpx.AsyncClient(timeout=5) as http:
        response = await http.post(url, json=message, headers=headers(message))
    text: str = response.json()["result"]["content"][0]["text"]
    return text


async def next_url(served: ServeProcess) -> str:
    """The URL of the second child's "serving" line, once it has printed it."""
    while True:
        urls = [match[1] for line in served.lines if (match := SERVING.search(line))]
        if len(urls) > 1:
            return urls[-1]
        await trio.sleep(0.05)


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
