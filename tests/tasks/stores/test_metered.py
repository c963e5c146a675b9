"""``--metrics``' store wrapper: how each call is told to have ended.

presa-defined (docs/deployment.md, "Metrics"): a failure is told by its class,
one of the three every store classifies its failures into.
"""

from __future__ import annotations

from typing import cast

import attrs
import pytest

from presa_trio.tasks.stores.base import (
    StoreDefect,
    StoredTask,
    StoreError,
    StoreRefused,
    StoreUnavailable,
    TaskStore,
)
from presa_trio.tasks.stores.metered import MeteredStore


class SchemaMoved(StoreUnavailable):
    """A store's own kind of unavailability, as PostgreSQL's ``SchemaMismatch`` is."""


@attrs.define
class Failing:
    """A store whose ``get`` raises ``error``."""

    error: Exception

    async def get(self, scope: str, task_id: str, now_ms: int) -> StoredTask:
        raise self.error


@pytest.mark.parametrize(
    ("error", "told"),
    [
        (SchemaMoved("another schema version"), "StoreUnavailable"),
        (StoreRefused("U+0000 in jsonb"), "StoreRefused"),
        (StoreDefect("a bug"), "StoreDefect"),
        (StoreError("classified as none of the three"), "unclassified"),
        (RuntimeError("escaped every classification"), "unclassified"),
    ],
)
async def test_a_failure_is_told_by_its_class_whatever_its_subclass(
    error: Exception, told: str
) -> None:
    """A subclass a store raises is told as the class it belongs to, so the outcome
    label takes these few values whatever the store (a store of the user's own
    included)."""
    seen: list[tuple[str, str]] = []
    store = MeteredStore(
        cast("TaskStore", Failing(error)), lambda call, _, ended: seen.append((call, ended))
    )
    with pytest.raises(type(error)):
        await store.get("scope", "task", 0)
    assert seen == [("get", told)]
