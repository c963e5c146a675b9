"""End to end: HAProxy, round-robin without stickiness, in front of three ``presa-trio
serve`` processes on one PostgreSQL, with the recipe docs/haproxy.cfg as it ships.

Rules of this file: HAProxy is the distribution's package, installed by the
module (``apt-get``, tests/haproxy.py) when missing and possible, else the
module is skipped with the reason; it runs in the foreground, a child of the
test, as a master and its worker (as the distribution's service runs it, so it
can be reloaded), with the recipe's addresses replaced by the servers' ports (each the port
its first process bound) and a free one for HAProxy. The three servers are
real child processes on one fresh database of the run's PostgreSQL, but in the one test
that needs servers no process could be (closing a connection as a request comes, every
time), which are in-process ones. Every request goes
through HAProxy; which process served it is read from the processes' access
logs. Every wait is bounded by ``trio.fail_after``; nothing asserts how long
anything took.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import h11
import httpx
import trio

from presa_trio.testing import request
from tests.e2e.harness import headers
from tests.e2e.peers import (
    CONFIRM,
    PATIENCE,
    TASKS,
    Peer,
    listening,
    served_url,
    until_completed,
)
from tests.haproxy import recipe
from tests.postgres import Postgres, free_port
from tests.streams import sse_messages

#: The name clients reach HAProxy by, which every process admits (docs/haproxy.cfg).
PUBLIC_NAME = "mcp.example.com"
SERVER_OPTIONS = (
    *("--drain-delay", "2", "--shutdown-grace", "5", "--store-timeout", "2"),
    *("--task-lease", "2", "--task-events", "--allow-host", PUBLIC_NAME),
)


@attrs.define(eq=False)
class Backend:
    """One ``presa-trio serve`` process on a fixed port, which can be stopped and started:
    the port the first process bound (``--port 0``), then the same."""

    store: str
    log: Path
    port: int = 0
    process: trio.Process | None = None

    def served(self) -> int:
        """How many MCP requests this port's processes have logged so far."""
        return self.log.read_text().count("POST /mcp")

    async def run(
        self, *, task_status: trio.TaskStatus[trio.Process] = trio.TASK_STATUS_IGNORED
    ) -> None:
        command = [
            *(sys.executable, "-m", "presa_trio", "serve", "--port", str(self.port)),
            *("--store", self.store, *SERVER_OPTIONS),
        ]
        with self.log.open("ab") as stderr:
            await trio.run_process(command, check=False, stderr=stderr, task_status=task_status)

    async def start(self, nursery: trio.Nursery) -> None:
        """Start the process and return once it answers ``/readyz`` directly."""
        self.process = await nursery.start(self.run)
        if self.port == 0:  # the first start: the log is this process's alone
            with trio.fail_after(PATIENCE):
                port = urlsplit(await served_url(self.process, self.log, 0)).port
            assert port is not None
            self.port = port
        async with httpx.AsyncClient(timeout=5) as http:
            with trio.fail_after(PATIENCE):
                while True:  # polled, as HAProxy polls it
                    try:
                        ready = await http.get(f"http://localhost:{self.port}/readyz")
                        if ready.status_code == 200:
                            return
                    except httpx.TransportError:
                        pass
                    await trio.sleep(0.05)

    async def stop(self) -> int:
        """SIGTERM, as an orchestrator stops it; its exit status."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        with trio.fail_after(PATIENCE):
            return await self.process.wait()


@asynccontextmanager
async def behind_haproxy(
    haproxy: str, store: str, tmp_path: Path
) -> AsyncIterator[tuple[str, list[Backend]]]:
    """Three servers and HAProxy before them, by the recipe; the frontend's MCP URL."""
    backends = [Backend(store, tmp_path / f"backend-{n}.log") for n in range(3)]
    async with AsyncExitStack() as stack:
        nursery = await stack.enter_async_context(trio.open_nursery())
        stack.callback(nursery.cancel_scope.cancel)
        for backend in backends:
            await backend.start(nursery)
        ports = [backend.port for backend in backends]
        url = await stack.enter_async_context(haproxy_before(haproxy, ports, tmp_path))
        yield url, backends


