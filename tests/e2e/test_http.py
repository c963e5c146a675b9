"""End to end: the fixture server under a real hypercorn, spoken to over loopback.

What in-process tests cannot show: real sockets, HTTP/1.1 framing by h11,
header names in any case, concurrent connections, and a client that really
goes away.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio

from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.testing import meta, request
from presa_trio.wire.errors import METHOD_NOT_FOUND
from presa_trio.wire.meta import META_SUBSCRIPTION_ID
from tests.e2e.harness import ServeApp, Served, headers, start
from tests.e2e.raw_http import H11Client, wire_headers
from tests.streams import sse_messages


async def post(http: httpx.AsyncClient, served: Served, message: Any, **extra: str) -> Any:
    return await http.post(served.url, json=message, headers=headers(message, **extra))


async def test_discover_over_real_http(served: Served, http: httpx.AsyncClient) -> None:
    """Runner-scored (server-stateless/sep-2575-server-implements-discover), over a socket."""
    with trio.fail_after(5):
        response = await post(http, served, request("server/discover"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["supportedVersions"] == ["2026-07-28"]


async def test_progress_streams_before_the_result(served: Served, http: httpx.AsyncClient) -> None:
    """Runner-scored (tools-call-with-progress/tools-call-with-progress): progress events
    on the response stream, then the result, then the stream ends."""
    message = request(
        "tools/call", {"name": "test_tool_with_progress", "_meta": meta(progressToken="p")}
    )
    with trio.fail_after(5):
        async with http.stream("POST", served.url, json=message, headers=headers(message)) as r:
            assert r.headers["content-type"] == "text/event-stream"
            received = [m async for m in sse_messages(r)]
    assert [m.get("method") for m in received] == ["notifications/progress"] * 3 + [None]
    assert received[-1]["result"]["resultType"] == "complete"


async def test_a_first_notification_its_own_timeout_cancels_leaves_the_answer_plain_json(
    serve_app: ServeApp, http: httpx.AsyncClient
) -> None:
    """Spec-mandated (streamable-http §Sending Messages: one JSON body or an SSE stream;
    H-30): a tool whose own timeout has passed when it sends its first progress
    notification gets the cancel there, and its result is still answered, 200 with
    plain JSON, never an event of a stream whose head was never written (a 500)."""
    server = Server("late", "1.0.0")

    @server.tool(description="Reports progress after its own deadline, then answers.")
    async def late(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        with trio.CancelScope() as deadline:
            deadline.cancel()  # as a timeout that passed while the tool computed
            await ctx.report_progress(1, total=2)
        return "answered"

    served, _ = await serve_app(McpApp.for_server(server))
    message = request("tools/call", {"name": "late", "_meta": meta(progressToken="p")})
    with trio.fail_after(5):
        response = await post(http, served, message)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["content"][0]["text"] == "answered"


async def test_a_listen_stream_gets_changes_and_ends_when_the_client_leaves(
    served: Served, http: httpx.AsyncClient
) -> None:
    """Runner-scored (server-stateless/sep-2575-server-sends-subscription-ack,
    sep-2575-server-tags-subscription-id): the ack, then the trigger's change from
    another connection; when the client closes the stream the server notices and its
    call returns, leaving the subscription (subscriptions §Cancellation; runner:
    server-stateless)."""
    listen = request(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, request_id=17
    )
    with trio.fail_after(10):
        async with (
            httpx.AsyncClient(timeout=5) as listener,
            listener.stream("POST", served.url, json=listen, headers=headers(listen)) as r,
        ):
            messages = sse_messages(r)
            ack = await anext(messages)
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            trigger = request("tools/call", {"name": "test_trigger_tool_change"})
            assert (await post(http, served, trigger)).status_code == 200
            change = await anext(messages)
            assert change["method"] == "notifications/tools/list_changed"
            assert change["params"]["_meta"] == {META_SUBSCRIPTION_ID: 17}
        await served.tracked.wait_idle()


async def test_concurrent_streams_are_all_answered(served: Served, http: httpx.AsyncClient) -> None:
    """Runner-scored (server-sse-multiple-streams/server-accepts-multiple-post-streams):
    three concurrent requests on separate connections, all 2xx."""
    statuses: list[int] = []

    async def list_tools(request_id: int) -> None:
        message = request("tools/list", request_id=request_id, capabilities={})
        statuses.append((await post(http, served, message)).status_code)

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            for request_id in (1000, 1001, 1002):
                nursery.start_soon(list_tools, request_id)
    assert statuses == [200, 200, 200]


async def test_header_names_are_case_insensitive(served: Served, http: httpx.AsyncClient) -> None:
    """Runner-scored (http-header-validation/sep-2243-header-name-case-insensitive,
    unscored; H-21): ``MCP-METHOD`` and ``mcp-method`` are the same header on the wire."""
    message = request("tools/list")
    sent = {k.upper(): v for k, v in headers(message).items()}
    with trio.fail_after(5):
        response = await http.post(served.url, json=message, headers=sent)
    assert response.status_code == 200


async def test_dns_rebinding_is_refused_over_real_http(
    served: Served, http: httpx.AsyncClient
) -> None:
    """Runner-scored (dns-rebinding-protection/localhost-host-rebinding-rejected,
    localhost-host-valid-accepted; H-02, H-03, H-04): foreign Host 421, foreign Origin 403, loopback
    accepted."""
    message = request("server/discover")
    port = served.url.split(":")[2].split("/")[0]
    with trio.fail_after(5):
        evil_host = await post(http, served, message, host="evil.example.com")
        evil_origin = await post(http, served, message, origin="http://evil.example.com")
        good = await post(
            http, served, message, host=f"localhost:{port}", origin=f"http://localhost:{port}"
        )
    assert (evil_host.status_code, evil_origin.status_code, good.status_code) == (421, 403, 200)


async def test_an_oversized_body_is_413_and_the_server_keeps_serving(
    nursery: trio.Nursery, http: httpx.AsyncClient
) -> None:
    """Spec-mandated (spec-notes §11; H-08): a body above the configured limit is 413,
    declared or streamed without a length."""
    small, shutdown = await start(McpApp.for_server(build_server(), max_body=4096), nursery)
    message = request("server/discover", {"pad": "x" * 10_000})
    body = json.dumps(message).encode()

    async def chunks() -> AsyncIterator[bytes]:
        for start_at in range(0, len(body), 1024):
            yield body[start_at : start_at + 1024]

    with trio.fail_after(5):
        declared = await http.post(small.url, content=body, headers=headers(message))
        streamed = await http.post(small.url, content=chunks(), headers=headers(message))
        after = await post(http, small, request("server/discover"))
    assert declared.status_code == 413
    assert streamed.status_code == 413
    assert after.status_code == 200
    shutdown.set()


async def test_a_removed_method_is_404_over_real_http(
    served: Served, http: httpx.AsyncClient
) -> None:
    """Runner-scored (server-stateless/sep-2575-http-server-method-not-found-404-initialize;
    H-28, E-03)."""
    with trio.fail_after(5):
        response = await post(http, served, request("initialize", request_id=500))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == METHOD_NOT_FOUND
    assert response.json()["id"] == 500


@pytest.mark.parametrize(
    ("changes", "status"),
    [
        ([("origin", "http://[::1")], 403),
        ([("origin", "http://[evil]")], 403),
        ([("origin", "http://localhost:3000@evil.example")], 403),
        ([("origin", "http://localhost"), ("origin", "http://evil.example")], 403),
        ([("host", "[::1]evil.example")], 421),
        ([("accept", "application/json, text/event-stream;q=0")], 406),
    ],
)
async def test_unreadable_or_repeated_admission_headers_are_refused_on_the_wire(
    served: Served, changes: list[tuple[str, str]], status: int
) -> None:
    """Spec-mandated (streamable-http §Security & Endpoint: an invalid Origin MUST get 403;
    H-02, H-03, H-07): malformed, userinfo-laden and repeated Origins are 403 (never a
    500), a Host with junk after an IP literal is 421, ``q=0`` on event streams is 406;
    the server keeps serving."""
    message = request("server/discover")
    replaced = {name for name, _ in changes}
    sent = [(k, v) for k, v in wire_headers(message) if k not in replaced] + changes
    body = json.dumps(message).encode()
    with trio.fail_after(5):
        client = await H11Client.connect(served.port)
        assert (await client.post(body, sent)).status == status
        await client.aclose()
        client = await H11Client.connect(served.port)
        assert (await client.post(body, wire_headers(message))).status == 200
        await client.aclose()
