"""End to end: ``presa-trio serve`` as a real process — a user's server, the access
log, and the graceful shutdown on real signals.

Rules of this file: the server is a child process on a free loopback port
(``--port 0``; the URL comes from its "serving" line); every wait is bounded
by ``trio.fail_after``; load is a fixed number of requests.
"""

from __future__ import annotations

import json
import re
import resource
import signal
import socket
import sys
from typing import Any

import h11
import httpx
import pytest
import trio

from presa_trio.testing import request
from presa_trio.wire.meta import META_SUBSCRIPTION_ID
from tests.e2e.harness import PAUSING, call_pause, headers
from tests.e2e.raw_http import H11Client, wire_headers
from tests.e2e.serve_process import ServeProcess, presa_serve, serving
from tests.streams import sse_messages


async def post(http: httpx.AsyncClient, url: str, message: Any, **extra: str) -> httpx.Response:
    return await http.post(url, json=message, headers=headers(message, **extra))


async def test_a_user_server_is_served_by_module_and_attribute() -> None:
    """presa-defined (``presa-trio serve MODULE:ATTR``): the README's hello server,
    served from the command line on a free port, answers its own tool; the
    "serving" line names the port really bound."""
    async with presa_serve("examples.hello_server:server") as served:
        assert not served.url.endswith(":0/mcp")
        message = request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
        with trio.fail_after(10):
            async with httpx.AsyncClient(timeout=5) as http:
                response = await post(http, served.url, message)
    assert response.status_code == 200
    assert response.json()["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]


async def test_each_request_gets_one_access_line_rejections_included() -> None:
    """presa-defined (logs): one INFO line per request with method, path, Mcp-Method,
    Mcp-Name, status, bytes, duration and the JSON-RPC error code; a 403 rejection
    is logged like any answer."""
    call = request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
    unknown = request("tools/call", {"name": "nobody", "arguments": {}}, request_id=2)
    async with presa_serve("examples.hello_server:server") as served:
        with trio.fail_after(10):
            async with httpx.AsyncClient(timeout=5) as http:
                ok = await post(http, served.url, call)
                await post(http, served.url, unknown)
                await post(http, served.url, call, origin="http://evil.example")
            await served.wait_for_line("status=403")
    access = [line for line in served.lines if "presa_trio.access" in line]
    assert len(access) == 3
    first = re.search(
        r"INFO presa_trio\.access: POST /mcp status=200 bytes=(\d+) ms=[0-9.]+ "
        r"mcp-method=tools/call mcp-name=greet$",
        access[0],
    )
    assert first is not None, access[0]
    assert int(first[1]) == len(ok.content)
    assert "mcp-name=nobody jsonrpc-error=-32602" in access[1]
    assert "status=403" in access[2]


async def test_a_head_request_s_line_counts_no_body_bytes() -> None:
    """presa-defined (logs; RFC 9110 §9.3.2): a HEAD request, as a load balancer's health
    check sends it, gets GET's status and no body, and its access line counts the bytes
    sent in the body: none, where GET's line counts GET's."""
    async with presa_serve() as served:
        base = served.url.removesuffix("/mcp")
        with trio.fail_after(10):
            async with httpx.AsyncClient(timeout=5) as http:
                head = await http.head(f"{base}/readyz")
                get = await http.get(f"{base}/readyz")
            await served.wait_for_line("GET /readyz status=200")
    assert (head.status_code, head.content) == (200, b"")
    access = [line for line in served.lines if "presa_trio.access" in line]
    assert "HEAD /readyz status=200 bytes=0 " in access[0]
    assert f"GET /readyz status=200 bytes={len(get.content)} " in access[1]


async def test_json_lines_carry_the_access_fields() -> None:
    """presa-defined (``--log-format json``): every stderr line is one JSON object; the
    access record has its fields by name."""
    call = request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
    async with presa_serve("examples.hello_server:server", "--log-format", "json") as served:
        with trio.fail_after(10):
            async with httpx.AsyncClient(timeout=5) as http:
                ok = await post(http, served.url, call)
            await served.wait_for_line("presa_trio.access")
    records = [json.loads(line) for line in served.lines if line]
    access = next(r for r in records if r["logger"] == "presa_trio.access")
    assert access["level"] == "INFO"
    assert (access["method"], access["path"], access["status"]) == ("POST", "/mcp", 200)
    assert (access["mcp_method"], access["mcp_name"]) == ("tools/call", "greet")
    assert access["bytes"] == len(ok.content)
    assert access["jsonrpc_error"] is None
    assert isinstance(access["ms"], float)


async def open_listen(
    http: httpx.AsyncClient, url: str, listened: list[dict[str, Any]], acked: trio.Event
) -> None:
    """A listen stream read to its end; every message kept; ``acked`` set at the first."""
    listen = request(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, request_id=7
    )
    async with http.stream("POST", url, json=listen, headers=headers(listen)) as response:
        async for message in sse_messages(response):
            listened.append(message)
            acked.set()


async def load(
    http: httpx.AsyncClient, url: str, statuses: list[int], requests: int, busy: trio.Event
) -> None:
    """Up to ``requests`` discover calls, one after another, until the server refuses;
    ``busy`` is set once 20 are answered."""
    message = request("server/discover")
    for _ in range(requests):
        try:
            statuses.append((await post(http, url, message)).status_code)
        except httpx.TransportError:
            return
        if len(statuses) >= 20:
            busy.set()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_starts_one_graceful_shutdown_under_load(signum: signal.Signals) -> None:
    """Spec-mandated (subscriptions §Graceful Closure: a server tearing a listen down
    SHOULD answer it with its result first); presa-defined (shutdown): SIGINT,
    SIGTERM or SIGHUP (a terminal hanging up) stops accepting, ends the listen with
    its result, lets the request in flight finish within the grace, answers every
    request it accepted, and exits 0 without a traceback."""
    listened: list[dict[str, Any]] = []
    paused: list[dict[str, Any]] = []
    statuses: list[int] = []
    async with presa_serve(PAUSING, "--shutdown-grace", "30") as served:
        with trio.fail_after(60):
            async with httpx.AsyncClient(timeout=30) as http, trio.open_nursery() as nursery:
                acked, running, busy = trio.Event(), trio.Event(), trio.Event()
                nursery.start_soon(open_listen, http, served.url, listened, acked)
                nursery.start_soon(call_pause, http, served.url, 1.0, paused, running)
                for _ in range(4):
                    nursery.start_soon(load, http, served.url, statuses, 300, busy)
                for event in (acked, running, busy):
                    await event.wait()
                served.process.send_signal(signum)
            assert await served.stopped() == 0
    assert listened[0]["method"] == "notifications/subscriptions/acknowledged"
    assert listened[-1] == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": listened[-1]["result"],
    }
    assert listened[-1]["result"]["_meta"][META_SUBSCRIPTION_ID] == 7
    assert paused[-1]["result"]["content"] == [{"type": "text", "text": "rested"}]
    assert set(statuses) == {200}
    assert f"{signum.name} received: shutting down gracefully" in served.stderr
    assert "Traceback" not in served.stderr


