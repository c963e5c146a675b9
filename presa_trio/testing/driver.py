"""The wire-level in-process client: drive a server's ASGI app directly.

:func:`connect` builds the app for a :class:`~presa_trio.server.Server`,
runs its lifespan (so extensions such as Tasks have their nursery), and
hands back an :class:`McpClient` that speaks the 2026-07-28 wire to it,
headers and ``_meta`` included, and returns results as JSON.
:meth:`McpClient.send_request` returns a :class:`Reply` with the
notifications sent before the result; :meth:`McpClient.listen` opens a
``subscriptions/listen`` stream.

Below that sits the ASGI driver presa's own tests use for the transport
itself: :meth:`McpClient.stream` and :meth:`McpClient.post` send any bytes
with any headers and return the raw :class:`Response`. httpx's ASGI
transport buffers the whole response, which hides SSE timing and never lets
a test close a stream early. This driver calls the app directly: the request
body goes in through ``receive``, the response comes out event by event
through ``send``, and leaving :meth:`McpClient.stream` delivers
``http.disconnect`` exactly as a client closing the connection would.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from presa_trio.http.app import McpApp
from presa_trio.server import Server
from presa_trio.testing.background import open_nursery_behind_block
from presa_trio.wire.headers import CORE_NAME_PARAMS, request_headers
from presa_trio.wire.headers import header_value as header_value
from presa_trio.wire.meta import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, PROTOCOL_VERSION
from presa_trio.wire.models import JSONObject
from presa_trio.wire.sse import Comment, Event, EventStreamParser, parse_events
from presa_trio.wire.tasks import TASKS_EXTENSION

#: What the client declares unless told otherwise: every client capability of
#: the core, and no extension.
DEFAULT_CAPABILITIES: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {}}
#: The same, plus the Tasks extension: a task tool called with these becomes a task.
TASKS_CAPABILITIES: dict[str, Any] = {**DEFAULT_CAPABILITIES, "extensions": {TASKS_EXTENSION: {}}}
#: The core's ``Mcp-Name`` rules, as the server's method table reads them.
NAME_PARAMS = CORE_NAME_PARAMS


def meta(capabilities: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A valid request ``_meta`` with the given capabilities (default: all three)."""
    return {
        META_PROTOCOL_VERSION: PROTOCOL_VERSION,
        META_CLIENT_CAPABILITIES: dict(
            DEFAULT_CAPABILITIES if capabilities is None else capabilities
        ),
        **extra,
    }


def request(
    method: str,
    params: Mapping[str, Any] | None = None,
    *,
    request_id: int | str = 1,
    capabilities: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A JSON-RPC request whose ``_meta`` is filled in unless ``params`` sets one."""
    full = dict(params or {})
    full.setdefault("_meta", meta(capabilities))
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": full}


def headers_for(
    message: Mapping[str, Any],
    name_params: Mapping[str, str] = NAME_PARAMS,
    param_headers: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, str]:
    """The headers a correct client sends with ``message``.

    ``param_headers`` (header -> path into params) adds ``Mcp-Param-*`` for
    each value present.

    Spec: streamable-http §Standard Request Headers, §Client Behavior.
    """
    return {"host": "localhost:3000", **request_headers(message, name_params, param_headers)}


#: Request headers: a mapping, or ``(name, value)`` pairs when a name repeats.
Headers = Mapping[str, str] | Sequence[tuple[str, str]]


def http_scope(
    headers: Headers,
    *,
    method: str = "POST",
    path: str = "/mcp",
    query: bytes = b"",
    client: tuple[str, int] = ("127.0.0.1", 50000),
) -> dict[str, Any]:
    """The ASGI scope of one HTTP/1.1 request, as hypercorn hands it to the app."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "server": ("127.0.0.1", 3000),
        "client": client,
        "headers": [(k.lower().encode(), v.encode("latin-1")) for k, v in pairs],
    }


