"""How the client's messages travel: one POST per request, or lines on a child's stdin.

A transport opens an *exchange* for one request and hands back its
:class:`Replies`: the messages the server sends for that request, in order,
the response last. Over Streamable HTTP that is the response body (one JSON
message, or an SSE stream of notifications then the response); over stdio
it is the lines of the child's stdout that belong to the request (its
response, notifications tagged with its id as ``progressToken`` or
``_meta.subscriptionId``, and for a ``tasks/stream`` the events of its
task). Leaving the exchange early cancels the request: the HTTP stream is
closed, or ``notifications/cancelled`` is written
(basic/patterns/cancellation §Transport-Specific Cancellation).

Every exchange can be recorded in presa's transcript format
(:mod:`presa_trio.wire.transcript`), as the server records its own: in a
file, or on stdout for ``--transcript -`` (the usual name for it).

Spec: 2026-07-28 basic/transports/streamable-http §Sending Messages,
§Backward Compatibility; basic/transports/stdio.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import (
    AbstractAsyncContextManager,
    asynccontextmanager,
    contextmanager,
    suppress,
)
from functools import partial
from http import HTTPStatus
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urljoin, urlsplit

import attrs
import httpx
import trio

from presa_trio.client.challenges import insufficient_scope, www_authenticate
from presa_trio.client.errors import (
    REFUSED_FOR_NOW,
    BrokenOff,
    ProtocolFailure,
    RefusedForNow,
    Unauthorized,
    Unreachable,
    UsageProblem,
)
from presa_trio.client.shell import command_line
from presa_trio.client.streams import writing_stdout
from presa_trio.line_reader import LineReader
from presa_trio.transcript_file import TranscriptFile
from presa_trio.wire.envelope import RequestId, dumps, is_request_id, parse_json
from presa_trio.wire.errors import ParseError
from presa_trio.wire.meta import META_SUBSCRIPTION_ID
from presa_trio.wire.models import JSONObject
from presa_trio.wire.sse import Event, EventStreamParser
from presa_trio.wire.tasks import EVENT_NOTIFICATION, TASK_STREAM
from presa_trio.wire.transcript import Exchange, kept, record_line

#: Seconds a stdio server has to exit once its stdin is closed, before it is killed.
STDIO_EXIT_GRACE_S = 5.0
#: Seconds the ``notifications/cancelled`` of an exchange given up on may wait for a
#: stdio server to take it: one that reads nothing must not hold the client.
CANCEL_NOTICE_WAIT_S = 1.0
#: The notification that cancels a request, sent by either party.
CANCELLED = "notifications/cancelled"
#: ``--transcript -``: the transcript on stdout.
STDOUT_NAME = "-"


class Replies(Protocol):
    """The messages of one exchange, one at a time; the response is the last."""

    async def next(self) -> JSONObject: ...


class Transcript(Protocol):
    """Where exchanges are recorded: a :class:`TranscriptFile`, or :class:`TranscriptOnStdout`."""

    async def append(self, record: dict[str, Any]) -> None: ...


@attrs.define(eq=False)
class TranscriptOnStdout:
    """``--transcript -``: each record a line on stdout, written whole, as a file's are."""

    # Held while a line is written, so two lines never interleave.
    _lock: trio.Lock = attrs.field(factory=trio.Lock)

    async def append(self, record: dict[str, Any]) -> None:
        line = record_line(record)
        async with self._lock:
            await trio.to_thread.run_sync(self._write, line)

    @staticmethod
    def _write(line: bytes) -> None:
        with writing_stdout(sys.stdout):
            sys.stdout.flush()  # what the console printed before stays before
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()


class Transport(Protocol):
    """Where requests go: :class:`HttpTransport` or :class:`StdioTransport`."""

    #: What the user named: the URL, or the command line.
    where: str

    @property
    def probes_era(self) -> bool:
        """Whether ``server/discover`` must go first: no HTTP status tells the era."""
        ...

    def exchange(
        self, message: JSONObject, headers: Mapping[str, str]
    ) -> AbstractAsyncContextManager[Replies]: ...

    def later(self, command: str, arguments: str) -> str:
        """``presa-trio COMMAND … ARGUMENTS`` reaching this endpoint again, to print."""
        ...


