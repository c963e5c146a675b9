"""A failure inside one connection ends that connection, never the server.

Rules of this file: :func:`~presa_trio.http.serving.serve_http` itself, on a
free loopback port, in this process, so hypercorn's connections are the ones
presa mends (:mod:`presa_trio.http.connection`). The failure is injected, as
``test_failure_boundaries`` injects store faults: hypercorn's HTTP/1.1
protocol, as presa installs it, raises on bytes that carry a marker. Every
defect a client's bytes could reach in hypercorn, h11 or h2 ends the same
way. Waits are bounded by ``trio.fail_after``; nothing asserts how long
anything took.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import trio
from hypercorn.events import RawData

from presa_trio.http.protocols import MendedH11Protocol
from presa_trio.testing import request
from tests.e2e.raw_http import H11Client, wire_headers

DISCOVER = request("server/discover")
MARKER = b"/a-defect-in-the-protocol"


@pytest.fixture
def port(served_port: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """The server's port; its HTTP/1.1 protocol raises on bytes that carry :data:`MARKER`."""
    handle = MendedH11Protocol.handle

    async def failing(self: MendedH11Protocol, event: Any) -> None:
        if isinstance(event, RawData) and MARKER in event.data:
            raise RuntimeError("a defect the bytes reached")
        await handle(self, event)

    monkeypatch.setattr(MendedH11Protocol, "handle", failing)
    return served_port


async def test_a_connection_that_fails_is_closed_and_the_others_are_served(
    port: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A connection open beside the failing one answers its next request, a new
    connection is served, the failing one is closed, and the log holds the failure
    with its traceback under an incident id (hypercorn let it end the server)."""
    caplog.set_level(logging.ERROR, logger="presa_trio.http.connection")
    body = json.dumps(DISCOVER).encode()
    beside = await H11Client.connect(port)
    failing = await trio.open_tcp_stream("127.0.0.1", port)
    with trio.fail_after(10):
        await failing.send_all(b"GET " + MARKER + b" HTTP/1.1\r\nhost: localhost\r\n\r\n")
        assert await failing.receive_some(65536) == b""  # closed, without an answer
        first = await beside.post(body, wire_headers(DISCOVER))
        other = await H11Client.connect(port)
        second = await other.post(body, wire_headers(DISCOVER))
    await beside.aclose()
    await other.aclose()
    await failing.aclose()
    assert (first.status, second.status) == (200, 200)
    [record] = [r for r in caplog.records if r.name == "presa_trio.http.connection"]
    assert "a connection failed" in record.getMessage()
    assert record.exc_info is not None
    failure = record.exc_info[1]  # from hypercorn's task group for the connection
    assert isinstance(failure, ExceptionGroup)
    assert failure.subgroup(RuntimeError) is not None
    assert getattr(record, "incident", None)
