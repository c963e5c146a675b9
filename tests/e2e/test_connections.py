"""End to end: the server ends connections when HTTP says it must.

hypercorn ends a connection after a request that says ``Connection: close``,
after ``keep_alive_max_requests`` requests (HTTP/1.1: ``Connection: close`` on
the last response; HTTP/2: GOAWAY, then the close once the connection is
idle). It does so from inside the app's last ``send``, so the app must let
that ``send`` run to its end. These clients read to the end of the stream:
a connection left open fails them by hanging-timeout.
"""

from __future__ import annotations

import json

import h11
import trio

from presa_trio.demo import build_app, build_server
from presa_trio.http.app import McpApp
from presa_trio.testing import meta, request
from tests.e2e.harness import Served, start
from tests.e2e.raw_http import H11Client, h2_requests, wire_headers

DISCOVER = request("server/discover")


async def test_connection_close_is_honoured_after_a_json_answer(served: Served) -> None:
    """RFC 9112 §9.6: after a response with ``Connection: close`` the server closes the
    connection; a client reading to the end of the stream gets the end."""
    client = await H11Client.connect(served.port)
    with trio.fail_after(5):
        answer = await client.post(
            json.dumps(DISCOVER).encode(), [*wire_headers(DISCOVER), ("connection", "close")]
        )
        assert answer.status == 200
        assert answer.headers[b"connection"] == b"close"
        assert await client.closed_by_server()
    await client.aclose()


async def test_connection_close_is_honoured_after_an_event_stream(served: Served) -> None:
    """RFC 9112 §9.6, on the SSE path: progress events, the result, then the close."""
    message = request(
        "tools/call", {"name": "test_tool_with_progress", "_meta": meta(progressToken="p")}
    )
    client = await H11Client.connect(served.port)
    with trio.fail_after(5):
        answer = await client.post(
            json.dumps(message).encode(), [*wire_headers(message), ("connection", "close")]
        )
        assert answer.headers[b"content-type"] == b"text/event-stream"
        assert b'"resultType":"complete"' in answer.body
        assert await client.closed_by_server()
    await client.aclose()


async def test_http1_connection_ends_after_keep_alive_max_requests(
    nursery: trio.Nursery,
) -> None:
    """hypercorn's ``keep_alive_max_requests``: the last allowed response says
    ``Connection: close`` and the server closes the connection."""
    served, shutdown = await start(build_app(), nursery, keep_alive_max_requests=3)
    body = json.dumps(DISCOVER).encode()
    client = await H11Client.connect(served.port)
    with trio.fail_after(5):
        answers = [await client.post(body, wire_headers(DISCOVER)) for _ in range(3)]
        assert [a.status for a in answers] == [200, 200, 200]
        assert [a.headers.get(b"connection") for a in answers] == [None, None, b"close"]
        assert await client.closed_by_server()
    await client.aclose()
    shutdown.set()


async def test_http2_connections_end_and_a_client_carries_on(nursery: trio.Nursery) -> None:
    """HTTP/2 (h2c, prior knowledge) with 32 streams in flight: past
    ``keep_alive_max_requests`` the server sends GOAWAY, answers the streams it took,
    and closes the connection once idle; the client reconnects for the rest, and every
    request is answered. (hypercorn also drops the streams still in flight when it sends
    the GOAWAY, though its last-stream id covers them; a bare app on it does the same.
    The discover calls here are safe to send again.)"""
    served, shutdown = await start(
        build_app(), nursery, keep_alive_max_requests=30, keep_alive_timeout=0.2
    )
    bodies = [json.dumps(request("server/discover", request_id=n)).encode() for n in range(100)]
    answered: list[int] = []
    with trio.fail_after(20):
        for _connection in range(len(bodies)):  # at least one request per connection
            remaining = [b for b in bodies if json.loads(b)["id"] not in answered]
            if not remaining:
                break
            run = await h2_requests(served.port, remaining, wire_headers(DISCOVER), in_flight=32)
            assert run.answers, "a connection answered nothing"
            assert run.unanswered == [] or run.goaway_last_stream is not None
            answered += [answer["id"] for answer in run.answers.values()]
    assert sorted(answered) == list(range(100))
    shutdown.set()


