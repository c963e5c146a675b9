"""List results: one page, caching hints, and what a cursor means here.

presa never splits a list, so every list result is the only page: it has no
``nextCursor``, and any ``cursor`` a client sends is one presa never issued.

Spec: 2026-07-28 server/utilities/pagination §Error Handling (an invalid
cursor SHOULD be -32602); server/utilities/caching §Cacheable Results, §Interaction with
Pagination (every list result carries ``ttlMs`` and ``cacheScope``, the same
on all pages).
"""

from __future__ import annotations

from typing import Any

from presa_trio.server.registry import Server
from presa_trio.wire.envelope import Encoded
from presa_trio.wire.errors import InvalidParams


def only_page(
    server: Server, params: dict[str, Any], key: str, items: list[Any] | Encoded
) -> dict[str, Any]:
    """``{key: items}`` with the server's caching hints; a cursor is -32602."""
    if params.get("cursor") is not None:
        raise InvalidParams("Invalid cursor: this server never issued one")
    return {key: items, **server.cache.to_wire()}
