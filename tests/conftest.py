"""Shared fixtures: the conformance fixture app, running, and a client for it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from presa_trio.fixtures import build_app
from presa_trio.http.app import McpApp
from tests.mcp_client import McpClient, running


@pytest.fixture
def app() -> McpApp:
    return build_app()


@pytest.fixture
async def client(app: McpApp) -> AsyncIterator[McpClient]:
    async with running(app) as opened:
        yield opened