class NotModern(ProtocolFailure):
    """An HTTP answer that is no JSON-RPC message: a legacy server, or no MCP at all.

    Spec: streamable-http §Backward Compatibility — a 4xx whose body is not a
    recognised modern JSON-RPC error identifies a server of another era.
    """

    def __init__(self, where: str, status: int, content_type: str, body: str) -> None:
        self.status = status
        shown = " ".join(body.split())[:120]
        kind = content_type or "no content type"
        super().__init__(f"{where} is not an MCP server: HTTP {status} ({kind}) {shown}".rstrip())


def object_at(value: Any, key: str) -> JSONObject:
    """``value[key]`` when both are JSON objects, else ``{}``: for reading what a server sent."""
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def list_at(value: Any, key: str) -> list[Any]:
    """``value[key]`` when ``value`` is a JSON object and it an array, else ``[]``: as
    :func:`object_at`, for reading what a server sent."""
    found = value.get(key) if isinstance(value, dict) else None
    return found if isinstance(found, list) else []


def decoded(data: bytes) -> Any:
    """A message the server sent, decoded as the server decodes one; None if it is no JSON.

    :func:`~presa_trio.wire.envelope.parse_json` is strict where ``json.loads``
    is not: UTF-8 only (basic/transports §Messages), no ``NaN`` or
    ``Infinity`` (RFC 8259 §6), and nesting too deep to decode is no JSON
    rather than a crash.
    """
    try:
        return parse_json(data)
    except ParseError:
        return None


def is_response(message: Any) -> bool:
    """A result with its id, or an error, with or without one.

    Spec: basic/index §Error Responses: an error to a request whose id could
    not be read carries none (``id?: string | number``).
    """
    return isinstance(message, dict) and (
        ("result" in message and "id" in message) or "error" in message
    )


def cancelled_request(message: Any) -> RequestId | None:
    """The request a ``notifications/cancelled`` names; None for any other message.

    From a server it ends the listen it names, and no response follows
    (basic/patterns/cancellation: a server MUST send it when it tears a
    ``subscriptions/listen`` stream down, and for nothing else; schema
    ``CancelledNotification``).
    """
    if not (isinstance(message, dict) and message.get("method") == CANCELLED):
        return None
    named = object_at(message, "params").get("requestId")
    return named if is_request_id(named) else None


def is_for_client(message: Any) -> bool:
    """A JSON-RPC response or notification: all a 2026-07-28 server sends a client."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    return is_response(message) or ("method" in message and "id" not in message)


# --- Streamable HTTP -------------------------------------------------------------


@attrs.define(eq=False)
class _HttpReplies:
    """The body of one POST's response, read message by message.

    An event whose data is empty carries no message and is passed over, as a
    comment is: the priming event (an id and an empty ``data``) with which a
    server of the initialize era opens a stream it can resume (2025-11-25
    basic/transports §Resumability and Redelivery), such as its answer to the
    ``initialize`` probe that asks its version.
    """

    where: str
    response: httpx.Response
    exchange: Exchange | None
    _chunks: AsyncIterator[bytes] | None = None
    _pending: list[JSONObject] = attrs.field(factory=list)
    _parser: EventStreamParser = attrs.field(factory=EventStreamParser)

    async def next(self) -> JSONObject:
        # RFC 9110 §8.3.1: the type and subtype are case-insensitive.
        given = self.response.headers.get("content-type", "")
        content_type = given.split(";")[0].strip().lower()
        if content_type != "text/event-stream":
            return await self._whole_body(content_type)
        if self._chunks is None:
            self._chunks = self.response.aiter_bytes()
        chunks = self._chunks
        while not self._pending:
            try:
                chunk = await anext(chunks)
            except StopAsyncIteration:
                raise BrokenOff(f"{self.where} ended the stream without a response") from None
            if self.exchange is not None:
                self.exchange.add_events(chunk, time.time())
            for item in self._parser.feed(chunk):
                if isinstance(item, Event) and item.data:
                    self._pending.append(self._message(item.data))
        return self._pending.pop(0)

    async def _whole_body(self, content_type: str) -> JSONObject:
        raw = await self.response.aread()
        if self.exchange is not None:
            self.exchange.response_body += raw
        text = raw.decode("utf-8", errors="replace")
        message: Any = decoded(raw) if content_type == "application/json" else None
        if is_response(message):
            return message  # type: ignore[no-any-return]
        status = self.response.status_code
        if status in REFUSED_FOR_NOW:
            raise RefusedForNow(self.where, status, self.response.headers.get("retry-after"), text)
        raise NotModern(self.where, status, content_type, text)

    def _message(self, data: str) -> JSONObject:
        """An event's message: a response or a notification, as on stdio; a request is the
        server's mistake (streamable-http §Receiving Messages: MUST NOT)."""
        message = decoded(data.encode())
        if not is_for_client(message):
            raise ProtocolFailure(
                f"{self.where} sent an SSE event that is no MCP response or notification: "
                f"{data[:80]}"
            )
        return message  # type: ignore[no-any-return]