@attrs.define
class Response:
    """A response as received: status, headers (lowercased) and the body chunks."""

    status: int = 0
    headers: dict[str, str] = attrs.field(factory=dict)
    chunks: list[bytes] = attrs.field(factory=list)
    # How many ``http.request`` events the app pulled from ``receive``.
    body_events_read: int = 0

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def json(self) -> Any:
        return json.loads(self.body)

    def events(self) -> list[dict[str, Any]]:
        """The JSON messages of an SSE body, in order (comments skipped)."""
        return [json.loads(event.data) for event in parse_events(self.body)]

    @property
    def is_event_stream(self) -> bool:
        """Whether the body is an SSE stream (else one JSON message)."""
        return self.headers.get("content-type", "").startswith("text/event-stream")

    def messages(self) -> list[dict[str, Any]]:
        """Every JSON-RPC message of the response, SSE or plain JSON alike."""
        return self.events() if self.is_event_stream else [self.json()]


class RequestFailed(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, status: int, error: JSONObject) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        #: The HTTP status the error came with (e.g. 400 for -32602).
        self.status = status
        #: The JSON-RPC error code; compare with :mod:`presa_trio.wire.errors`.
        self.code: int = error["code"]
        self.message: str = error.get("message", "")
        self.data: Any = error.get("data")


def answer_of(method: str, response: Response) -> list[JSONObject]:
    """The messages of ``response``, ending in a JSON-RPC response; else an ``AssertionError``."""
    try:
        messages = response.messages()
    except ValueError:
        messages = []
    final = messages[-1] if messages else None
    if not isinstance(final, dict) or ("result" not in final and "error" not in final):
        kind = response.headers.get("content-type", "no content type")
        raise AssertionError(
            f"{method} was answered HTTP {response.status} {kind}, with no JSON-RPC"
            f" response: {response.body[:200]!r}"
        )
    return messages


@attrs.frozen
class Reply:
    """A request's answer: its result, and what the server sent before it."""

    # The JSON-RPC ``result`` (``resultType``, ``_meta`` and all).
    result: JSONObject
    # Notifications sent on the request's own stream (progress, log messages).
    notifications: list[JSONObject]


@attrs.define(eq=False)
class Stream:
    """An open response: read its SSE messages one at a time."""

    response: Response
    _chunks: trio.MemoryReceiveChannel[bytes]
    _parser: EventStreamParser = attrs.field(factory=EventStreamParser)
    # What the parser found and no one has read yet.
    _found: list[Event | Comment] = attrs.field(factory=list)
    # A plain JSON body is one message; set once it was read.
    _body_read: bool = False
    # Set when the block that opened the response ends: the client has left, and
    # nothing more will come than what was already received.
    closed: bool = attrs.field(default=False, init=False)

    async def next_event(self) -> Event | Comment:
        """The next SSE event, or comment (a keep-alive's ``: ping``)."""
        while not self._found:
            self._found += self._parser.feed(await self._chunks.receive())
        return self._found.pop(0)

    async def next_message(self) -> dict[str, Any]:
        """The next JSON-RPC message: of an SSE stream, skipping comments, or a JSON body's one.

        Past the last message, ``trio.EndOfChannel``.
        """
        if not self.response.is_event_stream:
            if self._body_read:
                raise trio.EndOfChannel
            self._body_read = True
            return (await self.read_to_end()).json()  # type: ignore[no-any-return]
        while True:
            item = await self.next_event()
            if isinstance(item, Event):
                return json.loads(item.data)  # type: ignore[no-any-return]

    async def read_to_end(self) -> Response:
        """Read until the app ends the response."""
        async for _ in self._chunks:
            pass
        return self.response


