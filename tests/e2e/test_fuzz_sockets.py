"""A real ``presa-trio serve`` (tasks in SQLite) against malformed HTTP over raw sockets.

Each attack is sent on a connection of its own: request lines and heads
HTTP cannot read, huge and repeated headers, bodies whose length lies, chunked
bodies cut short, pipelined requests, HTTP/2 with prior knowledge, bytes sent
one at a time, connections reset mid-response, a listen stream never read.
Then near-valid JSON-RPC bodies from a fixed seed (:mod:`tests.fuzz_inputs`)
go out one after another on a kept-alive HTTP/1.1 connection, tasks among them. What must hold:
every answer is an HTTP status that names the client's fault, or the spec's
answer to the JSON-RPC inside (never a 500 that is not a -32603 the spec
allows); the server still answers a good request after each attack; its
log has no traceback; the tasks it created are all there, as it said.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Awaitable, Callable
from pathlib import Path
from socket import SO_LINGER, SO_RCVBUF, SOL_SOCKET
from typing import Any

import h2.config
import h2.connection
import h2.events
import pytest
import trio
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from presa_trio.demo import build_app
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, request
from tests.e2e.harness import headers
from tests.e2e.raw_http import H11Client
from tests.e2e.serve_process import ServeProcess, presa_serve
from tests.fuzz_inputs import check_answer, headers_of, near_valid_messages

DISCOVER = request("server/discover")
STATUS_LINE = re.compile(rb"HTTP/1\.[01] (\d{3})")


def head(message: dict[str, Any], body: bytes, **extra: str) -> bytes:
    """The request head a correct client sends with ``body``."""
    lines = [b"POST /mcp HTTP/1.1", b"host: localhost"]
    sent = {**headers(message), "content-length": str(len(body)), **extra}
    lines += [f"{name}: {value}".encode("latin-1") for name, value in sent.items()]
    return b"\r\n".join(lines) + b"\r\n\r\n"


def whole(message: dict[str, Any], **extra: str) -> bytes:
    body = json.dumps(message).encode()
    return head(message, body, **extra) + body


async def exchange(port: int, data: bytes | list[bytes]) -> bytes:
    """Send ``data`` (pieces one after another) and read until the server closes, or
    is silent for a second after answering (a kept-alive connection), or 3 s pass
    (more than the server's 1 s read timeout); everything read."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    received = bytearray()
    async with stream:
        with trio.move_on_after(3):
            try:
                for piece in [data] if isinstance(data, bytes) else data:
                    await stream.send_all(piece)
            except trio.BrokenResourceError:
                pass  # the server answered and closed before reading it all
            while True:
                with trio.move_on_after(1 if received else 3) as quiet:
                    try:
                        chunk = await stream.receive_some(65536)
                    except trio.BrokenResourceError:
                        chunk = b""  # reset after the answer: what came is what counts
                if quiet.cancelled_caught or not chunk:
                    break
                received += chunk
    return bytes(received)


async def answered(port: int, data: bytes) -> bytes:
    """Send ``data``, a request that asks the server to close once it has answered, and
    read until it closes (a hang guard of 10 s, no window of silence: a loaded machine
    may pause between the head and the body); everything read."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    received = bytearray()
    async with stream:
        await stream.send_all(data)
        with trio.fail_after(10):
            while chunk := await stream.receive_some(65536):
                received += chunk
    return bytes(received)


def statuses(received: bytes) -> list[int]:
    return [int(found) for found in STATUS_LINE.findall(received)]


async def still_serving(port: int) -> None:
    received = await answered(port, whole(DISCOVER, connection="close"))
    assert statuses(received) == [200], received[:300]
    assert b'"supportedVersions":["2026-07-28"]' in received


async def reset_mid_response(port: int) -> bytes:
    """A progress call's stream, reset (RST) as soon as its first bytes arrive."""
    message = request(
        "tools/call",
        {
            "name": "test_tool_with_progress",
            "_meta": {**DISCOVER["params"]["_meta"], "progressToken": "p"},
        },
    )
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(whole(message))
    first = await stream.receive_some(10)
    stream.socket.setsockopt(*LINGER_RESET)
    await stream.aclose()
    return first


async def listen_never_read(port: int) -> bytes:
    """A listen stream whose reader never reads while tools/list changes many times."""
    listen = request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    stream.socket.setsockopt(SOL_SOCKET, SO_RCVBUF, 1024)
    await stream.send_all(whole(listen))
    trigger = whole(request("tools/call", {"name": "test_trigger_tool_change"}), connection="close")
    for _ in range(30):
        assert statuses(await answered(port, trigger)) == [200]
    await stream.aclose()
    return b""  # what matters is that the server serves on, and logs nothing


async def h2_prior_knowledge(port: int) -> bytes:
    """h2c with prior knowledge: one good request, one with a body not JSON."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    sent = [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "localhost"),
        (":path", "/mcp"),
    ]
    sent += list(headers(DISCOVER).items())
    for body in (json.dumps(DISCOVER).encode(), b"{nope"):
        stream_id = connection.get_next_available_stream_id()
        connection.send_headers(stream_id, sent)
        connection.send_data(stream_id, body, end_stream=True)
    await stream.send_all(connection.data_to_send())
    found: list[bytes] = []
    ended = 0
    async with stream:
        with trio.move_on_after(5):
            while ended < 2 and (data := await stream.receive_some(65536)):
                for event in connection.receive_data(data):
                    if isinstance(event, h2.events.ResponseReceived):
                        found += [value for name, value in event.headers if name == b":status"]
                    elif isinstance(event, h2.events.StreamEnded):
                        ended += 1
                await stream.send_all(connection.data_to_send())
    return b"".join(b"HTTP/1.1 " + status + b" h2\r\n" for status in found)


LINGER_RESET = (SOL_SOCKET, SO_LINGER, struct.pack("ii", 1, 0))

BODY = json.dumps(DISCOVER).encode()
GOOD = head(DISCOVER, BODY) + BODY
#: name -> (what is sent, the statuses allowed in what comes back).
ATTACKS: dict[str, tuple[bytes | list[bytes], set[int]]] = {
    "garbage request line": (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", {400}),
    "no version": (b"POST /mcp\r\nhost: localhost\r\n\r\n", {400}),
    "HTTP/0.9": (b"GET /mcp\r\n\r\n", {400}),
    # hypercorn's h11 reads any HTTP/x.y line as HTTP/1.1, and uppercases the method.
    "HTTP/3.0": (GOOD.replace(b"HTTP/1.1", b"HTTP/3.0", 1), {200, 400, 505}),
    "absolute target": (
        GOOD.replace(b"POST /mcp", b"POST http://localhost/mcp", 1),
        {200, 400, 404},
    ),
    "asterisk target": (GOOD.replace(b"POST /mcp", b"POST *", 1), {400, 404}),
    "lowercase method": (GOOD.replace(b"POST", b"post", 1), {200, 400, 405}),
    "space in target": (GOOD.replace(b"/mcp", b"/m cp", 1), {400}),
    "header without colon": (GOOD.replace(b"host: localhost", b"host localhost", 1), {400}),
    "obsolete line folding": (
        GOOD.replace(b"\r\nhost: localhost", b"\r\nhost: localhost\r\n x", 1),
        {400, 421},
    ),
    "bare LF": (GOOD.replace(b"\r\n", b"\n"), {200, 400}),
    "NUL in header": (GOOD.replace(b"host: localhost", b"host: local\x00host", 1), {400, 421}),
    "huge header": (
        GOOD.replace(b"host: localhost", b"x-big: " + b"a" * 200_000 + b"\r\nhost: localhost", 1),
        {400, 413, 431},
    ),
    "many headers": (
        GOOD.replace(
            b"host: localhost",
            b"".join(b"x-%d: 1\r\n" % n for n in range(5000)) + b"host: localhost",
            1,
        ),
        {200, 400, 431},
    ),
    "two hosts": (
        GOOD.replace(b"host: localhost", b"host: localhost\r\nhost: evil.example", 1),
        {400, 421},
    ),
    "two content-lengths": (
        GOOD.replace(b"content-length", b"content-length: 3\r\ncontent-length", 1),
        {400},
    ),
    "negative content-length": (
        head(DISCOVER, BODY).replace(b"content-length: %d" % len(BODY), b"content-length: -1")
        + BODY,
        {400},
    ),
    "content-length too long": (
        head(DISCOVER, BODY).replace(
            b"content-length: %d" % len(BODY), b"content-length: %d" % (len(BODY) + 50)
        )
        + BODY,
        {400, 408},
    ),
    "content-length too short": (
        head(DISCOVER, BODY).replace(b"content-length: %d" % len(BODY), b"content-length: 5")
        + BODY,
        {400},
    ),
    "chunked and content-length": (
        head(DISCOVER, BODY, **{"transfer-encoding": "chunked"})
        + b"%x\r\n" % len(BODY)
        + BODY
        + b"\r\n0\r\n\r\n",
        {200, 400},
    ),
    "chunked cut short": (
        head(DISCOVER, BODY).replace(
            b"content-length: %d" % len(BODY), b"transfer-encoding: chunked"
        )
        + b"%x\r\n" % len(BODY)
        + BODY[:20],
        {400, 408},
    ),
    "chunk size not hex": (
        head(DISCOVER, BODY).replace(
            b"content-length: %d" % len(BODY), b"transfer-encoding: chunked"
        )
        + b"zz\r\n"
        + BODY
        + b"\r\n0\r\n\r\n",
        {400},
    ),
    "chunked gzip": (
        head(DISCOVER, BODY).replace(
            b"content-length: %d" % len(BODY), b"transfer-encoding: gzip, chunked"
        )
        + b"%x\r\n" % len(BODY)
        + BODY
        + b"\r\n0\r\n\r\n",
        {400, 501},
    ),
    "pipelined with garbage": (GOOD + GOOD + b"NOT HTTP\r\n\r\n", {200, 400}),
    "pipelined bad then good": (head(DISCOVER, b"{x") + b"{x" + GOOD, {400, 200}),
    "expect 100-continue": (head(DISCOVER, BODY, expect="100-continue") + BODY, {100, 200}),
    "one byte at a time": ([bytes([byte]) for byte in GOOD], {200}),
    "head only, then silence": (head(DISCOVER, BODY), {408}),
    "upgrade h2c": (
        head(
            DISCOVER,
            BODY,
            connection="Upgrade, HTTP2-Settings",
            upgrade="h2c",
            **{"http2-settings": "AAMAAABkAARAAAAAAAIAAAAA"},
        )
        + BODY,
        {101, 200},
    ),
    "upgrade websocket": (
        head(DISCOVER, BODY, connection="Upgrade", upgrade="websocket") + BODY,
        {200, 400, 426},
    ),
    "latin-1 header": (
        GOOD.replace(b"host: localhost", b"x-name: \xe9\xff\r\nhost: localhost", 1),
        {200},
    ),
    "utf-8 mcp-name": (
        whole(request("tools/call", {"name": "greet"})).replace(
            b"mcp-name: greet", "mcp-name: gr\u00e9et".encode()
        ),
        {400},
    ),
}
INTERACTIONS: dict[str, tuple[Callable[[int], Awaitable[bytes]], set[int]]] = {
    "reset mid-response": (reset_mid_response, {200}),
    "listen never read": (listen_never_read, {200}),
    "h2 prior knowledge": (h2_prior_knowledge, {200, 400}),
}


def assert_no_traceback(served: ServeProcess) -> None:
    found = [line for line in served.lines if "Traceback" in line or " ERROR " in line]
    assert found == [], served.stderr[-5000:]


@pytest.fixture
async def served(tmp_path: Path) -> Any:
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    async with presa_serve("--store", store, "--read-timeout", "1") as process:
        yield process


async def test_malformed_http_gets_a_clients_fault_and_the_server_serves_on(
    served: ServeProcess,
) -> None:
    """RFC 9112 §2.2, §3, §5, §6.3, §7.1 and streamable-http §Sending Messages: what
    HTTP cannot read is a 4xx (or a close), never a 5xx, and never a server that
    stops answering or logs a traceback."""
    port = port_of(served)
    wrong = []
    for name, (data, allowed) in ATTACKS.items():
        received = await exchange(port, data)
        found = statuses(received)
        if not set(found) <= allowed:
            wrong.append((name, found, received[:300]))
        await still_serving(port)
    for name, (interaction, allowed) in INTERACTIONS.items():
        found = statuses(await interaction(port))
        if not set(found) <= allowed:
            wrong.append((name, found, b""))
        await still_serving(port)
    assert wrong == [], "\n".join(repr(item) for item in wrong)
    assert_no_traceback(served)


def port_of(served: ServeProcess) -> int:
    return int(served.url.rsplit(":", 1)[1].split("/")[0])


@settings(
    max_examples=1,
    derandomize=True,
    phases=[Phase.generate],
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_near_valid_json_rpc_over_one_connection_gets_the_specs_answers(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Spec-mandated (basic/index §Error Codes; streamable-http §Sending Messages;
    SEP-2663 §Task Polling), on a fixed seed: 80 near-valid requests, task
    follow-ups among them, one after another on a kept-alive HTTP/1.1 connection
    to a real server storing tasks in SQLite, are each answered as the spec allows,
    the server logs no traceback, and every task it created reads back by its id."""
    directory = tmp_path_factory.mktemp("fuzz")
    store = f"sqlite:///{directory / 'tasks.db'}"
    shaper = McpClient(build_app())  # the demo's method table, for the headers
    created: list[str] = []
    async with presa_serve("--store", store) as served:
        client = await H11Client.connect(port_of(served))
        for _ in range(80):
            message = data.draw(near_valid_messages(created))
            if message.get("method") == "subscriptions/listen":
                continue  # a listen stays open: the attacks above cover it
            sent = list(headers_of(shaper, message).items())
            with trio.fail_after(10):
                answer = await client.post(json.dumps(message).encode(), sent)
            content_type = answer.headers.get(b"content-type", b"").decode()
            if content_type == "text/event-stream":
                messages = [
                    json.loads(line[5:])
                    for line in answer.body.split(b"\n")
                    if line.startswith(b"data:")
                ]
            elif answer.body and content_type == "application/json":
                messages = [answer.json()]
            else:
                messages = []
            final = check_answer(answer.status, content_type, messages, message) or {}
            result = final.get("result", {})
            if result.get("resultType") == "task":
                assert result["taskId"] not in created
                created.append(result["taskId"])
            if answer.headers.get(b"connection") == b"close":
                await client.aclose()
                client = await H11Client.connect(port_of(served))
        for task_id in created:
            get = request("tasks/get", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES)
            answer = await client.post(
                json.dumps(get).encode(), list(headers_of(shaper, get).items())
            )
            assert answer.status == 200
            assert answer.json()["result"]["taskId"] == task_id
        await client.aclose()
        assert_no_traceback(served)
