"""Requests that ask to leave HTTP/1.1: an upgrade to h2c, or to a WebSocket.

Rules of this file: :func:`~presa_trio.http.serving.serve_http` itself, on a
free loopback port, in this process (so its whole edge, hypercorn's
protocols as presa mends them), spoken to in raw HTTP/1.1
(:class:`H11Client`). Each request goes on a connection of its own.
"""

from __future__ import annotations

import json

import h11
import pytest
import trio

from presa_trio.testing import request
from tests.e2e.raw_http import H2Client, H11Client, wire_headers

DISCOVER = request("server/discover")
#: An upgrade's headers but its ``HTTP2-Settings`` (RFC 7540 §3.2).
H2C = [("upgrade", "h2c"), ("connection", "Upgrade, HTTP2-Settings")]
#: ``HTTP2-Settings`` that h2 applies: three settings, 18 bytes, no padding.
GOOD_SETTINGS = "AAMAAABkAAQCAAAAAAIAAAAA"


@pytest.fixture
def port(served_port: int) -> int:
    return served_port


async def first_response(
    port: int, sent: list[tuple[str, str]] | list[tuple[bytes, bytes]]
) -> h11.Response | h11.InformationalResponse:
    """A GET of ``/mcp`` with ``sent``, on a connection of its own: the first response."""
    client = await H11Client.connect(port)
    try:
        with trio.fail_after(10):
            await client.send(h11.Request(method="GET", target="/mcp", headers=sent))
            await client.send(h11.EndOfMessage())
            response = await client.next_event()
    finally:
        await client.aclose()
    assert isinstance(response, (h11.Response, h11.InformationalResponse))
    return response


async def test_an_upgrade_to_h2c_whose_settings_cannot_be_applied_is_answered_over_http1(
    port: int,
) -> None:
    """RFC 7540 §3.2.1 (a server MUST NOT upgrade unless exactly one ``HTTP2-Settings``
    is present; its value is the base64url of a SETTINGS payload, §6.5.1, each value in
    range, §6.5.2) and streamable-http §Earlier Streamable HTTP Revisions (a GET is
    405): such a request is not upgraded, and is answered 405 over HTTP/1.1; the server
    serves on, and one with usable settings is still upgraded. (hypercorn sent ``101``
    and then had h2 apply the settings; a value it could not read raised from the
    connection's task and ended the whole server.)"""
    refused = {
        "not base64url": ["AAMAAABkAAQCAAAAAAIAAAA"],
        "a window over 2^31-1": ["AAT_____"],
        "seven bytes": ["AAMAAABkAA=="],
        "none": [],
        "two": [GOOD_SETTINGS, GOOD_SETTINGS],
    }
    host = [("host", "localhost")]
    for values in refused.values():
        settings = [("http2-settings", value) for value in values]
        assert (await first_response(port, [*host, *H2C, *settings])).status_code == 405
    # An upgrade value ending in a byte hypercorn strips as it reads it (NO-BREAK SPACE,
    # obs-text in a field value, RFC 9110 §5.5) is still an upgrade to h2c.
    spaced = [
        (b"host", b"localhost"),
        (b"upgrade", b"h2c\xa0"),
        (b"connection", b"Upgrade, HTTP2-Settings"),
        (b"http2-settings", refused["not base64url"][0].encode()),
    ]
    assert (await first_response(port, spaced)).status_code == 405
    upgraded = await first_response(port, [*host, *H2C, ("http2-settings", GOOD_SETTINGS)])
    assert upgraded.status_code == 101
    client = await H11Client.connect(port)
    with trio.fail_after(10):
        answer = await client.post(json.dumps(DISCOVER).encode(), wire_headers(DISCOVER))
    await client.aclose()
    assert answer.status == 200


#: A WebSocket handshake's headers over HTTP/1.1 (RFC 6455 §4.1).
WEBSOCKET = [
    ("upgrade", "websocket"),
    ("connection", "Upgrade"),
    ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ("sec-websocket-version", "13"),
]


async def open_websocket_over_h2(h2: H2Client) -> int:
    """Send a request to open a WebSocket at ``/mcp`` (an extended CONNECT, RFC 8441 §4),
    once the server allows one; its stream's id."""
    while not h2.connection.remote_settings.enable_connect_protocol:
        assert await h2.read()
    stream_id: int = h2.connection.get_next_available_stream_id()
    pseudo = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "http")]
    h2.connection.send_headers(
        stream_id, [*pseudo, (":authority", "localhost"), (":path", "/mcp"), WEBSOCKET[-1]]
    )
    return stream_id


