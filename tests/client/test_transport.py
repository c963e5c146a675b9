"""The client reads any server's event stream as the SSE format allows it to be written.

Rules of this file: the peer is a small ASGI app that writes its bytes
exactly as given, served to the client's real :class:`HttpTransport` through
httpx's ASGI transport; what the client gets is asserted message by message.
Over stdio the peer is a child process, or, where the test counts what the
client does with the child's bytes, a stand-in whose stdout gives them
chunk by chunk to the real :class:`StdioTransport`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import MutableMapping
from types import SimpleNamespace
from typing import Any, cast

import attrs
import httpx
import pytest
import trio
from trio.testing import MemorySendStream

from presa_trio.client.errors import ProtocolFailure, Unauthorized
from presa_trio.client.transport import HttpTransport, NotModern, StdioTransport, open_stdio
from presa_trio.wire.meta import META_SUBSCRIPTION_ID

URL = "http://peer.test/mcp"
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
RESULT = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}


def peer(chunks: list[bytes]) -> httpx.AsyncClient:
    """An HTTP client whose every POST is answered by an event stream of ``chunks``."""

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app))


async def replies_of(chunks: list[bytes], count: int) -> list[dict[str, Any]]:
    async with peer(chunks) as http:
        transport = HttpTransport(URL, http)
        async with transport.exchange({"jsonrpc": "2.0", "id": 1}, {}) as replies:
            return [await replies.next() for _ in range(count)]


async def test_lf_and_cr_line_ends_a_bom_comments_and_multi_line_data_are_read() -> None:
    """Spec-mandated (HTML §9.2.5–9.2.6, read through wire/sse.py; streamable-http
    §Receiving Messages): a server that ends lines with LF or CR, opens with a byte
    order mark, sends comments, leaves out the space after the colon, or splits its
    JSON over several ``data`` lines is read the same as presa's own framing."""
    progress = json.dumps(PROGRESS, indent=1).replace("\n", "\ndata:")
    stream = (
        f"\ufeff: hello\n\nevent: message\rdata:{progress}\r\r: ping\n\ndata: "
        f"{json.dumps(RESULT)}\n\n"
    ).encode()
    assert await replies_of([stream[:7], stream[7:40], stream[40:]], 2) == [PROGRESS, RESULT]


async def test_a_stream_that_ends_before_its_response_is_a_protocol_failure() -> None:
    """Spec-mandated (streamable-http §Sending Messages: the stream carries the
    response; HTML §9.2.5: an event the stream ends inside is not dispatched)."""
    with pytest.raises(ProtocolFailure, match="without a response"):
        await replies_of([b"data: " + json.dumps(RESULT).encode() + b"\n"], 1)


async def test_a_cancelled_stdio_exchange_with_a_server_that_reads_nothing_ends() -> None:
    """presa-defined (the client's stdio transport: a request the client stops waiting
    for is cancelled with ``notifications/cancelled``, basic/patterns/cancellation):
    with a server that reads nothing, whose input pipe is full, that notice cannot be
    written; the shielded write of it is bounded, so the exchange still ends and the
    server is stopped, rather than the client hanging for ever."""
    child = [sys.executable, "-c", "import time; time.sleep(3600)"]
    blob = "x" * (1 << 20)  # more than any pipe holds
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"blob": blob}}
    gave_up = False
    rescued = False

    async def rescue(process: trio.Process) -> None:
        """A shielded write no cancellation reaches hangs the test: after a long wait,
        end it by killing the child (its pipe breaks), and say so."""
        nonlocal rescued
        await trio.sleep(30)
        rescued = True
        process.kill()

    async with open_stdio(child) as transport, trio.open_nursery() as watch:
        watch.start_soon(rescue, transport.process)
        with trio.move_on_after(0.5) as waiting:
            async with transport.exchange(request, {}) as replies:
                await replies.next()
        gave_up = waiting.cancelled_caught
        watch.cancel_scope.cancel()
        transport.process.kill()  # it would not exit on its closed input either
    assert gave_up
    assert not rescued, "the cancellation notice's write was not bounded"


async def test_a_stdio_reply_names_a_request_only_by_its_exact_id() -> None:
    """Spec-mandated (basic/index §Requests: an id is a string or an integer;
    basic/patterns/progress §Progress Flow: a progress token is one too): over stdio a
    response with ``"id": true`` and progress with ``"progressToken": true`` or ``1.0``
    belong to no request, though Python finds ``True`` and ``1.0`` equal to the id 1;
    request 1 gets only its own progress and its own response."""

    def progress(token: Any, value: int) -> dict[str, Any]:
        params = {"progressToken": token, "progress": value}
        return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}

    own = progress(1, 2)
    stray = [progress(True, 1), progress(1.0, 1), {"jsonrpc": "2.0", "id": True, "result": {}}]
    lines = [*stray, own, RESULT]
    script = (
        "import sys\n"
        "sys.stdin.readline()\n"
        f"sys.stdout.write({''.join(json.dumps(m) + chr(10) for m in lines)!r})\n"
        "sys.stdout.flush()\n"
        "sys.stdin.read()\n"
    )
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}
    async with open_stdio([sys.executable, "-c", script]) as transport:
        with trio.fail_after(10):
            async with transport.exchange(request, {}) as replies:
                assert [await replies.next(), await replies.next()] == [own, RESULT]


