"""HTTP/2 frames a client may send by the thousand: the server keeps serving.

Rules of this file: :func:`~presa_trio.http.serving.serve_http` itself, on a
free loopback port, in this process (so hypercorn's protocols as presa mends
them), spoken to in h2c with prior knowledge (:class:`H2Client`).
"""

from __future__ import annotations

import pytest
import trio

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