@contextmanager
def http_failures(where: str) -> Iterator[None]:
    """httpx's failures to exchange with ``where`` as the client's own, one line each."""
    try:
        yield
    except httpx.InvalidURL as error:
        raise UsageProblem(f"{where} is not a URL: {error}") from None
    except httpx.UnsupportedProtocol:
        raise UsageProblem(f"{where} is not an http:// or https:// URL") from None
    except (httpx.ConnectError, httpx.ConnectTimeout) as error:
        raise Unreachable(f"cannot reach {where}: {error or 'connection failed'}") from None
    except httpx.TransportError as error:
        raise BrokenOff(f"{where} broke off the exchange: {error!r}") from None


@attrs.define(eq=False)
class HttpTransport:
    """POSTs to one Streamable HTTP endpoint, with a bearer token if given."""

    #: A legacy server's answer is told apart by its status and body.
    probes_era = False

    where: str
    http: httpx.AsyncClient
    token: str | None = None
    transcript: Transcript | None = None

    def later(self, command: str, arguments: str) -> str:
        return f"presa-trio {command} {self.where} {arguments}"

    @asynccontextmanager
    async def exchange(
        self, message: JSONObject, headers: Mapping[str, str]
    ) -> AsyncIterator[Replies]:
        body = dumps(message)
        sent = dict(headers)
        if self.token is not None:
            sent["authorization"] = f"Bearer {self.token}"
        record = None
        if self.transcript is not None:
            kept_headers = {k: v for k, v in sent.items() if kept(k)}
            request = {"method": "POST", "path": urlsplit(self.where).path, "headers": kept_headers}
            record = Exchange(time.time(), request)
            record.body += body
        try:
            with http_failures(self.where):
                async with self.http.stream(
                    "POST", self.where, content=body, headers=sent
                ) as response:
                    if record is not None:
                        content_type = response.headers.get("content-type", "")
                        status = response.status_code
                        record.response = {"status": status, "contentType": content_type}
                        if "www-authenticate" in response.headers:
                            challenge = response.headers["www-authenticate"]
                            record.response["headers"] = {"www-authenticate": challenge}
                    if response.status_code == 401 or insufficient_scope(response):
                        raise self.unauthorized(response)
                    if response.is_redirect:
                        raise self.redirected(response)
                    yield _HttpReplies(self.where, response, record)
        finally:
            if record is not None and self.transcript is not None:
                with trio.CancelScope(shield=True):
                    await self.transcript.append(record.record())

    def redirected(self, response: httpx.Response) -> ProtocolFailure:
        """A 3xx: followed by no one, as the body and the token would go where the server
        says; the line names where its ``Location`` points, or that it points nowhere
        (none, or no URL: RFC 9110 §10.2.2 — a URI reference)."""
        status = response.status_code
        try:
            target = urljoin(self.where, response.headers["location"])
        except (KeyError, ValueError):
            return ProtocolFailure(
                f"{self.where} answered HTTP {status} with no Location that is a URL; "
                "this client follows no redirect"
            )
        return ProtocolFailure(
            f"{self.where} redirects to {target} (HTTP {status}); "
            "this client follows no redirect: give that URL if it is the endpoint"
        )

    def unauthorized(self, response: httpx.Response) -> Unauthorized:
        """401: say whether a token was sent and where the resource's metadata points;
        the authorization servers that metadata names are asked for once the failure is
        final (:meth:`~presa_trio.client.errors.Unauthorized.named`).

        Spec: basic/authorization §Protected Resource Metadata Discovery — the
        ``resource_metadata`` parameter of ``WWW-Authenticate``.
        """
        challenge = www_authenticate(response.headers.get("www-authenticate", ""))
        said = (
            f" ({challenge['error']}: {challenge.get('error_description', '')})".replace(": )", ")")
            if "error" in challenge
            else ""
        )
        what = (
            "refused the token" if self.token else "needs a sign-in (presa-trio login) or --token"
        )
        status = f"{response.status_code} {HTTPStatus(response.status_code).phrase}"
        line = f"{self.where} {what}: {status}{said}"
        metadata = challenge.get("resource_metadata")
        if not metadata:
            return Unauthorized(line, challenge)
        line += f"; its resource metadata is at {metadata}"
        return Unauthorized(line, challenge, partial(self.authorization_servers, metadata))

    async def authorization_servers(self, metadata_url: str) -> list[str]:
        """The servers the metadata at ``metadata_url`` names, read within the answer's
        wait (``--timeout``): this client waits for MCP answers without end."""
        try:
            response = await self.http.get(metadata_url, timeout=self.http.timeout.connect)
            document = decoded(response.content)
        except (httpx.HTTPError, httpx.InvalidURL):  # a URL no request can go to: none
            return []
        servers = document.get("authorization_servers") if isinstance(document, dict) else None
        return [str(s) for s in servers] if isinstance(servers, list) else []


