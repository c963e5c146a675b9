"""``tools/list`` converts the registered tools once, and again whenever they change.

presa-defined: the wire form of the listed tools is kept per server and
reused while the same :class:`~presa_trio.wire.models.Tool` objects are
registered in the same order; a registration, a replacement or a removal
is seen by the very next ``tools/list`` (tools §List Changed Notification; subscriptions).
"""

from __future__ import annotations

from typing import Any

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.testing import McpClient, running
from tests.expect import result_of


def small_server() -> Server:
    server = Server("cache", "1.0.0")

    @server.tool(description="First.")
    async def first(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return "1"

    return server


async def listed(client: McpClient) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = result_of(await client.call("tools/list"))["tools"]
    return tools


async def test_a_tool_registered_after_a_listing_is_in_the_next_listing() -> None:
    server = small_server()
    async with running(McpApp.for_server(server)) as client:
        assert [t["name"] for t in await listed(client)] == ["first"]

        @server.tool(description="Second.")
        async def second(ctx: RequestContext, arguments: dict[str, Any]) -> str:
            return "2"

        assert [t["name"] for t in await listed(client)] == ["first", "second"]


async def test_a_replaced_or_removed_tool_is_seen_by_the_next_listing() -> None:
    server = small_server()
    async with running(McpApp.for_server(server)) as client:
        await listed(client)
        del server.tools["first"]  # a name is registered once: replacing is remove, add

        @server.tool(name="first", description="First, replaced.")
        async def replacement(ctx: RequestContext, arguments: dict[str, Any]) -> str:
            return "1'"

        @server.tool(description="Other.")
        async def other(ctx: RequestContext, arguments: dict[str, Any]) -> str:
            return "o"

        assert [t["description"] for t in await listed(client)] == ["First, replaced.", "Other."]
        del server.tools["first"]
        assert [t["name"] for t in await listed(client)] == ["other"]


async def test_repeated_listings_are_equal() -> None:
    server = small_server()
    async with running(McpApp.for_server(server)) as client:
        assert await listed(client) == await listed(client)
