"""``server/discover``: what this server speaks and offers.

It replaces ``initialize``: no handshake, no session. Capabilities are
declared only for what the server really serves, because the runner checks
that declarations match behaviour (sep-2575-discover-capabilities-match-handlers).

:data:`CORE_CAPABILITIES` says, for each capability, what is advertised and
when it is offered. The dispatcher asks :func:`offered` the same question
before it dispatches a method of that capability (see
:class:`~presa_trio.server.registry.Method`), at request time: a tool
registered after the server is served is advertised and callable at once,
and a capability is never advertised without its methods, nor the reverse.

Spec: 2026-07-28 server/discover; schema ``$defs.DiscoverResult``,
``$defs.ServerCapabilities``; discover §Response.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from presa_trio.server.context import RequestContext
from presa_trio.server.registry import Server
from presa_trio.wire.meta import SUPPORTED_VERSIONS
from presa_trio.wire.models import JSONObject


@attrs.frozen
class Capability:
    """One server capability: its advertised settings, and when it is offered."""

    name: str
    settings: Mapping[str, Any]
    offered: Callable[[Server], bool]


#: The core's capabilities. ``logging`` has no method of its own: it says the
#: server honours a request's ``logLevel`` (server/utilities/logging).
CORE_CAPABILITIES = {
    capability.name: capability
    for capability in (
        Capability("logging", {}, lambda server: True),
        Capability("tools", {"listChanged": True}, lambda server: bool(server.tools)),
        Capability("prompts", {"listChanged": True}, lambda server: bool(server.prompts)),
        Capability(
            "resources",
            {"subscribe": True, "listChanged": True},
            lambda server: bool(server.resources or server.templates),
        ),
        Capability(
            "completions",
            {},
            lambda server: bool(server.prompts or server.templates or server.completions),
        ),
    )
}


def offered(server: Server, capability: str) -> bool:
    """Whether ``server`` offers the core capability ``capability`` right now."""
    return CORE_CAPABILITIES[capability].offered(server)


def server_capabilities(server: Server) -> JSONObject:
    """The ``ServerCapabilities`` object, derived from what is registered."""
    capabilities: JSONObject = {
        name: dict(capability.settings)
        for name, capability in CORE_CAPABILITIES.items()
        if capability.offered(server)
    }
    if server.extensions:
        capabilities["extensions"] = {e.id: dict(e.settings) for e in server.extensions}
    return capabilities


async def discover(server: Server, ctx: RequestContext, params: JSONObject) -> JSONObject:
    """The ``DiscoverResult``; cacheable, so it carries ``ttlMs`` and ``cacheScope``."""
    result: JSONObject = {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": server_capabilities(server),
        **server.cache.to_wire(),
    }
    if server.instructions is not None:
        result["instructions"] = server.instructions
    return result
