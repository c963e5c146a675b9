"""``server/discover``: what this server speaks and offers.

It replaces ``initialize``: no handshake, no session. Capabilities are
declared only for what the server really serves, because the runner checks
that declarations match behaviour (sep-2575-discover-capabilities-match-handlers).

Spec: 2026-07-28 server/discover; schema ``$defs.DiscoverResult``; wire §4.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from presa_trio.server.context import RequestContext
from presa_trio.wire.meta import SUPPORTED_VERSIONS

if TYPE_CHECKING:
    from presa_trio.server.registry import Server


def server_capabilities(server: Server) -> dict[str, Any]:
    """The ``ServerCapabilities`` object, derived from what is registered."""
    capabilities: dict[str, Any] = {"logging": {}}
    if server.tools:
        capabilities["tools"] = {"listChanged": True}
    if server.prompts:
        capabilities["prompts"] = {"listChanged": True}
    if server.resources or server.templates:
        capabilities["resources"] = {"subscribe": True, "listChanged": True}
    if server.prompts or server.templates:
        capabilities["completions"] = {}
    if server.extensions:
        capabilities["extensions"] = {e.id: dict(e.settings) for e in server.extensions}
    return capabilities


async def discover(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """The ``DiscoverResult``; cacheable, so it carries ``ttlMs`` and ``cacheScope``."""
    server = ctx.server
    result: dict[str, Any] = {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": server_capabilities(server),
        **server.cache.to_wire(),
    }
    if server.instructions is not None:
        result["instructions"] = server.instructions
    return result