async def test_every_whole_body_goes_out_with_its_length(served: Served) -> None:
    """RFC 9112 §6.3: a body known whole is sent with ``Content-Length``, never chunked —
    a result, a JSON-RPC error, an accepted notification (202) and a plain rejection."""
    unknown = request("no/such/method")
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    cases = [
        (DISCOVER, wire_headers(DISCOVER), 200),
        (unknown, wire_headers(unknown), 404),
        (note, wire_headers(note), 202),
        # Last: a rejection leaves the body unread and closes the connection.
        (DISCOVER, [*wire_headers(DISCOVER), ("origin", "http://evil.example")], 403),
    ]
    client = await H11Client.connect(served.port)
    with trio.fail_after(5):
        for message, sent, status in cases:
            answer = await client.post(json.dumps(message).encode(), sent)
            assert answer.status == status
            assert b"transfer-encoding" not in answer.headers
            assert answer.headers[b"content-length"] == b"%d" % len(answer.body)
    await client.aclose()


async def test_a_stalled_body_is_answered_408_and_the_connection_closed(
    nursery: trio.Nursery,
) -> None:
    """RFC 9110 §15.5.9 (408): a client that sends the head and part of the body, then
    nothing, is answered 408 once ``read_timeout`` has passed and the connection is
    closed, so stalled uploads cannot pile up."""
    served, shutdown = await start(McpApp.for_server(build_server(), read_timeout=0.5), nursery)
    body = json.dumps(DISCOVER).encode()
    client = await H11Client.connect(served.port)
    sent = [*wire_headers(DISCOVER), ("content-length", str(len(body)))]
    with trio.fail_after(10):
        await client.send(h11.Request(method="POST", target="/mcp", headers=sent))
        await client.send(h11.Data(data=body[:10]))
        response = await client.next_event()
        assert response.status_code == 408
        assert (b"connection", b"close") in response.headers
        while not isinstance(await client.next_event(), h11.EndOfMessage):
            pass
        assert await client.closed_by_server()
    await client.aclose()
    shutdown.set()


async def test_a_stalled_request_head_is_closed(nursery: trio.Nursery) -> None:
    """hypercorn's ``keep_alive_timeout`` also bounds a request head that never ends:
    the connection counts as idle until the head is complete, and is closed."""
    served, shutdown = await start(build_app(), nursery, keep_alive_timeout=0.5)
    stream = await trio.open_tcp_stream("127.0.0.1", served.port)
    with trio.fail_after(10):
        await stream.send_all(b"POST /mcp HTTP/1.1\r\nHost: local")
        assert await stream.receive_some(65536) == b""
    await stream.aclose()
    shutdown.set()


async def test_a_request_framed_twice_is_answered_and_the_connection_closed(
    served_port: int,
) -> None:
    """RFC 9112 §6.1 (a server MUST close the connection after responding to a request
    with both ``Transfer-Encoding`` and ``Content-Length``, since it may be an attempt at
    request smuggling, §11.2): such a request is read by its Transfer-Encoding (§6.3)
    and answered, with ``Connection: close``, and the connection is closed. Over
    :func:`~presa_trio.http.serving.serve_http`, whose protocols are presa's. (h11 kept
    the connection for the next request.)"""
    client = await H11Client.connect(served_port)
    framed_twice = [*wire_headers(DISCOVER), ("transfer-encoding", "chunked")]
    with trio.fail_after(5):
        answer = await client.post(json.dumps(DISCOVER).encode(), framed_twice)
        assert answer.status == 200
        assert answer.headers[b"connection"] == b"close"
        assert await client.closed_by_server()
    await client.aclose()
