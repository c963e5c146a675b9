"""A real authorization server in the test process, and an HTTP client for the tests.

The authorization server (:mod:`tests.auth.authorization_server`) runs on
hypercorn at a loopback port the kernel picks. presa runs beside it as a
subprocess with the ``--auth-*`` flags, exactly as a user starts it
(:mod:`tests.auth.harness`); the tests talk to both over loopback HTTP with httpx.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial

import httpx
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from tests.auth.authorization_server import AuthorizationServer


@pytest.fixture
async def issuer(nursery: trio.Nursery) -> AsyncIterator[AuthorizationServer]:
    """The authorization server, listening; its ``issuer`` is its loopback URL."""
    server = AuthorizationServer()
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    shutdown = trio.Event()
    urls: list[str] = await nursery.start(
        partial(serve, server, config, shutdown_trigger=shutdown.wait)
    )
    server.issuer = urls[0]
    yield server
    shutdown.set()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client
