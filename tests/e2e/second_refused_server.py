"""A user's server whose second worker cannot start: ``presa-trio serve --workers 2
tests.e2e.second_refused_server:make``, with ``$SECOND_REFUSED_DIR`` naming a
directory the test holds.

``make``, the factory each worker calls, gives the server to the first process
that calls it; any later one waits until the test makes the file ``refuse``
there, then gives no server: a usage error (status 2) at that worker's first
start. ``hold`` reports progress, then waits until the test makes the file
``release``, and answers.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import trio

from presa_trio.server import RequestContext, Server

DIRECTORY_ENV = "SECOND_REFUSED_DIR"
#: How often a wait looks for the test's file, in seconds.
LOOK_S = 0.05

server = Server("second-refused", "1.0.0")


@server.tool(description="Reports progress, then waits for the test's release")
async def hold(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    await ctx.report_progress(0, total=1)
    release = trio.Path(os.environ[DIRECTORY_ENV]) / "release"
    while not await release.exists():  # noqa: ASYNC110 - the test is another process
        await trio.sleep(LOOK_S)
    return "released"


def make() -> Server | None:
    directory = Path(os.environ[DIRECTORY_ENV])
    try:
        (directory / "first").touch(exist_ok=False)
    except FileExistsError:  # not the first process: refused, once the test says so
        while not (directory / "refuse").exists():
            time.sleep(LOOK_S)
        return None
    return server