async def signalled_during_a_long_call(grace: str, second: bool) -> tuple[ServeProcess, list[Any]]:
    """Serve with ``--shutdown-grace GRACE``, start a 600 s call, send SIGTERM (and, with
    ``second``, SIGINT once the shutdown is logged); the exited process and the call's
    events."""
    paused: list[dict[str, Any]] = []
    async with presa_serve(PAUSING, "--shutdown-grace", grace) as served:
        with trio.fail_after(60):
            async with httpx.AsyncClient(timeout=60) as http, trio.open_nursery() as nursery:
                running = trio.Event()
                nursery.start_soon(call_pause, http, served.url, 600, paused, running)
                await running.wait()
                served.process.send_signal(signal.SIGTERM)
                if second:
                    await served.wait_for_line("shutting down gracefully")
                    served.process.send_signal(signal.SIGINT)
            assert await served.stopped() == 0
    assert "Traceback" not in served.stderr
    return served, paused


async def test_requests_still_running_after_the_grace_are_cancelled() -> None:
    """presa-defined (shutdown): the grace is bounded — a request that outlasts it is
    cancelled (its stream ends without a response) and the process still exits 0."""
    _, paused = await signalled_during_a_long_call("0.5", second=False)
    assert [event.get("method") for event in paused] == ["notifications/progress"]


