"""Shared fixtures: the conformance fixture app, running, and a client for it;
a real PostgreSQL for the tests that need one; HAProxy, the distribution's."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import settings

from presa_trio.demo import build_app
from presa_trio.http.app import McpApp
from presa_trio.testing import McpClient, running
from tests.haproxy import HaproxyMissing, installed_haproxy
from tests.postgres import Postgres, temporary_postgresql


@pytest.fixture
def app() -> McpApp:
    return build_app()


@pytest.fixture
async def client(app: McpApp) -> AsyncIterator[McpClient]:
    async with running(app) as opened:
        yield opened


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One PostgreSQL for the whole run, started on first use and removed at the end."""
    with temporary_postgresql() as server:
        yield server


@pytest.fixture
def postgres_url(postgres: Postgres) -> str:
    """The URL of a fresh, empty database on the shared server."""
    return postgres.new_database()


# Hypothesis's per-example deadline measures wall-clock time, which swings on a
# loaded shared machine; the properties are about behaviour, never speed.
settings.register_profile("presa", deadline=None)
settings.load_profile("presa")


@pytest.fixture(scope="session")
def haproxy() -> str:
    """The ``haproxy`` command, installed from the distribution's packages if missing;
    a test that needs it is skipped, saying why, only where it cannot be had."""
    try:
        return installed_haproxy()
    except HaproxyMissing as missing:
        pytest.skip(str(missing))
