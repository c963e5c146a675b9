"""A real authorization server in the test process, and an HTTP client for the tests.

The authorization server (:mod:`tests.auth.authorization_server`) runs on
hypercorn at a loopback port the kernel picks, and so does the endpoint
that asks the client to sign in as a test sets it up
(:mod:`tests.auth.protected_resource`). presa runs beside it as a
subprocess with the ``--auth-*`` flags, exactly as a user starts it
(:mod:`tests.auth.harness`); the tests talk to both over loopback HTTP with httpx.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import TypeVar

import httpx
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from tests.auth.authorization_server import AuthorizationServer
from tests.auth.protected_resource import ProtectedResource

#: An ASGI app the tests serve: the authorization server or the protected endpoint.
App = TypeVar("App", AuthorizationServer, ProtectedResource)


@pytest.fixture
async def issuer(nursery: trio.Nursery) -> AsyncIterator[AuthorizationServer]:
    """The authorization server, listening; its ``issuer`` is its loopback URL."""
    async with listening(nursery, AuthorizationServer()) as (server, url):
        server.issuer = url
        yield server


@pytest.fixture
async def other_issuer(nursery: trio.Nursery) -> AsyncIterator[AuthorizationServer]:
    """A second authorization server, for a resource that moves from one to another."""
    async with listening(nursery, AuthorizationServer()) as (server, url):
        server.issuer = url
        yield server


@pytest.fixture
async def resource(nursery: trio.Nursery) -> AsyncIterator[ProtectedResource]:
    """The endpoint that asks for a sign-in, listening; its ``origin`` is its loopback URL."""
    async with listening(nursery, ProtectedResource()) as (endpoint, url):
        endpoint.origin = url
        yield endpoint


@asynccontextmanager
async def listening(nursery: trio.Nursery, app: App) -> AsyncIterator[tuple[App, str]]:
    """``app`` served by hypercorn on a loopback port while the block runs; it and its URL."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    shutdown = trio.Event()
    urls: list[str] = await nursery.start(
        partial(serve, app, config, shutdown_trigger=shutdown.wait)
    )
    try:
        yield app, urls[0]
    finally:
        shutdown.set()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client