# --- stdio -----------------------------------------------------------------------


@attrs.define(eq=False)
class _StdioReplies:
    """The messages routed to one request id."""

    where: str
    receive: trio.MemoryReceiveChannel[JSONObject]
    record: Exchange | None
    answered: bool = False

    async def next(self) -> JSONObject:
        try:
            message = await self.receive.receive()
        except trio.EndOfChannel:
            raise ProtocolFailure(f"{self.where} stopped before answering") from None
        if self.record is not None:
            self.record.events.append({"at": time.time(), "data": message})
        self.answered = is_response(message) or cancelled_request(message) is not None
        return message


@attrs.define(eq=False)
class StdioTransport:
    """Newline-delimited JSON-RPC with a child process the client started.

    The child runs in a session of its own, so the Ctrl-C meant for the
    client (which then cancels its task) does not reach the server first.
    """

    #: Only an answer to ``server/discover`` tells a legacy server (stdio §Backward Compatibility).
    probes_era = True

    where: str
    process: trio.Process
    transcript: Transcript | None = None
    _routes: dict[RequestId, trio.MemorySendChannel[JSONObject]] = attrs.field(factory=dict)
    # Task id -> the id of the open ``tasks/stream`` its events belong to (they carry no other).
    _task_streams: dict[Any, RequestId] = attrs.field(factory=dict)
    _write_lock: trio.Lock = attrs.field(factory=trio.Lock)
    _failure: str | None = None

    def later(self, command: str, arguments: str) -> str:
        """The command after ``--``, where ``--stdio`` takes it from."""
        return f"presa-trio {command} --stdio {arguments} -- {self.where}"

    async def read_lines(self) -> None:
        """Route every line of the child's stdout until it ends; then end every exchange."""
        assert self.process.stdout is not None
        # No limit on a line; one the child's exit cuts short is no message.
        reader = LineReader(self.process.stdout, max_line=None, unended_last_line=False)
        while (line := await reader.next_line()) is not None:
            if line.strip():
                self.route(line)
        for channel in self._routes.values():
            channel.close()

    def route(self, line: bytes) -> None:
        message = decoded(line)
        if not is_for_client(message):
            said = line[:80].decode(errors="replace")
            self._failure = (
                f"{self.where} wrote a line that is no MCP response or notification: {said}"
            )
            for channel in self._routes.values():
                channel.close()
            return
        params = object_at(message, "params")
        meta = object_at(params, "_meta")
        target: Any
        if is_response(message):
            target = message.get("id")
        elif (named := cancelled_request(message)) is not None:
            target = named
        elif message.get("method") == EVENT_NOTIFICATION:
            target = self._task_streams.get(params.get("taskId"))
        elif META_SUBSCRIPTION_ID in meta:
            target = meta[META_SUBSCRIPTION_ID]
        elif "progressToken" in params:
            target = params["progressToken"]
        else:  # a notification for no request in particular: the only one open
            target = next(iter(self._routes)) if len(self._routes) == 1 else None
        route = self._routes.get(target) if is_request_id(target) else None
        if route is not None:
            route.send_nowait(message)

    async def write(self, message: JSONObject) -> None:
        assert self.process.stdin is not None
        async with self._write_lock:
            try:
                await self.process.stdin.send_all(dumps(message) + b"\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise ProtocolFailure(f"{self.where} stopped reading its input") from None

    @asynccontextmanager
    async def exchange(
        self, message: JSONObject, headers: Mapping[str, str]
    ) -> AsyncIterator[Replies]:
        if self._failure is not None:
            raise ProtocolFailure(self._failure)
        request_id = message["id"]
        send, receive = trio.open_memory_channel[JSONObject](math.inf)
        self._routes[request_id] = send
        streamed = object_at(message, "params").get("taskId")
        if message.get("method") == TASK_STREAM:
            self._task_streams[streamed] = request_id
        record = None
        if self.transcript is not None:
            request: JSONObject = {"method": "STDIO", "path": self.where, "headers": {}}
            record = Exchange(time.time(), request)
            record.body += dumps(message)
            record.response = {"status": "stdout", "contentType": "text/event-stream"}
        replies = _StdioReplies(self.where, receive, record)
        try:
            await self.write(message)
            yield replies
        except ProtocolFailure:
            if self._failure is not None:
                raise ProtocolFailure(self._failure) from None
            raise
        finally:
            del self._routes[request_id]
            if self._task_streams.get(streamed) == request_id:
                del self._task_streams[streamed]
            with trio.CancelScope(shield=True):
                if not replies.answered and self.process.returncode is None:
                    cancelled = {"requestId": request_id, "reason": "the client stopped waiting"}
                    notice = {"jsonrpc": "2.0", "method": CANCELLED}
                    with trio.move_on_after(CANCEL_NOTICE_WAIT_S), suppress(ProtocolFailure):
                        await self.write({**notice, "params": cancelled})
                if record is not None and self.transcript is not None:
                    await self.transcript.append(record.record())


@asynccontextmanager
async def open_stdio(
    command: Sequence[str], transcript: Transcript | None = None
) -> AsyncIterator[StdioTransport]:
    """Start ``command`` with pipes on stdin and stdout (stderr is the client's own).

    On leaving, the child's stdin is closed and it has :data:`STDIO_EXIT_GRACE_S`
    to exit before it is killed.

    Failure policy of the nursery: the process and the reader of its stdout
    end when the child exits (the reader then ends every exchange); leaving
    the block cancels both; only a child that cannot be started raises.
    """
    where = command_line(command)
    async with trio.open_nursery() as nursery:
        try:
            process: trio.Process = await nursery.start(
                partial(
                    trio.run_process,
                    list(command),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    check=False,
                    start_new_session=True,
                )
            )
        except OSError as error:
            raise UsageProblem(f"cannot start {where}: {error.strerror or error}") from None
        transport = StdioTransport(where, process, transcript)
        nursery.start_soon(transport.read_lines)
        try:
            yield transport
        finally:
            assert process.stdin is not None
            with trio.CancelScope(shield=True):
                await process.stdin.aclose()
                with trio.move_on_after(STDIO_EXIT_GRACE_S):
                    await process.wait()
            nursery.cancel_scope.cancel()


def transcript_file(path: Path | None) -> Transcript | None:
    """The transcript to append to, checked writable now rather than after the first request."""
    if path is None:
        return None
    if str(path) == STDOUT_NAME:
        return TranscriptOnStdout()
    transcript = TranscriptFile(path)
    try:
        transcript.check()
    except OSError as error:
        raise UsageProblem(f"cannot write the transcript {path}: {error.strerror}") from None
    return transcript


def environment_token(flag: str | None, variable: str) -> str | None:
    """``--token``, else the environment variable, else None."""
    return flag if flag is not None else os.environ.get(variable) or None
