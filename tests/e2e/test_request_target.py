"""The request target on the wire: the absolute-form served as its path, other forms refused.

Rules of this file: :func:`~presa_trio.http.serving.serve_http` itself, on a
free loopback port, in this process (so its whole edge: the access log, the
metrics, authorization), spoken to in raw HTTP/1.1 (:class:`H11Client`),
which writes the request line as the test gives it. Each request that
refuses goes on a connection of its own: a refusal closes it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest
import trio

from presa_trio.auth.guard import ResourceGuard, ScopeRules, Verifiers
from presa_trio.auth.static import StaticTokens
from presa_trio.demo import build_server
from presa_trio.http.serving import serve_http
from presa_trio.testing import request
from tests.e2e.harness import headers
from tests.e2e.raw_http import Answer, H2Client, H11Client

GREET = request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
BEARER = ("authorization", "Bearer basic")
METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"


@pytest.fixture
async def port(nursery: trio.Nursery) -> AsyncIterator[int]:
    """The port of a served demo with metrics and a static bearer token."""
    guard = ResourceGuard(
        resource="http://localhost:3000/mcp",
        verifier=Verifiers(static=StaticTokens({"basic": "bob"}, scopes=frozenset({"mcp"}))),
        authorization_servers=["https://auth.example.com"],
        scopes=ScopeRules(every_request=frozenset({"mcp"})),
    )
    stop = trio.Event()
    serve = partial(
        serve_http, build_server(), port=0, auth=guard, metrics=True, shutdown_trigger=stop.wait
    )
    urls: list[str] = await nursery.start(serve)
    yield int(urls[0].rsplit(":", 1)[1].split("/", 1)[0])
    stop.set()


async def ask(
    port: int, method: str, target: str, host: str, message: dict[str, Any] | None = None
) -> Answer:
    """One request, on a connection of its own, with ``Host: host``; ``message`` is POSTed."""
    sent = [("host", host), BEARER]
    body = b""
    if message is not None:
        sent += list(headers(message, **{"mcp-name": "greet"}).items())
        body = json.dumps(message).encode()
    client = await H11Client.connect(port)
    try:
        with trio.fail_after(10):
            return await client.request(method, target, sent, body)
    finally:
        await client.aclose()


async def test_a_post_to_the_endpoint_s_uri_is_answered_as_a_post_to_its_path(port: int) -> None:
    """Spec-mandated (RFC 9112 §3.2.2): a server MUST accept the absolute-form, and
    an origin server uses the target's host, not the Host header, which may name
    anything (here one the server refuses)."""
    targets = (
        f"http://127.0.0.1:{port}/mcp",
        f"HTTP://localhost:{port}/mcp?x=1",
        f"https://localhost:{port}/mcp",
        f"http://localhost:{port}/m%63p",  # its path decoded, as an origin-form's is
    )
    for target in targets:
        answer = await ask(port, "POST", target, "evil.example", GREET)
        assert answer.status == 200, answer.body
        assert answer.json()["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]


async def test_a_target_authority_not_allowed_gets_what_a_host_not_allowed_gets(
    port: int,
) -> None:
    """Spec-mandated (streamable-http §Security & Endpoint; RFC 9112 §3.2.2): the
    DNS-rebinding check judges the target's authority, as it judges a Host: 421,
    however allowed the Host header is."""
    by_target = await ask(port, "POST", "http://evil.example/mcp", f"localhost:{port}", GREET)
    by_host = await ask(port, "POST", "/mcp", "evil.example", GREET)
    assert (by_target.status, by_target.body) == (421, b"Host not allowed")
    assert (by_target.status, by_target.body) == (by_host.status, by_host.body)


async def test_the_paths_beside_the_endpoint_are_served_by_their_uri_too(port: int) -> None:
    """Spec-mandated (RFC 9112 §3.2.2): the health checks, the scrape and the Protected
    Resource Metadata are routed by the target's path; a URI with an empty path names
    ``/`` (RFC 9112 §3.2.1), which is no endpoint: 404, not the 400 of no path."""
    base = f"http://localhost:{port}"
    for root in (base, f"{base}?x=1"):
        assert (await ask(port, "GET", root, "evil.example")).status == 404
    health = await ask(port, "GET", f"{base}/healthz", "evil.example")
    ready = await ask(port, "GET", f"{base}/readyz", "evil.example")
    scrape = await ask(port, "GET", f"{base}/metrics", "evil.example")
    metadata = await ask(port, "GET", f"{base}{METADATA_PATH}", "evil.example")
    assert (health.status, health.body, ready.status, ready.body) == (200, b"ok\n", 200, b"ok\n")
    assert scrape.status == 200
    assert b"mcp_server_operation_duration_seconds" in scrape.body
    assert metadata.status == 200
    assert metadata.json()["resource"] == "http://localhost:3000/mcp"


async def test_over_http2_a_path_that_is_a_uri_is_400(port: int) -> None:
    """Spec-mandated (RFC 9113 §8.3.1): ``:path`` holds the path and query alone,
    ``:authority`` the host (hypercorn makes it the request's one Host); a ``:path``
    that is a whole URI is malformed, so it is refused, not served."""
    client = await H2Client.connect(port)
    try:
        with trio.fail_after(10):
            served = await client.post(GREET, **{"mcp-name": "greet"}, authorization="Bearer basic")
            uri = f"http://localhost:{port}/mcp"
            refused = await client.post(
                GREET, uri, **{"mcp-name": "greet"}, authorization="Bearer basic"
            )
            assert (await client.answer(served)).status == 200
            assert (await client.answer(refused)).status == 400
    finally:
        await client.aclose()


async def test_over_http2_a_connect_or_a_path_past_ascii_is_400_and_the_connection_serves_on(
    port: int,
) -> None:
    """RFC 9113 §8.5 (a CONNECT has no ``:path``), RFC 3986 §2 (no URI holds a byte past
    ASCII), RFC 9110 §9.1 (a method is a token, ASCII) and RFC 9113 §8.1.1 (a server
    MAY answer a malformed request): each is answered 400, as over HTTP/1.1, and the
    connection serves its next stream. (hypercorn read every ``:method`` and ``:path``
    as ASCII and needed a ``:path``: each request raised from the connection's task,
    and ended the whole server.)"""
    client = await H2Client.connect(port)
    authority = (b":authority", b"localhost")
    requests = [
        [(b":method", b"CONNECT"), authority],
        [(b":method", b"POST"), (b":scheme", b"http"), authority, (b":path", b"/mcp\xff")],
        [(b":method", b"P\xffST"), (b":scheme", b"http"), authority, (b":path", b"/mcp")],
    ]
    try:
        with trio.fail_after(10):
            refused = []
            for sent in requests:
                stream_id = client.connection.get_next_available_stream_id()
                client.connection.send_headers(stream_id, sent, end_stream=True)
                await client.flush()
                refused.append((await client.answer(stream_id)).status)
            served = await client.post(GREET, **{"mcp-name": "greet"}, authorization="Bearer basic")
            assert (await client.answer(served)).status == 200
    finally:
        await client.aclose()
    assert refused == [400, 400, 400]


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("OPTIONS", "*"),  # the asterisk-form (RFC 9112 §3.2.4)
        ("CONNECT", "127.0.0.1:{port}"),  # the authority-form (§3.2.3)
        ("POST", "127.0.0.1:{port}"),
        ("POST", "ftp://127.0.0.1:{port}/mcp"),  # a scheme other than http(s)
        ("POST", "http:///mcp"),  # no host (RFC 9110 §4.2.1)
        ("POST", "mcp"),
    ],
)
async def test_a_target_that_is_neither_a_path_nor_an_http_uri_is_400(
    port: int, method: str, target: str
) -> None:
    """RFC 9112 §3: an invalid request-line SHOULD be answered 400. presa-defined:
    ``OPTIONS *`` and a CONNECT, well-formed but asking for what presa does not do
    (a server-wide OPTIONS, a tunnel), are 400 too."""
    answer = await ask(port, method, target.format(port=port), f"localhost:{port}", GREET)
    assert answer.status == 400


async def test_the_access_line_and_the_metrics_name_the_path(
    port: int, caplog: pytest.LogCaptureFixture
) -> None:
    """presa-defined (docs/deployment.md, "Access log", "Metrics"): a request by its
    URI is logged by its path, and counted as the call it is."""
    caplog.set_level(logging.INFO, logger="presa_trio.access")
    answer = await ask(port, "POST", f"http://localhost:{port}/mcp", "evil.example", GREET)
    assert answer.status == 200
    scrape = await ask(port, "GET", f"http://localhost:{port}/metrics", "evil.example")
    ok = (
        b"mcp_server_operation_duration_seconds_count"
        b'{gen_ai_tool_name="greet",mcp_method_name="tools/call",outcome="ok"} 1.0'
    )
    assert ok in scrape.body
    # Counted, so logged: the line is written as the metrics' layer returns.
    lines = [record for record in caplog.records if record.name == "presa_trio.access"]
    assert lines[0].getMessage().startswith("POST /mcp status=200 ")
    assert getattr(lines[0], "path", None) == "/mcp"
