"""The store contract suite's fixtures: one ``store`` per kind, every test on each.

A new store joins the suite by adding its kind to :data:`STORE_KINDS` and a
branch to :func:`store_url` that returns a URL for a fresh, empty store
(a new file, a new database); the tests open it with
:func:`presa_trio.tasks.stores.open_store`, as the command line does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import TaskStore

#: Every store the contract is checked on.
STORE_KINDS = ["memory", "sqlite", "postgresql"]
#: The stores whose tasks outlive the object that opened them.
DURABLE = {"sqlite", "postgresql"}


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    kind: str = request.param
    return kind


@pytest.fixture
def store_url(store_kind: str, request: pytest.FixtureRequest) -> str:
    """A URL naming a fresh, empty store of ``store_kind``."""
    if store_kind == "memory":
        return "memory:"
    if store_kind == "sqlite":
        tmp_path_factory: pytest.TempPathFactory = request.getfixturevalue("tmp_path_factory")
        return f"sqlite:///{tmp_path_factory.mktemp('store') / 'tasks.db'}"
    if store_kind == "postgresql":
        # A new database on the run's PostgreSQL (tests/conftest.py).
        url: str = request.getfixturevalue("postgres_url")
        return url
    raise AssertionError(f"no URL for store kind {store_kind}")


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[TaskStore]:
    async with open_store(store_url) as opened:
        yield opened


@pytest.fixture
def durable(store_kind: str) -> None:
    """Skip a test of what survives a reopen on stores that keep nothing."""
    if store_kind not in DURABLE:
        pytest.skip(f"the {store_kind} store keeps nothing once closed")