@attrs.define(eq=False)
class McpClient:
    """Drives an :class:`McpApp` in-process, one ASGI call per request."""

    app: McpApp
    # What requests are sent to: the app itself, or middleware around it.
    asgi: Any = None

    def headers_for(self, body: bytes | Mapping[str, Any]) -> dict[str, str]:
        """The headers a correct client sends with ``body``, by this server's method table."""
        message = body if isinstance(body, Mapping) else {}
        method, params = message.get("method"), message.get("params")
        dispatcher = self.app.dispatcher
        param_headers = (
            dispatcher.param_headers(method, params)
            if isinstance(method, str) and isinstance(params, dict)
            else {}
        )
        return headers_for(message, dispatcher.name_params, param_headers)

    @asynccontextmanager
    async def stream(
        self,
        body: bytes | Mapping[str, Any],
        headers: Headers | None = None,
        *,
        method: str = "POST",
        path: str = "/mcp",
        query: bytes = b"",
        body_chunks: Sequence[bytes] | None = None,
        client: tuple[str, int] = ("127.0.0.1", 50000),
    ) -> AsyncIterator[Stream]:
        """Open a request; on exit the client disconnects and the app must finish.

        The app answers in a nursery behind the block: its failure ends the
        block as an ``ExceptionGroup``, an exception of the block alone
        comes out as itself (:mod:`presa_trio.testing.background`).

        ``body_chunks``, when given, is sent instead of ``body``, one
        ``http.request`` event per chunk, as a chunked upload arrives.
        ``client`` is the address and port the request comes from: requests
        with the same one came on the same connection.
        """
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        pending = list(body_chunks) if body_chunks is not None else [raw]
        sent_headers = headers if headers is not None else self.headers_for(body)
        scope = http_scope(sent_headers, method=method, path=path, query=query, client=client)
        disconnected = trio.Event()
        started = trio.Event()
        response = Response()
        # Unbounded: the response keeps every chunk anyway (``response.chunks``), so a
        # bound saves nothing, and the app's ``send`` never fails (which would fail the
        # handler that sent) however far it runs ahead of a test not reading yet.
        chunk_send, chunk_receive = trio.open_memory_channel[bytes](math.inf)

        async def receive() -> dict[str, Any]:
            if pending:
                response.body_events_read += 1
                chunk = pending.pop(0)
                return {"type": "http.request", "body": chunk, "more_body": bool(pending)}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def send(event: dict[str, Any]) -> None:
            if event["type"] == "http.response.start":
                response.status = event["status"]
                response.headers = {k.decode(): v.decode() for k, v in event["headers"]}
                started.set()
            elif event["type"] == "http.response.body":
                response.chunks.append(event.get("body", b""))
                chunk_send.send_nowait(event.get("body", b""))
                if not event.get("more_body", False):
                    chunk_send.close()

        opened: Stream | None = None
        try:
            async with open_nursery_behind_block() as nursery:
                target: Any = self.asgi or self.app
                nursery.start_soon(target, scope, receive, send)
                await started.wait()
                opened = Stream(response, chunk_receive)
                try:
                    yield opened
                finally:
                    disconnected.set()
        finally:
            # An app cancelled by the disconnect never sends its last body event: a read
            # after the block gets what had come, then the end, rather than waiting for ever.
            chunk_send.close()
            if opened is not None:
                opened.closed = True

    async def post(
        self,
        body: bytes | Mapping[str, Any],
        headers: Headers | None = None,
        *,
        limit_s: float = 5.0,
        **options: Any,
    ) -> Response:
        """Send a request and read the whole response within ``limit_s`` seconds.

        Under an autojump clock the seconds are virtual: pass a larger
        ``limit_s`` for a handler that waits on purpose.
        """
        try:
            with trio.fail_after(limit_s):
                async with self.stream(body, headers, **options) as opened:
                    return await opened.read_to_end()
        except trio.TooSlowError:
            method = body.get("method") if isinstance(body, Mapping) else None
            raise trio.TooSlowError(
                f"{method or 'the request'} not answered within {limit_s:g} s"
            ) from None

    async def call(
        self, method: str, params: Mapping[str, Any] | None = None, **options: Any
    ) -> Response:
        """Send a well-formed request for ``method``."""
        return await self.post(request(method, params, **options))

    # --- what a user's test calls -------------------------------------------

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        capabilities: Mapping[str, Any] | None = None,
    ) -> Reply:
        """Send ``method`` and read its answer; a JSON-RPC error raises :class:`RequestFailed`.

        ``_meta`` is filled in (protocol version, ``capabilities``, default
        :data:`DEFAULT_CAPABILITIES`) unless ``params`` brings its own; build
        one with :func:`meta`, e.g. ``meta(progressToken="p")``. An answer
        that is no JSON-RPC response (an HTTP error in plain text, such as
        the 413 of a body over the app's limit) fails the test, naming it.
        """
        response = await self.call(method, params, capabilities=capabilities)
        *notifications, final = answer_of(method, response)
        if "error" in final:
            raise RequestFailed(response.status, final["error"])
        return Reply(final["result"], notifications)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        capabilities: Mapping[str, Any] | None = None,
    ) -> JSONObject:
        """``tools/call``, the result only; pass the previous round's answers to retry.

        The result may be ``complete`` (the tool's answer), ``input_required``
        (answer its ``inputRequests`` and call again with ``input_responses``
        and its ``requestState``) or, with :data:`TASKS_CAPABILITIES`, ``task``.
        """
        params: JSONObject = {"name": name, "arguments": dict(arguments or {})}
        if input_responses is not None:
            params["inputResponses"] = dict(input_responses)
        if request_state is not None:
            params["requestState"] = request_state
        return (await self.send_request("tools/call", params, capabilities=capabilities)).result

    async def get_task(self, task_id: str) -> JSONObject:
        """``tasks/get``: the task as it is now (status, ``inputRequests``, result)."""
        reply = await self.send_request(
            "tasks/get", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES
        )
        return reply.result

    async def update_task(self, task_id: str, input_responses: Mapping[str, Any]) -> None:
        """``tasks/update``: answer some or all of a task's ``inputRequests``."""
        params = {"taskId": task_id, "inputResponses": dict(input_responses)}
        await self.send_request("tasks/update", params, capabilities=TASKS_CAPABILITIES)

    async def cancel_task(self, task_id: str) -> None:
        """``tasks/cancel``: the task is ``cancelled`` when this returns."""
        await self.send_request(
            "tasks/cancel", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES
        )

    @asynccontextmanager
    async def listen(
        self, notifications: Mapping[str, Any], *, capabilities: Mapping[str, Any] | None = None
    ) -> AsyncIterator[Stream]:
        """Open ``subscriptions/listen`` with this filter; leaving the block closes it.

        The first message is ``notifications/subscriptions/acknowledged``. For
        ``taskIds``, pass :data:`TASKS_CAPABILITIES`.
        """
        message = request(
            "subscriptions/listen",
            {"notifications": dict(notifications)},
            capabilities=capabilities,
        )
        async with self.stream(message) as opened:
            yield opened


@asynccontextmanager
async def running(app: McpApp) -> AsyncIterator[McpClient]:
    """Run the app's lifespan (its server-lifetime nursery) around a client.

    The lifespan runs in a nursery behind the block: its failure ends the
    block as an ``ExceptionGroup``, an exception of the block alone comes
    out as itself (:mod:`presa_trio.testing.background`).
    """
    async with open_nursery_behind_block() as nursery:
        await nursery.start(app.run)
        yield McpClient(app)
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def connect(server: Server, **app_options: Any) -> AsyncIterator[McpClient]:
    """A client of ``server``, served in-process for the duration of the block.

    ``app_options`` go to :class:`~presa_trio.http.app.McpApp` (its admission
    policy, its largest body).
    """
    async with running(McpApp.for_server(server, **app_options)) as client:
        yield client
