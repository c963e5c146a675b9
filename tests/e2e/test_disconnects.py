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
from h2.settings import SettingCodes

from presa_trio.testing import request
from tests.e2e.peers import TASKS
from tests.e2e.raw_http import H2Client, H11Client, wire_headers
from tests.e2e.serve_process import ServeProcess, presa_serve

DISCOVER = request("server/discover")
#: Bytes past which a body is 413 in these tests.
MAX_BODY = 1000


@pytest.fixture
async def served() -> AsyncIterator[ServeProcess]:
    arguments = [
        *("tests.e2e.holding_server:server", "--max-body", str(MAX_BODY)),
        *("--metrics", "--task-events"),
    ]
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


def hold(tool: str, label: str, **arguments: Any) -> dict[str, Any]:
    """A ``tools/call`` of a :mod:`tests.e2e.holding_server` tool; ``hold`` streams its
    progress, so its answer is an event stream."""
    params: dict[str, Any] = {"name": tool, "arguments": {"label": label, **arguments}}
    message = request("tools/call", params, capabilities=TASKS)
    message["params"]["_meta"]["progressToken"] = label
    return message


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


async def test_an_http2_413_answered_while_the_body_comes_ends_before_any_reset(
    served: ServeProcess,
) -> None:
    """RFC 9113 §8.1 (a server may send a complete response before the whole request,
    then reset the stream with ``NO_ERROR``; a response is complete with its
    ``END_STREAM``): a body whose ``content-length`` is over ``--max-body``, sent in
    small DATA frames with its head, gets the whole 413, ended, and the connection
    serves on. (The frames that came once the app's part was over reset the stream
    before the 413's end was written: the client had its head and body, and no end.)"""
    with trio.fail_after(20):
        client = await H2Client.connect(port_of(served))
        big = await client.open(DISCOVER, **{"content-length": str(4 * MAX_BODY)})
        for _ in range(20):
            client.connection.send_data(big, b" ")
        await client.flush()
        refused = await client.answer(big)
        after = await client.answer(await client.post(DISCOVER))
        await client.aclose()
    assert (refused.status, refused.body) == (413, b"Request body too large")
    assert after.status == 200
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


async def test_http2_streams_reset_while_flow_control_holds_their_answers_end_their_requests(
    served: ServeProcess,
) -> None:
    """streamable-http §Cancellation (closing the stream ends the request) and
    presa-defined (nothing started for a request outlives it, http/exchange.py): a client
    whose flow-control window is 0 (RFC 9113 §6.9.2) gets the heads of its answers and
    none of their bytes; when it resets those streams, their requests end, though the
    connection stays open, and it serves its next stream. (hypercorn kept a reset
    stream's unwritten bytes, so the answer's last ``send`` waited on them for as long as
    the connection lasted.)"""
    with trio.fail_after(30):
        client = await H2Client.connect(port_of(served))
        client.connection.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: 0})
        streams = [await client.post(DISCOVER) for _ in range(3)]
        while len(client.statuses) < len(streams):
            assert await client.read()
        for stream_id in streams:
            client.connection.reset_stream(stream_id)
        await client.flush()
        await until_none_in_flight(served)
        client.connection.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: 65535})
        after = await client.answer(await client.post(DISCOVER))
        await client.aclose()
    assert [client.bodies.get(stream_id) for stream_id in streams] == [None] * len(streams)
    assert after.status == 200
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


async def test_a_client_leaving_cancels_its_request_and_nothing_else(
    served: ServeProcess,
) -> None:
    """Spec-mandated (basic/patterns/cancellation §Transport-Specific Cancellation;
    streamable-http §Cancellation): a client that closes its HTTP/1.1 connection, or
    resets its HTTP/2 stream, mid-request cancels that request's work, whether its
    answer is an event stream already open or plain JSON not yet begun; the other
    streams of the HTTP/2 connection run on (a request that said ``Connection: close``
    is cancelled as well) and it serves new ones. A task is not its
    creating request's work, nor its event stream's: a ``tasks/stream`` reset leaves
    the task to finish. Every request of the run has ended when it is over."""
    port = port_of(served)
    with trio.fail_after(30):
        for tool, label, close in (
            ("hold", "h1-stream", {}),
            ("hold_quiet", "h1-quiet", {}),
            ("hold_quiet", "h1-quiet-close", {"connection": "close"}),
        ):
            client = await H11Client.connect(port)
            message = hold(tool, label)
            body = json.dumps(message).encode()
            await client.send(
                h11.Request(
                    method="POST",
                    target="/mcp",
                    headers=[
                        *wire_headers(message, **{"mcp-name": tool}, **close),
                        ("content-length", str(len(body))),
                    ],
                )
            )
            await client.send(h11.Data(data=body))
            await served.wait_for_line(f"hold {label} started")
            await client.aclose()
            await served.wait_for_line(f"hold {label} cancelled")
        h2 = await H2Client.connect(port)
        streams = {}
        for tool, label in (("hold", "a"), ("hold_quiet", "b"), ("hold", "c")):
            streams[label] = await h2.post(hold(tool, label), **{"mcp-name": tool})
            await served.wait_for_line(f"hold {label} started")
        for label in ("a", "b"):
            h2.connection.reset_stream(streams[label])
            await h2.flush()
            await served.wait_for_line(f"hold {label} cancelled")
        assert (await h2.answer(await h2.post(DISCOVER))).status == 200
        assert not [line for line in served.lines if "hold c cancelled" in line]
        created = await h2.answer(
            await h2.post(hold("task_hold", "t", seconds=1.0), **{"mcp-name": "task_hold"})
        )
        task_id = created.json()["result"]["taskId"]
        watch = request("tasks/stream", {"taskId": task_id}, capabilities=TASKS)
        watching = await h2.post(watch, **{"mcp-name": task_id})
        while watching not in h2.bodies:
            assert await h2.read()
        h2.connection.reset_stream(watching)
        await h2.flush()
        await h2.aclose()
        await served.wait_for_line("hold c cancelled")
        await served.wait_for_line("task_hold t (done|cancelled)")
        await until_none_in_flight(served)
    assert "task_hold t done" in served.stderr
    assert_no_traceback(served)