async def test_a_servers_cancellation_over_stdio_reaches_the_request_it_names() -> None:
    """Spec-mandated (basic/patterns/cancellation: a server MUST send
    ``notifications/cancelled`` referencing a ``subscriptions/listen`` request when it
    tears that stream down; schema ``CancelledNotification``: on stdio): with two
    requests open, the cancellation goes to the one its ``requestId`` names, and that
    exchange counts as ended by the server: leaving it sends no cancellation back
    (cancellation §Behavior Requirements: only requests believed in progress)."""
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    script = (
        "import json, sys\n"
        "sys.stdin.readline(); sys.stdin.readline()\n"
        f"sys.stdout.write({json.dumps(cancel) + chr(10)!r}); sys.stdout.flush()\n"
        "after = json.loads(sys.stdin.readline())\n"
        "answer = {'jsonrpc': '2.0', 'id': 1, 'result': {'after': after}}\n"
        "sys.stdout.write(json.dumps(answer) + '\\n'); sys.stdout.flush()\n"
        "sys.stdin.read()\n"
    )

    def message(request_id: int, method: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {}}

    async with open_stdio([sys.executable, "-c", script]) as transport:
        with trio.fail_after(10):
            async with transport.exchange(message(1, "tools/call"), {}) as first:
                async with transport.exchange(message(2, "subscriptions/listen"), {}) as second:
                    assert await second.next() == cancel
                async with transport.exchange(message(3, "tools/list"), {}):
                    answer = await first.next()
    # What the server read after the listen ended: the next request, not a cancellation.
    assert answer["result"]["after"] == message(3, "tools/list")


class CountedChunk(bytes):
    """A chunk of a child's stdout that counts the bytes copied to join it to what came
    before it as new ``bytes`` (a ``bytearray`` extended in place copies none of those)."""

    copied: list[int]

    def __radd__(self, before: object) -> bytes:
        if not isinstance(before, bytes):  # a bytearray, extended in place
            return NotImplemented
        self.copied.append(len(before) + len(self))
        return before + bytes(self)


@attrs.define(eq=False)
class ChildStdout(trio.abc.ReceiveStream):
    """A child's stdout giving ``chunks``, one a read, then its end."""

    chunks: list[bytes]

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint()
        return self.chunks.pop(0) if self.chunks else b""

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


async def stdio_replies(chunks: list[bytes]) -> dict[str, Any]:
    """The first reply to request 1 of a child whose stdout gives ``chunks``."""
    child = SimpleNamespace(stdin=MemorySendStream(), stdout=ChildStdout(chunks), returncode=0)
    transport = StdioTransport("child", cast(trio.Process, child))
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}
    async with trio.open_nursery() as nursery, transport.exchange(request, {}) as replies:
        nursery.start_soon(transport.read_lines)
        return await replies.next()


async def test_a_long_stdio_line_in_many_chunks_is_copied_once() -> None:
    """presa-defined (line_reader.py): the client reads a line of its child's stdout in
    time linear in its length; joining each chunk to the line so far copied the line
    again on every chunk, so a 20 MB response took seconds and a 100 MB one minutes."""
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"blob": "x" * 1_000_000}}
    line = json.dumps(answer).encode() + b"\n"
    copied: list[int] = []
    chunks = [CountedChunk(line[at : at + 1000]) for at in range(0, len(line), 1000)]
    for chunk in chunks:
        chunk.copied = copied
    assert await stdio_replies(list(chunks)) == answer
    assert sum(copied) <= len(line)


async def test_a_stdio_line_the_childs_exit_cuts_short_is_no_reply() -> None:
    """Spec-mandated (basic/transports/stdio: messages are delimited by newlines): a
    response without its newline when the child's stdout ends is not taken as one; the
    request has no answer."""
    with pytest.RaisesGroup(pytest.RaisesExc(ProtocolFailure, match="stopped before answering")):
        await stdio_replies([json.dumps(RESULT).encode()])


def answering(status: int, content_type: str, body: bytes, **headers: str) -> httpx.AsyncClient:
    """An HTTP client whose every POST is answered with ``status`` and ``body`` as given."""

    async def app(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        sent = [(b"content-type", content_type.encode())]
        for name, value in headers.items():
            sent.append((name.replace("_", "-").encode(), value.encode()))
        await send({"type": "http.response.start", "status": status, "headers": sent})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app))


async def first_reply(http: httpx.AsyncClient) -> dict[str, Any]:
    async with http:
        transport = HttpTransport(URL, http)
        async with transport.exchange({"jsonrpc": "2.0", "id": 1}, {}) as replies:
            return await replies.next()


