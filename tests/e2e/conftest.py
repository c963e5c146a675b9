"""A real hypercorn on a loopback port, and a real HTTP client (httpx) for it.

The server is started with ``nursery.start``: ``hypercorn.trio.serve``
reports the URLs it bound (port 0, so the kernel picks a free port), and the
test begins only once the socket is listening. Shutdown goes through
hypercorn's trigger, so the ASGI lifespan ends as in production.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import partial

import httpx
import pytest
import trio

from presa_trio.demo import build_app, build_server
from presa_trio.http.app import McpApp
from presa_trio.http.serving import serve_http
from tests.e2e.harness import ServeApp, Served, TaskClient, start


@pytest.fixture
async def served(nursery: trio.Nursery) -> AsyncIterator[Served]:
    server, shutdown = await start(build_app(), nursery)
    yield server
    shutdown.set()


@pytest.fixture
async def served_port(nursery: trio.Nursery) -> AsyncIterator[int]:
    """The port of :func:`~presa_trio.http.serving.serve_http` itself, serving the demo in
    this process: hypercorn's connections and protocols as presa mends them."""
    stop = trio.Event()
    serve = partial(serve_http, build_server(), port=0, shutdown_trigger=stop.wait)
    urls: list[str] = await nursery.start(serve)
    yield int(urls[0].rsplit(":", 1)[1].split("/", 1)[0])
    stop.set()


@pytest.fixture
async def serve_app(nursery: trio.Nursery) -> AsyncIterator[ServeApp]:
    """A real hypercorn for each app the test passes; all shut down as the test ends."""
    shutdowns: list[trio.Event] = []

    async def serve_one(app: McpApp) -> tuple[Served, trio.Event]:
        served, shutdown = await start(app, nursery)
        shutdowns.append(shutdown)
        return served, shutdown

    yield serve_one
    for shutdown in shutdowns:
        shutdown.set()


@pytest.fixture
def task_client(http: httpx.AsyncClient) -> Callable[[Served], TaskClient]:
    """Makes a :class:`TaskClient` of a served app."""
    return lambda served: TaskClient(http, served)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5) as client:
        yield client
