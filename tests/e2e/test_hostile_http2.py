"""HTTP/2 frames a client may send by the thousand: the server keeps serving.

Rules of this file: :func:`~presa_trio.http.serving.serve_http` itself, on a
free loopback port, in this process (so hypercorn's protocols as presa mends
them), spoken to in h2c with prior knowledge (:class:`H2Client`).
"""

from __future__ import annotations

from functools import partial

import pytest
import trio

from presa_trio.demo import build_server
from presa_trio.http.serving import serve_http
from presa_trio.testing import request
from tests.e2e.raw_http import H2Client

DISCOVER = request("server/discover")


@pytest.fixture
def port(served_port: int) -> int:
    return served_port


async def test_priority_frames_for_two_thousand_streams_leave_the_connection_serving(
    port: int,
) -> None:
    """RFC 9113 §5.3.2 (the priority signals of RFC 7540 are deprecated) and RFC 7540
    §5.3 (a priority is only input to the server's choices): PRIORITY frames naming
    two thousand streams never opened are taken, and ignored; the connection answers
    its next request, and a new connection is served too. (hypercorn kept a node for
    each stream named; past a thousand its priority tree raised from the connection's
    task, and the whole server ended.)"""
    client = await H2Client.connect(port)
    for stream_id in range(1001, 5001, 2):
        client.connection.prioritize(stream_id, weight=16, depends_on=0)
    await client.flush()
    with trio.fail_after(10):
        after = await client.answer(await client.post(DISCOVER))
        await client.aclose()
        other = await H2Client.connect(port)
        elsewhere = await other.answer(await other.post(DISCOVER))
        await other.aclose()
    assert (after.status, elsewhere.status) == (200, 200)


@pytest.mark.parametrize("refused_first", [False, True])
async def test_an_http2_connection_with_no_request_under_way_is_closed_when_idle(
    nursery: trio.Nursery, refused_first: bool
) -> None:
    """presa-defined (docs/deployment.md, ``--keep-alive``: a connection idle that long
    is closed): an HTTP/2 connection (prior knowledge) that sent no request, or whose
    one request was refused 400 (a ``:path`` past ASCII, RFC 3986 §2), is idle, and is
    closed like any other, here after a keep-alive of 0.2 s. (hypercorn took the
    connection preface for a request and marked the connection busy, and the refusal
    did too; only a stream's end marked it idle again: it stayed open for as long as
    the client kept it.)"""
    stop = trio.Event()
    serve = partial(serve_http, build_server(), port=0, keep_alive=0.2, shutdown_trigger=stop.wait)
    urls: list[str] = await nursery.start(serve)
    client = await H2Client.connect(int(urls[0].rsplit(":", 1)[1].split("/", 1)[0]))
    sent = [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":authority", b"localhost"),
        (b":path", b"/mcp\xff"),
    ]
    statuses = []
    try:
        with trio.fail_after(10):
            if refused_first:
                stream_id = client.connection.get_next_available_stream_id()
                client.connection.send_headers(stream_id, sent, end_stream=True)
                await client.flush()
                statuses.append((await client.answer(stream_id)).status)
            while await client.read():  # until the server closes the connection
                pass
    finally:
        await client.aclose()
        stop.set()
    assert statuses == ([400] if refused_first else [])