@asynccontextmanager
async def haproxy_before(haproxy: str, ports: list[int], tmp_path: Path) -> AsyncIterator[str]:
    """HAProxy by the recipe, in front of the servers on ``ports``; its frontend's MCP URL.

    HAProxy runs as its distribution's service runs it, a master and its worker
    (``-W``), so it can be reloaded (:func:`reload`).
    """
    frontend = free_port()
    (tmp_path / "haproxy.cfg").write_text(recipe(frontend, ports))
    async with trio.open_nursery() as nursery:
        command = [haproxy, "-W", "-db", "-f", str(tmp_path / "haproxy.cfg")]
        command += ["-p", str(tmp_path / "haproxy.pid")]
        with (tmp_path / "haproxy.log").open("ab") as log:
            await nursery.start(
                partial(trio.run_process, command, check=False, stdout=log, stderr=log)
            )
        url = f"http://127.0.0.1:{frontend}/mcp"
        async with httpx.AsyncClient(timeout=10) as http:
            with trio.fail_after(PATIENCE):
                while True:  # until HAProxy listens
                    try:
                        await http.get(url.replace("/mcp", "/healthz"))
                        break
                    except httpx.TransportError:
                        await trio.sleep(0.05)
        yield url
        nursery.cancel_scope.cancel(reason="HAProxy no longer needed")


async def test_every_request_of_a_task_s_life_lands_on_any_process(
    haproxy: str, postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "Behind HAProxy"): with round-robin and no
    stickiness, tasks created on one process are read, answered, listened to,
    streamed and cancelled through whichever process HAProxy picks, and every
    process served some of it."""
    async with (
        behind_haproxy(haproxy, postgres_url, tmp_path) as (url, backends),
        httpx.AsyncClient(timeout=10) as http,
    ):
        peer = Peer(http, url)
        parked = await park(peer)
        with trio.fail_after(PATIENCE):
            listened = await listen_until_completed(peer, parked)
        assert listened[-1]["result"]["content"][0]["text"] == "Delete confirmed: true"

        quick = {"name": "slow_compute", "arguments": {"seconds": 1, "label": "streamed"}}
        streamed = (await peer.call("tools/call", quick))["taskId"]
        with trio.fail_after(PATIENCE):
            events = await stream_to_the_end(peer, streamed)
        last = events[-2]["params"]  # the last event, before the stream's result
        assert (last["type"], last["payload"]["status"]) == ("presa_trio.task.status", "completed")
        assert "result" in events[-1]

        slow = {"name": "slow_compute", "arguments": {"seconds": 60}}
        doomed = (await peer.call("tools/call", slow))["taskId"]
        await peer.call("tasks/cancel", {"taskId": doomed})
        with trio.fail_after(PATIENCE):
            await peer.until(doomed, "cancelled")
    assert all(backend.served() > 0 for backend in backends)  # stopped: every line written


async def test_the_processes_check_the_host_and_origin_clients_send(
    haproxy: str, postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "Behind HAProxy"; spec-notes §4, DNS
    rebinding): HAProxy passes the client's Host and Origin on as they are, so the
    processes' checks hold behind it: the name they admit (``--allow-host``) is
    served, another Host is 421 and another Origin 403, while the health checks'
    own Host keeps every process in rotation."""
    async with (
        behind_haproxy(haproxy, postgres_url, tmp_path) as (url, backends),
        httpx.AsyncClient(timeout=10) as http,
    ):
        message = request("tools/list", {}, capabilities=TASKS)

        async def status(**extra: str) -> int:
            sent = headers(message, **extra)
            return (await http.post(url, json=message, headers=sent)).status_code

        for _ in backends:  # round-robin: three in a row reach the three processes
            assert await status(host=PUBLIC_NAME, origin=f"https://{PUBLIC_NAME}") == 200
        for _ in backends:
            assert await status(host="elsewhere.example") == 421
        for _ in backends:
            assert await status(host=PUBLIC_NAME, origin="https://elsewhere.example") == 403
    for backend in backends:  # stopped: every line written
        served = backend.log.read_text()
        assert all(f"POST /mcp status={code}" in served for code in (200, 421, 403))


