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
from tests.e2e.raw_http import H2Client, H11Client
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
