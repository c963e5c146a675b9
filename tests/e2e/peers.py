"""Real ``presa-trio serve`` processes (over HTTP or stdio), and a peer speaking to each."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio

from presa_trio.testing import request
from tests.e2e.harness import headers
from tests.e2e.serve_process import SERVING
from tests.streams import sse_messages

TASKS: dict[str, Any] = {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}
CONFIRM = {"action": "accept", "content": {"confirm": True}}
#: A short lease, so the restarted server claims the killed one's tasks soon.
LEASE_SECONDS = "1"
#: Hang guard for every wait on the server; a passing run needs a few seconds.
PATIENCE = 60


class Peer:
    """A JSON-RPC client of one server process."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.next_id = 0

    async def send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC response to one request: a result or an error."""
        self.next_id += 1
        message = request(method, params, request_id=self.next_id, capabilities=TASKS)
        extra = {"mcp-name": params["taskId"]} if "taskId" in params else {}
        response = await self.http.post(self.url, json=message, headers=headers(message, **extra))
        body: dict[str, Any] = json.loads(response.content)
        return body

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = await self.send(method, params)
        assert "result" in body, body
        result: dict[str, Any] = body["result"]
        return result

    async def until(self, task_id: str, status: str) -> dict[str, Any]:
        """``tasks/get`` until the task reads ``status``; its DetailedTask then."""
        while True:
            task = await self.call("tasks/get", {"taskId": task_id})
            if task["status"] == status:
                return task
            await trio.sleep(0.05)


@asynccontextmanager
async def listening(peer: Peer, task_id: str) -> AsyncIterator[AsyncGenerator[dict[str, Any]]]:
    """A listen stream on ``peer`` for ``task_id``: its messages, the acknowledgement first."""
    message = request(
        "subscriptions/listen",
        {"notifications": {"taskIds": [task_id]}},
        request_id=7,
        capabilities=TASKS,
    )
    async with peer.http.stream("POST", peer.url, json=message, headers=headers(message)) as stream:
        yield sse_messages(stream)


async def until_completed(incoming: AsyncGenerator[dict[str, Any]]) -> list[dict[str, Any]]:
    """The notifications of a listen stream up to the one of its task's completion."""
    seen = [await anext(incoming)]
    while seen[-1]["params"]["status"] != "completed":
        seen.append(await anext(incoming))
    return seen


@asynccontextmanager
async def serving(
    store: str,
    log: Path,
    lease: str = LEASE_SECONDS,
    *options: str,
    program: Sequence[str] = ("-m", "presa_trio"),
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[tuple[trio.Process, Peer]]:
    """``presa-trio serve --store STORE OPTIONS``; yields the process once it says
    where it serves (on the port it bound: ``--port 0``).

    ``program`` is what Python runs: the command line, or a launcher around it;
    ``env`` its environment (default: this one's). stderr is appended to ``log``.
    """
    command = [
        sys.executable,
        *program,
        "serve",
        "--port",
        "0",
        "--store",
        store,
        "--task-lease",
        lease,
        *options,
    ]
    with log.open("ab") as stderr:
        logged_before = stderr.tell()
        async with trio.open_nursery() as nursery:
            process: trio.Process = await nursery.start(
                partial(trio.run_process, command, check=False, stderr=stderr, env=env)
            )
            try:
                with trio.fail_after(PATIENCE):
                    url = await served_url(process, log, logged_before)
                async with httpx.AsyncClient(timeout=10) as http:
                    yield process, Peer(http, url)
            finally:
                if process.returncode is None:
                    process.kill()


async def served_url(process: trio.Process, log: Path, offset: int) -> str:
    """The URL of the line saying where ``process`` serves, once ``log`` has it past
    ``offset``. Polled: the log is a file, which the test reads afterwards."""
    while True:
        written = (await trio.Path(log).read_bytes())[offset:].decode(errors="replace")
        if found := SERVING.search(written):
            return found[1]
        assert process.returncode is None, f"the server exited: {written}"
        await trio.sleep(0.05)


#: A lease long enough that no process claims another's live task in these tests.
LONG_LEASE = "30"


@asynccontextmanager
async def two_servers(
    url: str, tmp_path: Path, lease: str = LONG_LEASE, *options: str
) -> AsyncIterator[tuple[tuple[trio.Process, Peer], tuple[trio.Process, Peer]]]:
    """Servers A and B on one database; their logs are ``a.log`` and ``b.log``."""
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(serving(url, tmp_path / "a.log", lease, *options))
        b = await stack.enter_async_context(serving(url, tmp_path / "b.log", lease, *options))
        yield a, b


@attrs.define(eq=False)
class StdioPeer:
    """The client side of a stdio server: write lines, read messages."""

    process: trio.Process
    _buffer: bytes = b""
    received: list[dict[str, Any]] = attrs.field(factory=list)

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send_all(json.dumps(message).encode() + b"\n")

    async def next_message(self) -> dict[str, Any] | None:
        """The next line as JSON, or ``None`` at end of output."""
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            chunk = await self.process.stdout.receive_some()
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        self.received.append(message)
        return message

    async def response_to(self, request_id: int) -> dict[str, Any]:
        """Read until the response with ``request_id``; other messages are kept."""
        while True:
            message = await self.next_message()
            assert message is not None, "the server closed stdout"
            if message.get("id") == request_id and "method" not in message:
                return message

    async def call(
        self, method: str, params: dict[str, Any], request_id: int, **options: Any
    ) -> dict[str, Any]:
        await self.send(request(method, params, request_id=request_id, **options))
        return await self.response_to(request_id)