async def test_a_reload_of_haproxy_keeps_an_open_stream(
    haproxy: str, postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "Behind HAProxy"): after a reload (SIGUSR2 to
    HAProxy's master, as ``systemctl reload haproxy`` sends it), a listen stream
    opened before it stays on the old HAProxy process and still hears its task's
    completion, answered through the new one."""
    async with (
        behind_haproxy(haproxy, postgres_url, tmp_path) as (url, _),
        httpx.AsyncClient(timeout=10) as http,
    ):
        peer = Peer(http, url)
        parked = await park(peer)
        with trio.fail_after(PATIENCE):
            listened = await listen_until_completed(peer, parked, partial(reload, tmp_path))
    assert listened[-1]["result"]["content"][0]["text"] == "Delete confirmed: true"


async def reload(tmp_path: Path) -> None:
    """Reload the HAProxy of :func:`behind_haproxy`; return once its new worker serves."""
    log = tmp_path / "haproxy.log"
    loaded = log.read_text().count("Loading success")
    os.kill(int((tmp_path / "haproxy.pid").read_text()), signal.SIGUSR2)
    while True:  # polled: HAProxy says so in its log
        if log.read_text().count("Loading success") > loaded:
            return
        await trio.sleep(0.05)


async def park(peer: Peer) -> str:
    """A ``confirm_delete`` task, once it asks for its input; its id."""
    confirm = {"name": "confirm_delete", "arguments": {"filename": "f"}}
    task_id: str = (await peer.call("tools/call", confirm))["taskId"]
    with trio.fail_after(PATIENCE):
        await peer.until(task_id, "input_required")
    return task_id


async def listen_until_completed(
    peer: Peer, task_id: str, meanwhile: Callable[[], Awaitable[None]] | None = None
) -> list[dict[str, Any]]:
    """A ``subscriptions/listen`` on ``task_id`` through one connection while its answer
    goes through another, once ``meanwhile`` is done; the notifications heard, to the
    ``completed`` one."""
    async with listening(peer, task_id) as incoming:
        await anext(incoming)  # the acknowledgement: the stream listens
        if meanwhile is not None:
            await meanwhile()
        async with httpx.AsyncClient(timeout=10) as other:
            answers = {"confirm-delete": CONFIRM}
            update = {"taskId": task_id, "inputResponses": answers}
            await Peer(other, peer.url).call("tasks/update", update)
        heard = await until_completed(incoming)
    return [message["params"] for message in heard]


async def stream_to_the_end(peer: Peer, task_id: str) -> list[dict[str, Any]]:
    """``tasks/stream`` of ``task_id``: every message, to its result."""
    message = request("tasks/stream", {"taskId": task_id}, request_id=8, capabilities=TASKS)
    sent = headers(message, **{"mcp-name": task_id})
    async with peer.http.stream("POST", peer.url, json=message, headers=sent) as response:
        return [message async for message in sse_messages(response)]


async def test_a_rolling_restart_under_load_fails_no_request(
    haproxy: str, postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "Behind HAProxy"): the three processes are
    stopped (SIGTERM) and started again one by one while clients keep calling
    through HAProxy, on connections of their own: two a plain tool, one creating a
    task and reading it back. The health checks take each draining process out
    before it stops accepting, every request gets its answer, and every task
    created completes, once: those a stop cut short are recovered and run again."""
    answered: list[str] = []
    failures: list[str] = []
    created: list[str] = []

    async def load(call: dict[str, Any]) -> None:
        async with httpx.AsyncClient(timeout=10) as http:
            peer = Peer(http, url)
            while True:
                try:
                    body = await peer.send("tools/call", call)
                    if "taskId" in body.get("result", {}):
                        created.append(body["result"]["taskId"])
                        read = {"taskId": body["result"]["taskId"]}
                        body = await peer.send("tasks/get", read)
                except httpx.HTTPError as error:
                    failures.append(repr(error))
                else:
                    (answered if "result" in body else failures).append(repr(body))
                await trio.lowlevel.checkpoint()

    async with (
        behind_haproxy(haproxy, postgres_url, tmp_path) as (url, backends),
        trio.open_nursery() as restarted,
    ):
        async with trio.open_nursery() as clients:
            for _ in range(2):
                clients.start_soon(load, {"name": "greet", "arguments": {"name": "Ada"}})
            clients.start_soon(load, {"name": "slow_compute", "arguments": {"seconds": 3}})
            for backend in backends:
                assert await backend.stop() == 0
                before = backend.served()
                await backend.start(restarted)
                with trio.fail_after(PATIENCE):
                    while True:  # until HAProxy sends it requests again
                        if backend.served() > before:
                            break
                        await trio.sleep(0.05)
            clients.cancel_scope.cancel(reason="every process restarted")
        async with httpx.AsyncClient(timeout=10) as http:
            with trio.fail_after(PATIENCE):
                for task_id in created:
                    await Peer(http, url).until(task_id, "completed")
        checks = (tmp_path / "haproxy.log").read_text()
        restarted.cancel_scope.cancel(reason="test over")  # each process drains: its log whole
    assert failures == []
    assert len(answered) > 0
    assert len(created) > 0
    logs = "".join(backend.log.read_text() for backend in backends)
    # At most one line each: a second would be a second completion written. None is possible:
    # a completion whose process stopped while the store's answer was on its way is
    # committed, read back completed above, and logged by no process.
    wrong = [task_id for task_id in created if logs.count(f"task {task_id} completed") > 1]
    assert wrong == [], "\n".join(  # what became of them, access lines left out
        line
        for line in logs.splitlines()
        if " presa_trio.access: " not in line and any(task_id in line for task_id in wrong)
    )
    assert any(f"task {task_id} recovered" in logs for task_id in created)  # cut by a stop
    for server in "abc":  # taken out by its readiness, never by a refused connection
        assert f"presa/{server} is DOWN, reason: Layer7 wrong status, code: 503" in checks
    assert "Layer4" not in checks


async def test_a_process_killed_mid_task_loses_nothing(
    haproxy: str, postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "Behind HAProxy"; docs/task-stores.md,
    recovery): kill -9 of one process while tasks run on each; once its leases run
    out the others recover its tasks, and every task completes exactly once."""
    async with (
        behind_haproxy(haproxy, postgres_url, tmp_path) as (url, backends),
        httpx.AsyncClient(timeout=10) as http,
    ):
        peer = Peer(http, url)
        call = {"name": "slow_compute", "arguments": {"seconds": 3}}
        task_ids = [(await peer.call("tools/call", call))["taskId"] for _ in range(6)]
        killed = backends[0]
        assert killed.process is not None
        killed.process.kill()
        with trio.fail_after(PATIENCE):
            for task_id in task_ids:
                await until_answered(peer, task_id, "completed")
    logs = "".join(backend.log.read_text() for backend in backends)
    for task_id in task_ids:
        assert logs.count(f"task {task_id} completed") == 1, task_id
    survivors = "".join(backend.log.read_text() for backend in backends[1:])
    assert any(f"task {task_id} recovered" in survivors for task_id in task_ids)


async def until_answered(peer: Peer, task_id: str, status: str) -> None:
    """tasks/get until ``status``; a request the killed process took with it is sent again."""
    while True:
        try:
            if (await peer.call("tasks/get", {"taskId": task_id}))["status"] == status:
                return
        except (httpx.HTTPError, ValueError):
            pass  # in flight on the killed process: HAProxy answers 502, not JSON
        await trio.sleep(0.1)


async def test_a_database_restart_costs_retries_only(
    haproxy: str, postgres: Postgres, postgres_url: str, tmp_path: Path
) -> None:
    """presa-defined (docs/deployment.md, "Behind HAProxy"): while PostgreSQL is down
    every process answers ``/readyz`` 503 and a request gets a retryable answer (the
    server's -32603 ``retryable``, or HAProxy's own 503 once it has taken every
    process out); once it is back, HAProxy sends requests again, and a task parked
    before the restart takes its answer and completes."""
    async with (
        behind_haproxy(haproxy, postgres_url, tmp_path) as (url, _),
        httpx.AsyncClient(timeout=10) as http,
    ):
        peer = Peer(http, url)
        task_id = await park(peer)
        await trio.to_thread.run_sync(postgres.stop)
        try:
            with trio.fail_after(PATIENCE):
                assert retryable(await get_task(http, url, task_id))
        finally:
            await trio.to_thread.run_sync(postgres.start)
        with trio.fail_after(PATIENCE):
            while True:  # polled, as a client retries
                response = await get_task(http, url, task_id)
                if response.status_code == 200 and "result" in response.json():
                    break
                assert retryable(response)
                await trio.sleep(0.1)
        answers = {"confirm-delete": CONFIRM}
        await peer.call("tasks/update", {"taskId": task_id, "inputResponses": answers})
        with trio.fail_after(PATIENCE):
            await peer.until(task_id, "completed")


async def get_task(http: httpx.AsyncClient, url: str, task_id: str) -> httpx.Response:
    message = request("tasks/get", {"taskId": task_id}, capabilities=TASKS)
    return await http.post(url, json=message, headers=headers(message, **{"mcp-name": task_id}))


def retryable(response: httpx.Response) -> bool:
    """A retryable answer: HAProxy's 503 (no process ready), or the server's -32603
    with ``data.retryable``."""
    if response.status_code == 503 and "json" not in response.headers.get("content-type", ""):
        return True
    error = response.json().get("error", {})
    return bool(error.get("code") == -32603 and error.get("data", {}).get("retryable"))


async def test_no_request_is_sent_on_a_connection_left_idle(haproxy: str, tmp_path: Path) -> None:
    """presa-defined (docs/deployment.md, "Behind HAProxy"): HAProxy sends each request
    to a process on a connection of its own, never on one an earlier answer left
    idle, which the process may be closing for idleness as the request comes (a
    request so sent is lost: HAProxy closes its client's connection without an
    answer, and logs nothing). The servers here are ones whose idle timeout always
    fires as the next request comes: each answers the first request on a
    connection and closes the connection on the next, unanswered. Every request a
    client sends on its one connection through HAProxy is answered."""
    server = ClosingServer()
    async with trio.open_nursery() as nursery:
        listeners = [(await nursery.start(trio.serve_tcp, server.serve, 0))[0] for _ in range(3)]
        ports = [listener.socket.getsockname()[1] for listener in listeners]
        async with (
            haproxy_before(haproxy, ports, tmp_path) as url,
            httpx.AsyncClient(timeout=10) as http,
        ):
            statuses: list[int | str] = []
            for _ in range(9):
                try:
                    statuses.append((await http.post(url, json={})).status_code)
                except httpx.TransportError as error:
                    statuses.append(repr(error))
        nursery.cancel_scope.cancel(reason="test over")
    assert statuses == [200] * 9, statuses
    assert server.dropped == 0


@attrs.define(eq=False)
class ClosingServer:
    """An HTTP/1.1 server that answers one request per connection, and closes the
    connection when a second comes on it, unanswered (counted in ``dropped``)."""

    dropped: int = 0

    async def serve(self, stream: trio.SocketStream) -> None:
        with suppress(trio.BrokenResourceError):  # a health check's connection, reset
            async with stream:
                await self.answer_once(stream)

    async def answer_once(self, stream: trio.SocketStream) -> None:
        connection = h11.Connection(h11.SERVER)
        while not isinstance(event := connection.next_event(), h11.EndOfMessage):
            if event is h11.NEED_DATA:
                data = await stream.receive_some()
                if not data:
                    return
                connection.receive_data(data)
        body = b"{}"
        head = [(b"content-type", b"application/json"), (b"content-length", b"2")]
        for event in (h11.Response(status_code=200, headers=head), h11.Data(data=body)):
            await stream.send_all(connection.send(event) or b"")
        await stream.send_all(connection.send(h11.EndOfMessage()) or b"")
        if await stream.receive_some():  # the next request: closed unanswered
            self.dropped += 1