async def test_a_request_to_open_a_websocket_is_answered_as_the_request_it_also_is(
    port: int,
) -> None:
    """RFC 9110 §7.8 (a server MAY ignore an upgrade) and streamable-http §Earlier
    Streamable HTTP Revisions (a GET to the endpoint is 405): presa serves no WebSocket,
    and a request for one, an HTTP/1.1 GET with ``Upgrade: websocket`` (RFC 6455 §4.1)
    or an HTTP/2 extended CONNECT (RFC 8441 §4), gets what the request gets without it:
    405 with ``Allow: POST`` at the endpoint, 404 at a path presa does not serve, 200 at
    ``/healthz``; never a 500. (The app returned without an answer, and hypercorn
    answered 500.)"""
    host = [("host", "localhost")]
    statuses = {}
    for path in ("/mcp", "/nowhere", "/healthz"):
        client = await H11Client.connect(port)
        with trio.fail_after(10):
            answer = await client.request("GET", path, [*host, *WEBSOCKET])
        await client.aclose()
        statuses[path] = answer.status
        if path == "/mcp":
            assert answer.headers[b"allow"] == b"POST"
    h2 = await H2Client.connect(port)
    with trio.fail_after(10):
        stream_id = await open_websocket_over_h2(h2)
        await h2.flush()
        over_h2 = await h2.answer(stream_id)
    await h2.aclose()
    assert statuses == {"/mcp": 405, "/nowhere": 404, "/healthz": 200}
    assert over_h2.status == 405


async def test_a_request_to_open_a_websocket_passes_every_layer_of_the_edge(port: int) -> None:
    """RFC 9110 §7.8 (a server MAY ignore an upgrade) and RFC 9112 §3.2.2 (a server MUST
    accept the absolute-form): a request to open a WebSocket whose target is the whole
    URI of ``/healthz`` is read by the same edge as the request without the upgrade,
    and gets its 200. (It went past the layer that reads the target, straight to the
    app, which answered 400 for a target that is no path.)"""
    answers = {}
    for upgrade in ([], WEBSOCKET):
        client = await H11Client.connect(port)
        with trio.fail_after(10):
            target = f"http://localhost:{port}/healthz"
            answer = await client.request("GET", target, [("host", "localhost"), *upgrade])
        await client.aclose()
        answers[bool(upgrade)] = (answer.status, answer.body)
    assert answers[True] == answers[False] == (200, b"ok\n")


async def test_bytes_after_a_request_to_open_a_websocket_harm_nothing(port: int) -> None:
    """RFC 9110 §7.8 (the upgrade is ignored, so what follows the head is the request's
    body) and RFC 9113 §8.1 (one response a stream): a request to open a WebSocket
    sent with bytes after its head in one write, over HTTP/1.1 a body and over
    HTTP/2 an extended CONNECT's DATA, gets one whole answer, the 405 of a request
    to the endpoint that is no POST, and the server serves on. (hypercorn answered
    400 to those bytes after the app had answered: over HTTP/1.1 the second response
    raised from the connection's task and ended the whole server; over HTTP/2 it went
    out as trailers, after a head that promised a body.)"""
    body = b"hello"
    sent = [("host", "localhost"), *WEBSOCKET, ("content-length", str(len(body)))]
    client = await H11Client.connect(port)
    data = client.connection.send(h11.Request(method="GET", target="/mcp", headers=sent))
    with trio.fail_after(10):
        await client.stream.send_all((data or b"") + body)
        response = await client.next_event()
        assert isinstance(response, h11.Response)
        while not isinstance(await client.next_event(), h11.EndOfMessage):
            pass
    await client.aclose()
    h2 = await H2Client.connect(port)
    with trio.fail_after(10):
        stream_id = await open_websocket_over_h2(h2)
        h2.connection.send_data(stream_id, body)
        await h2.flush()
        over_h2 = await h2.answer(stream_id)
        served = await h2.answer(await h2.post(DISCOVER))
    await h2.aclose()
    assert response.status_code == 405
    assert (over_h2.status, over_h2.body) == (405, b"Only POST is supported")
    assert served.status == 200
