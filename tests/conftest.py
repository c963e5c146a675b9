"""Shared fixtures: the conformance fixture app, running, and a client for it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import settings

from presa_trio.fixtures import build_app
from presa_trio.http.app import McpApp
from presa_trio.testing import McpClient, running


@pytest.fixture
def app() -> McpApp:
    return build_app()


@pytest.fixture
async def client(app: McpApp) -> AsyncIterator[McpClient]:
    async with running(app) as opened:
        yield opened


# Hypothesis's per-example deadline measures wall-clock time, which swings on a
# loaded shared machine; the properties are about behaviour, never speed.
settings.register_profile("presa", deadline=None)
settings.load_profile("presa")