async def test_an_event_whose_data_is_empty_carries_no_message() -> None:
    """Spec-mandated (HTML §9.2.6: an event's data is what its ``data`` lines hold; 2025-11-25
    basic/transports §Resumability and Redelivery: the priming event, an id and an empty
    ``data``, with which a server of the initialize era opens a stream it can resume):
    an event with nothing in its data is passed over, not read as a message that is no
    JSON."""
    stream = b"id: 0\ndata:\n\ndata\n\ndata: " + json.dumps(RESULT).encode() + b"\n\n"
    assert await replies_of([stream], 1) == [RESULT]


async def test_an_event_or_line_that_is_no_json_rpc_message_is_the_servers_mistake() -> None:
    """Spec-mandated (basic/index §Messages: every message is JSON-RPC 2.0, ``"jsonrpc":
    "2.0"``, a response with the id of its request): an SSE event or a stdio line without
    ``jsonrpc``, or a result without an id, is no reply to take or to pass over: the
    exchange fails naming it."""
    no_version = {"id": 1, "result": {}}
    no_id = {"jsonrpc": "2.0", "result": {}}
    for wrong in (no_version, no_id):
        event = b"data: " + json.dumps(wrong).encode() + b"\n\n"
        with pytest.raises(ProtocolFailure, match="no MCP response or notification"):
            await replies_of([event], 1)
        line = json.dumps(wrong).encode() + b"\n"
        with pytest.RaisesGroup(
            pytest.RaisesExc(ProtocolFailure, match="no MCP response or notification")
        ):
            await stdio_replies([line])


async def test_a_json_rpc_answer_under_another_media_type_is_no_mcp_answer() -> None:
    """Spec-mandated (streamable-http §Sending Messages 5: the server MUST answer a request
    with ``text/event-stream`` or ``application/json``): a response under ``text/plain``
    is no MCP server's, said as such, not taken as the answer."""
    body = json.dumps(RESULT).encode()
    with pytest.raises(NotModern, match="HTTP 200 \\(text/plain\\)"):
        await first_reply(answering(200, "text/plain", body))


async def test_a_403_that_asks_no_more_scope_is_no_sign_in() -> None:
    """Spec-mandated (basic/authorization §Error Handling: 403 is invalid scopes or
    insufficient permissions; §Runtime Insufficient Scope Errors: only
    ``error="insufficient_scope"`` calls for a step-up): any other 403 is read as the
    answer it carries, not as a sign-in to make."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "forbidden"}}
    for challenge in ('Bearer error="invalid_token"', 'Bearer scope="files:read"', ""):
        said = {"www_authenticate": challenge} if challenge else {}
        http = answering(403, "application/json", json.dumps(error).encode(), **said)
        assert await first_reply(http) == error, challenge
    step_up = answering(
        403, "application/json", b"{}", www_authenticate='Bearer error="insufficient_scope"'
    )
    with pytest.raises(Unauthorized):
        await first_reply(step_up)


async def test_a_stdio_exchange_left_before_its_answer_is_cancelled_on_the_wire() -> None:
    """Spec-mandated (basic/patterns/cancellation §Transport-Specific Cancellation: over
    stdio the client MUST send ``notifications/cancelled`` referencing the request;
    §Behavior Requirements: only for a request still in progress): leaving an exchange
    before its response writes that notice after the request; leaving one answered
    writes nothing more."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}

    async def written(chunks: list[bytes], read: bool) -> list[dict[str, Any]]:
        stdin = MemorySendStream()
        child = SimpleNamespace(stdin=stdin, stdout=ChildStdout(chunks), returncode=None)
        transport = StdioTransport("child", cast(trio.Process, child))
        async with trio.open_nursery() as nursery, transport.exchange(request, {}) as replies:
            if read:
                nursery.start_soon(transport.read_lines)
                assert await replies.next() == RESULT
        return [json.loads(line) for line in stdin.get_data_nowait().splitlines()]

    left = await written([], read=False)
    assert left[0] == request
    assert left[1]["method"] == "notifications/cancelled"
    assert left[1]["params"]["requestId"] == 1
    assert len(left) == 2
    assert await written([json.dumps(RESULT).encode() + b"\n"], read=True) == [request]


async def test_a_stdio_notification_finds_its_listen_by_its_subscription_id() -> None:
    """Spec-mandated (basic/patterns/subscriptions: each notification of a listen carries
    its ``_meta.subscriptionId``, the listen's request id): over stdio, with a call and a
    listen open at once, a notification naming the listen reaches the listen."""
    meta = {META_SUBSCRIPTION_ID: 2}
    params = {"uri": "file:///a", "_meta": meta}
    updated = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params}
    stdout = ChildStdout([json.dumps(updated).encode() + b"\n"])
    child = SimpleNamespace(stdin=MemorySendStream(), stdout=stdout, returncode=0)
    transport = StdioTransport("child", cast(trio.Process, child))

    def message(request_id: int, method: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {}}

    async with (
        trio.open_nursery() as nursery,
        transport.exchange(message(1, "tools/call"), {}),
        transport.exchange(message(2, "subscriptions/listen"), {}) as listen,
    ):
        nursery.start_soon(transport.read_lines)
        assert await listen.next() == updated
