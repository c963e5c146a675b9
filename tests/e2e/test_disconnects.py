"""End to end, on a real ``presa-trio serve``: what ends a request, and what must not.

A client that leaves (an HTTP/1.1 connection closed or reset, an HTTP/2
stream reset) cancels its request's work, and only that: the other streams
of its connection run on, and a task the request created is not the
request's work. An HTTP/2 client may go on sending a body the server has
already answered; the server takes no harm from it. The server's log says
when the tools of :mod:`tests.e2e.holding_server` start and end.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import h11
import pytest
import trio
from h2.errors import ErrorCodes

from presa_trio.testing import request
from tests.e2e.raw_http import H2Client, H11Client, wire_headers
from tests.e2e.serve_process import ServeProcess, presa_serve

DISCOVER = request("server/discover")
#: Bytes past which a body is 413 in these tests.
MAX_BODY = 1000


@pytest.fixture
async def served() -> AsyncIterator[ServeProcess]:
    arguments = ["tests.e2e.holding_server:server", "--max-body", str(MAX_BODY), "--metrics"]
    async with presa_serve(*arguments) as process:
        yield process


def port_of(served: ServeProcess) -> int:
    return int(served.url.rsplit(":", 1)[1].split("/")[0])


async def in_flight(served: ServeProcess) -> float:
    """The server's count of HTTP exchanges under way (``--metrics``), all methods summed."""
    client = await H11Client.connect(port_of(served))
    await client.send(h11.Request(method="GET", target="/metrics", headers=[("host", "localhost")]))
    await client.send(h11.EndOfMessage())
    assert isinstance(await client.next_event(), h11.Response)
    text = b""
    while not isinstance(event := await client.next_event(), h11.EndOfMessage):
        text += event.data
    await client.aclose()
    gauges = re.findall(rb"^mcp_server_requests_in_flight\{.*\} (\S+)$", text, re.MULTILINE)
    return sum(float(value) for value in gauges)


async def until_none_in_flight(served: ServeProcess) -> None:
    """Poll the count until it is 0 (the caller's ``fail_after`` bounds it)."""
    while True:
        if not await in_flight(served):
            return
        await trio.sleep(0.05)


def assert_no_traceback(served: ServeProcess) -> None:
    found = [line for line in served.lines if "Traceback" in line or " ERROR " in line]
    assert found == [], served.stderr[-5000:]


@pytest.mark.parametrize("declared", [True, False], ids=["length declared", "length counted"])
async def test_an_http2_body_sent_on_after_its_413_harms_nothing(
    served: ServeProcess, declared: bool
) -> None:
    """RFC 9113 §8.1 (a server may answer before the request's body has all come;
    the client may go on sending it) and streamable-http §Sending Messages: a body
    over ``--max-body`` is 413, whether its ``content-length`` says so or its DATA
    frames count past it, and DATA frames the client sends after that answer are
    dropped. The connection serves its next stream, and the server every client,
    without a traceback. (hypercorn looked the finished stream up for those frames
    and raised ``KeyError``, which ended the whole server.)"""
    extra: dict[str, Any] = {"content-length": str(4 * MAX_BODY)} if declared else {}
    with trio.fail_after(20):
        client = await H2Client.connect(port_of(served))
        big = await client.open(DISCOVER, **extra)
        if not declared:
            await client.send_body(big, b" " * (MAX_BODY + 1), end=False)
        assert (await client.answer(big)).status == 413
        for _ in range(3):
            await client.send_body(big, b" " * MAX_BODY, end=False)
        after = await client.answer(await client.post(DISCOVER))
        await client.aclose()
        other = await H2Client.connect(port_of(served))
        elsewhere = await other.answer(await other.post(DISCOVER))
        await other.aclose()
    assert client.reset[big] == ErrorCodes.NO_ERROR
    assert (after.status, elsewhere.status) == (200, 200)
    assert json.loads(after.body)["result"] == json.loads(elsewhere.body)["result"]
    assert_no_traceback(served)


async def test_http2_responses_under_way_when_the_connection_drops_all_end(
    served: ServeProcess,
) -> None:
    """streamable-http §Cancellation (a disconnect ends its requests) and presa-defined
    (nothing started for a request outlives it, http/exchange.py): HTTP/2 clients that
    send three requests and close the connection at once leave no request behind, however
    far each had come. (hypercorn stopped writing when the connection ended and left the
    responses' buffers full, so a response's last ``send`` waited for ever, and with it
    the request, until the shutdown grace ran out.)"""
    with trio.fail_after(30):
        for _ in range(10):
            client = await H2Client.connect(port_of(served))
            for _ in range(3):
                await client.post(DISCOVER)
            await client.aclose()
        await until_none_in_flight(served)
    assert_no_traceback(served)


def refused_early(refusal: str) -> list[Any]:
    """A request presa refuses from its head alone, with a body: a GET (405), or a
    POST whose body is not JSON (415)."""
    body = b"hello"
    sent = [*wire_headers(DISCOVER), ("content-length", str(len(body)))]
    if refusal == "405":
        head = h11.Request(method="GET", target="/mcp", headers=sent)
    else:
        typed = [(n, "text/plain" if n == "content-type" else v) for n, v in sent]
        head = h11.Request(method="POST", target="/mcp", headers=typed)
    return [head, h11.Data(data=body), h11.EndOfMessage()]


@pytest.mark.parametrize(
    ("refusal", "reason"),
    [("405", b"Only POST is supported"), ("415", b"Content-Type must be application/json")],
)
async def test_an_http1_refusal_before_the_body_is_whole_even_with_a_request_after_it(
    served: ServeProcess, refusal: str, reason: bytes
) -> None:
    """RFC 9112 §9.6 (a server that says ``close`` closes the connection after that
    response, and processes no further request on it) and §9.3 (a client may pipeline):
    a request refused from its head, sent with its body and a next request in one
    write, is answered whole, with ``Connection: close``; the next request is not
    answered, the connection ends, and the server logs no traceback. (hypercorn read
    the next request's bytes while the refusal was being written, found them past a
    ``close`` and ended the connection between the refusal's head and its body: the
    client got a head promising 22 bytes and no body, and the log a traceback.)"""
    client = await H11Client.connect(port_of(served))
    data = b"".join(client.connection.send(event) or b"" for event in refused_early(refusal))
    following = h11.Connection(h11.CLIENT)
    body = json.dumps(DISCOVER).encode()
    after = [*wire_headers(DISCOVER), ("content-length", str(len(body)))]
    data += following.send(h11.Request(method="POST", target="/mcp", headers=after)) or b""
    with trio.fail_after(10):
        await client.stream.send_all(data + body)
        response = await client.next_event()
        assert isinstance(response, h11.Response)
        chunks = []
        while not isinstance(event := await client.next_event(), h11.EndOfMessage):
            chunks.append(event.data)
        assert await client.closed_by_server()
    await client.aclose()
    assert (response.status_code, b"".join(chunks)) == (int(refusal), reason)
    assert (b"connection", b"close") in response.headers
    assert_no_traceback(served)
