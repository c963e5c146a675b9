"""A real hypercorn on a loopback port, the headers a correct client sends, a task client."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import attrs
import httpx
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, Scope

from presa_trio.http.app import McpApp
from presa_trio.testing import headers_for, meta, request
from tests.streams import sse_messages


@attrs.define(eq=False)
class Tracked:
    """ASGI middleware counting the HTTP calls in flight, to wait until all returned."""

    app: McpApp
    in_flight: int = 0
    _returned: trio.Event = attrs.field(factory=trio.Event)

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
            self._returned.set()
            self._returned = trio.Event()

    async def wait_idle(self) -> None:
        """Return once no HTTP call of the app is running."""
        while self.in_flight:
            await self._returned.wait()


@attrs.frozen
class Served:
    """A running server: its endpoint URL, the app, and the call tracker."""

    url: str
    app: McpApp
    tracked: Tracked

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/", 1)[0])


async def start(
    app: McpApp, nursery: trio.Nursery, **config_options: Any
) -> tuple[Served, trio.Event]:
    """Serve ``app`` on a free loopback port; ``config_options`` set hypercorn's Config."""
    config = Config.from_mapping(config_options)
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    tracked = Tracked(app)
    shutdown = trio.Event()
    urls: list[str] = await nursery.start(
        partial(serve, tracked, config, shutdown_trigger=shutdown.wait)
    )
    return Served(urls[0] + "/mcp", app, tracked), shutdown


#: Serves an app on a free loopback port; setting the Event shuts it down.
ServeApp = Callable[[McpApp], Awaitable[tuple[Served, trio.Event]]]


#: The client capabilities of a task client: the Tasks extension and elicitation.
TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}


@attrs.define
class TaskClient:
    """A client of one served app's tasks, over real HTTP; it never accepts a 503."""

    http: httpx.AsyncClient
    served: Served

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        message = request(method, params, capabilities=TASKS)
        name = params.get("taskId", params.get("name") if method == "tools/call" else None)
        extra = {} if name is None else {"mcp-name": name}
        response = await self.http.post(
            self.served.url, json=message, headers=headers(message, **extra)
        )
        assert response.status_code in (200, 500), response.text  # never a 503
        answer: dict[str, Any] = response.json()
        return answer

    async def create(self, tool: str, **arguments: Any) -> str:
        answer = await self.send("tools/call", name=tool, arguments=arguments)
        task_id: str = answer["result"]["taskId"]
        return task_id

    async def reached(self, task_id: str, *statuses: str) -> dict[str, Any]:
        """The task once in one of ``statuses`` (polled, as a client without a stream does)."""
        while True:
            result: dict[str, Any] = (await self.send("tasks/get", taskId=task_id))["result"]
            if result["status"] in statuses:
                return result
            await trio.sleep(0.02)

    async def settled(self, task_id: str) -> dict[str, Any]:
        return await self.reached(task_id, "completed", "failed", "cancelled")


def headers(message: dict[str, Any], **extra: str) -> dict[str, str]:
    """The headers a correct client sends with ``message``; ``Host`` is httpx's own."""
    sent = {k: v for k, v in headers_for(message).items() if k != "host"}
    sent.update(extra)
    return sent


#: The server of tests/e2e/pausing_server.py: a ``pause`` tool in flight as long as asked.
PAUSING = "tests.e2e.pausing_server:server"


async def call_pause(
    http: httpx.AsyncClient,
    url: str,
    seconds: float,
    events: list[dict[str, Any]],
    running: trio.Event,
) -> None:
    """``pause`` with a progress token; every event kept, ``running`` set at the first;
    a dropped stream just ends."""
    await call_reporting(http, url, "pause", {"seconds": seconds}, events, running)


async def call_reporting(
    http: httpx.AsyncClient,
    url: str,
    tool: str,
    arguments: dict[str, Any],
    events: list[dict[str, Any]],
    running: trio.Event,
) -> None:
    """``tool``, which reports progress first, called with a progress token; every event
    kept, ``running`` set at the first; a dropped stream just ends."""
    message = request(
        "tools/call",
        {"name": tool, "arguments": arguments, "_meta": meta(progressToken="p")},
        request_id=8,
    )
    try:
        async with http.stream("POST", url, json=message, headers=headers(message)) as response:
            async for message in sse_messages(response):
                events.append(message)
                running.set()
    except httpx.TransportError:
        pass