async def test_a_second_signal_ends_the_grace_at_once() -> None:
    """presa-defined (shutdown): a second SIGINT or SIGTERM during the grace cancels what
    is still running instead of waiting out the grace (600 s here); the exit is still
    clean."""
    served, paused = await signalled_during_a_long_call("600", second=True)
    assert [event.get("method") for event in paused] == ["notifications/progress"]
    assert "SIGINT received again: stopping now" in served.stderr


async def test_a_client_that_reads_nothing_holds_the_shutdown_no_longer_than_its_grace() -> None:
    """presa-defined (docs/deployment.md, "Draining"): a client that reads none of a
    response larger than the sockets hold leaves the server's write waiting on it; at
    the end of ``--shutdown-grace`` the connection is closed all the same, and the
    process exits 0 (it waited for ever: hypercorn's write is shielded)."""
    message = request("tools/call", {"name": "long_answer", "arguments": {"size": 16 << 20}})
    async with presa_serve("tests.e2e.unread_server:server", "--shutdown-grace", "0.5") as served:
        port = int(served.url.removesuffix("/mcp").rsplit(":", 1)[1])
        sock = trio.socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: held
        await sock.connect(("127.0.0.1", port))
        client = H11Client(trio.SocketStream(sock))
        body = json.dumps(message).encode()
        with trio.fail_after(30):
            await client.send(
                h11.Request(
                    method="POST",
                    target="/mcp",
                    headers=[*wire_headers(message), ("content-length", str(len(body)))],
                )
            )
            await client.send(h11.Data(data=body))
            await client.send(h11.EndOfMessage())
            assert isinstance(await client.next_event(), h11.Response)  # the body is under way
            served.process.send_signal(signal.SIGTERM)
            assert await served.stopped() == 0
        await client.aclose()
    assert "Traceback" not in served.stderr


async def hold_listen(port: int) -> H11Client:
    """A connection holding a ``subscriptions/listen`` stream, its head received."""
    listen = request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    body = json.dumps(listen).encode()
    client = await H11Client.connect(port)
    sent = [*wire_headers(listen), ("content-length", str(len(body)))]
    await client.send(h11.Request(method="POST", target="/mcp", headers=sent))
    await client.send(h11.Data(data=body))
    await client.send(h11.EndOfMessage())
    head = await client.next_event()
    assert isinstance(head, h11.Response)
    assert head.status_code == 200
    return client


@pytest.mark.skipif(
    resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 1024, reason="needs 1024 open files"
)
async def test_a_client_holding_its_listen_streams_leaves_room_for_another() -> None:
    """presa-defined (docs/deployment.md, "Request limits"): started with a soft limit of
    64 open files under a higher hard one, ``presa-trio serve`` raises it to the hard
    one, so a client holding 100 listen streams (its bound is 1000) leaves another
    client's connection accepted and answered (at 64, the streams took every file,
    and connections waited unaccepted)."""
    command = [
        *("sh", "-c", 'ulimit -Sn 64 && exec "$0" "$@"'),
        *(sys.executable, "-m", "presa_trio", "serve", "--port", "0"),
    ]
    async with serving(command) as served:
        port = int(served.url.removesuffix("/mcp").rsplit(":", 1)[1])
        with trio.fail_after(30):
            held = [await hold_listen(port) for _ in range(100)]
            async with httpx.AsyncClient(timeout=10) as http:
                response = await post(http, served.url, request("server/discover"))
            assert response.status_code == 200
            for client in held:
                await client.aclose()


