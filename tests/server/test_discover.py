"""``server/discover`` and the caching hints of the six cacheable results (discover; caching)."""

from __future__ import annotations

from typing import Any

import pytest

from presa_trio.http.app import McpApp
from presa_trio.server import CacheHints, RequestContext, Server
from presa_trio.testing import McpClient, request, running
from presa_trio.wire.meta import META_SERVER_INFO
from presa_trio.wire.mrtr import Elicitation, InputRequired
from tests.expect import result_of

CACHEABLE = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("prompts/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "test://static-text"}),
]


async def test_discover_names_the_supported_versions_and_the_server(client: McpClient) -> None:
    """Runner-scored (server-stateless/sep-2575-server-implements-discover,
    sep-2575-server-identifies-in-result-meta): supportedVersions, capabilities, and
    identity in ``_meta`` rather than in the body (server/discover)."""
    result = result_of(await client.call("server/discover"))
    assert result["supportedVersions"] == ["2026-07-28"]
    assert result["_meta"][META_SERVER_INFO] == {"name": "presa-trio", "version": "0.1.0"}
    assert "serverInfo" not in result
    assert isinstance(result["instructions"], str)


async def test_discover_declares_what_the_fixture_serves(client: McpClient) -> None:
    """Runner-scored (server-stateless/sep-2575-discover-capabilities-match-handlers,
    sep-2575-server-declares-prompts-in-discover): tools, prompts, resources with
    subscribe and listChanged (delivered by subscriptions/listen), completions."""
    capabilities = result_of(await client.call("server/discover"))["capabilities"]
    assert capabilities["tools"] == {"listChanged": True}
    assert capabilities["prompts"] == {"listChanged": True}
    assert capabilities["resources"] == {"subscribe": True, "listChanged": True}
    assert capabilities["completions"] == {}


async def test_a_bare_server_declares_nothing_it_does_not_serve() -> None:
    """Spec-mandated (tools, prompts, resources §Capabilities: declare a capability only if the
    server serves it)."""
    async with running(McpApp.for_server(Server("bare", "1.0.0"))) as client:
        capabilities = result_of(await client.call("server/discover"))["capabilities"]
    assert not {"tools", "prompts", "resources", "completions"} & set(capabilities)


async def test_every_server_declares_logging() -> None:
    """Spec-mandated (server/utilities/logging §Capabilities: servers that emit log
    message notifications MUST declare ``logging``): any handler may log to a request
    that sets ``logLevel`` (``ctx.log``), so even a server with nothing registered
    declares it."""
    async with running(McpApp.for_server(Server("bare", "1.0.0"))) as client:
        capabilities = result_of(await client.call("server/discover"))["capabilities"]
    assert capabilities["logging"] == {}


async def test_discover_needs_no_client_info_and_no_capabilities(client: McpClient) -> None:
    """Runner-scored (server-stateless/sep-2575-request-meta-client-info-optional):
    the server-stateless client sends capabilities ``{}`` and no clientInfo."""
    result_of(await client.call("server/discover", capabilities={}))


@pytest.mark.parametrize(("method", "params"), CACHEABLE, ids=[m for m, _ in CACHEABLE])
async def test_cacheable_results_carry_ttl_and_scope(
    client: McpClient, method: str, params: dict[str, Any]
) -> None:
    """Runner-scored (caching/sep-2549-*-caching-hints, sep-2549-ttl-non-negative,
    sep-2549-cache-scope-valid): ttlMs an integer >= 0 and cacheScope public or
    private on all six (server/utilities/caching §Cacheable Results)."""
    result = result_of(await client.call(method, params))
    assert isinstance(result["ttlMs"], int)
    assert result["ttlMs"] >= 0
    assert result["cacheScope"] in ("public", "private")


@pytest.mark.parametrize(("method", "params"), CACHEABLE, ids=[m for m, _ in CACHEABLE])
async def test_caching_hints_are_configured_per_server(method: str, params: dict[str, Any]) -> None:
    """presa-defined (registry.CacheHints): one server's hints go on all six results."""
    server = Server("cached", "1.0.0", cache=CacheHints(ttl_ms=60_000, scope="private"))

    @server.tool(description="t")
    async def tool(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return "t"

    @server.prompt(description="p")
    async def prompt(ctx: RequestContext, arguments: dict[str, str]) -> Any:
        return []

    @server.resource("test://static-text", name="r")
    async def resource(ctx: RequestContext) -> str:
        return "r"

    async with running(McpApp.for_server(server)) as client:
        result = result_of(await client.call(method, params))
    assert (result["ttlMs"], result["cacheScope"]) == (60_000, "private")


@pytest.mark.parametrize(
    "hints",
    [{"ttl_ms": -1}, {"ttl_ms": 1.5}, {"ttl_ms": True}, {"scope": "shared"}],
    ids=["negative-ttl", "fractional-ttl", "boolean-ttl", "unknown-scope"],
)
def test_caching_hints_the_wire_cannot_carry_are_refused(hints: dict[str, Any]) -> None:
    """Spec-mandated (server/utilities/caching §Time-to-Live (TTL) Field: servers
    MUST provide a ``ttlMs`` >= 0; schema ``$defs.CacheableResult``: an integer, and
    ``cacheScope`` public or private): the server's developer learns it when the
    server is built, not a client from an invalid result."""
    with pytest.raises(ValueError, match=r"ttl_ms|scope"):
        CacheHints(**hints)


@pytest.mark.parametrize(
    ("method", "params"),
    [("tools/call", {"name": "test_simple_text"}), ("prompts/get", {"name": "test_simple_prompt"})],
)
async def test_results_that_are_not_cacheable_carry_no_hints(
    client: McpClient, method: str, params: dict[str, Any]
) -> None:
    """Spec-mandated (server/utilities/caching: the hints belong to the six
    cacheable results only)."""
    result = result_of(await client.call(method, params))
    assert "ttlMs" not in result
    assert "cacheScope" not in result


async def test_an_input_required_read_carries_no_caching_hints() -> None:
    """Spec-mandated (caching §Cacheable Results: not on input_required results; schema
    $defs.InputRequiredResult has no ttlMs)."""
    server = Server("ask", "1.0.0")

    @server.resource("test://ask", name="ask")
    async def ask(ctx: RequestContext) -> Any:
        return InputRequired({"who": Elicitation("Who?", {"type": "object", "properties": {}})})

    async with running(McpApp.for_server(server)) as client:
        result = result_of(await client.post(request("resources/read", {"uri": "test://ask"})))
    assert result["resultType"] == "input_required"
    assert "ttlMs" not in result
    assert "cacheScope" not in result


async def test_a_read_completed_on_retry_carries_the_servers_caching_hints() -> None:
    """Spec-mandated (caching §Cacheable Results: hints on every complete result of
    resources/read; §Cache Key: such a result MUST NOT be cached, a rule for whoever
    caches; spec-notes §55): the answered retry carries the server's hints, unchanged."""
    server = Server("ask", "1.0.0", cache=CacheHints(ttl_ms=60_000, scope="private"))

    @server.resource("test://ask", name="ask")
    async def ask(ctx: RequestContext) -> Any:
        if "who" not in ctx.input_responses:
            return InputRequired({"who": Elicitation("Who?", {"type": "object"})})
        return "answered"

    answers = {"who": {"action": "decline"}}
    retry = {"uri": "test://ask", "inputResponses": answers}
    async with running(McpApp.for_server(server)) as client:
        result = result_of(await client.post(request("resources/read", retry)))
    assert result["contents"][0]["text"] == "answered"
    assert (result["ttlMs"], result["cacheScope"]) == (60_000, "private")