async def test_a_server_whose_lifetime_fails_exits_with_one_line_and_status_1() -> None:
    """presa-defined (docs/tasks.md, the failure policy): when the server-lifetime
    nursery (where the task runner runs) fails, the process does not linger answering
    503: it shuts down and exits with status 1 and one line on stderr, for a
    supervisor to restart it. Until then it serves."""
    discover = request("server/discover", {})
    doom = request("tools/call", {"name": "doom", "arguments": {}}, request_id=2)
    async with presa_serve("tests.e2e.failing_server:server") as served:
        with trio.fail_after(20):
            async with httpx.AsyncClient(timeout=5) as http:
                assert (await post(http, served.url, discover)).status_code == 200
                assert (await post(http, served.url, doom)).status_code == 200
            status = await served.stopped()
    assert status == 1
    assert served.lines[-1] == (
        "presa-trio: error: the server cannot run: RuntimeError: the runner lost its store for good"
    )


async def test_a_draining_process_reports_not_ready_while_it_still_accepts() -> None:
    """presa-defined (docs/deployment.md, "Draining"): after SIGTERM, with
    ``--drain-delay``, the process still accepts connections and answers
    ``/readyz`` 503 ``draining`` (``/healthz`` 200), so a load balancer takes it
    out before it stops accepting; a second SIGTERM ends it at once."""
    async with presa_serve("--drain-delay", "600") as served:
        base = served.url.removesuffix("/mcp")
        with trio.fail_after(10):
            async with httpx.AsyncClient(timeout=5) as http:
                assert (await http.get(f"{base}/readyz")).status_code == 200
                served.process.send_signal(signal.SIGTERM)
                # Logged once /readyz says so: the signal's own line comes a moment before.
                await served.wait_for_line("draining: /readyz answers 503")
                ready = await http.get(f"{base}/readyz", headers={"connection": "close"})
                live = await http.get(f"{base}/healthz", headers={"connection": "close"})
            assert (ready.status_code, ready.text) == (503, "draining\n")
            assert live.status_code == 200
            served.process.send_signal(signal.SIGTERM)
            assert await served.stopped() == 0


@pytest.mark.parametrize(("keep_alive", "closed"), [("0.2", True), ("60", False)])
async def test_an_idle_connection_is_closed_after_the_keep_alive(
    keep_alive: str, closed: bool
) -> None:
    """presa-defined (docs/deployment.md, "Request limits"; RFC 9112 §9.5): with
    ``--keep-alive 0.2`` an HTTP/1.1 connection idle after its answer is closed by
    the server, well before hypercorn's own 5 s; with ``--keep-alive 60`` the same
    connection still carries a second request after that wait."""
    async with presa_serve("--keep-alive", keep_alive) as served:
        host, port = served.url.removeprefix("http://").removesuffix("/mcp").rsplit(":", 1)
        head = f"GET /healthz HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
        with trio.fail_after(10):
            stream = await trio.open_tcp_stream(host, int(port))
            async with stream:
                await stream.send_all(head)
                first = await stream.receive_some()
                assert first.startswith(b"HTTP/1.1 200")
                with trio.move_on_after(2.5):  # far past 0.2 s, well short of 5 s
                    while await stream.receive_some():
                        pass  # the rest of the first answer, if it came apart
                    assert closed, "the server closed a connection it should have kept"
                    return
                assert not closed, "the idle connection was still open after 2.5 s"
                await stream.send_all(head)
                assert (await stream.receive_some()).startswith(b"HTTP/1.1 200")
