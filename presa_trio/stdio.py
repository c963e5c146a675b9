"""The stdio edge: newline-delimited JSON-RPC on stdin and stdout.

One message per line each way; stdout carries only MCP messages (responses,
notifications about in-flight requests, listen notifications), logs go to
stderr, and so does whatever else the process writes to stdout: the
protocol keeps stdin and stdout to itself while it serves
(:func:`claim_standard_streams`). There are no headers, so admission is
the line alone (:func:`~presa_trio.wire.admission.admit`: rungs 6–8), then
the dispatcher's rungs. No line stops the server: whatever it holds is
answered with the spec's error or acted on, and a line longer than
``max_line`` is refused (-32600) and skipped. A notification is never
answered, however malformed: it is logged at DEBUG and ignored
(basic/index §Notifications; basic/patterns/cancellation §Error Handling;
spec-notes §57). A refused response from the client gets no id
(docs/spec-notes.md §52): its id names no request of the client's, and all
answers share stdout.

Every request runs in its own cancel scope in one nursery. The client
cancels a request, or ends a listen, with ``notifications/cancelled``; the
server then sends nothing more for it. A cancelled listen or task stream
lets go of its place before the next line is read, so the stream a client
opens again on that line is served. A Task is not a request: cancelling
the request that created one never cancels the task (its worker lives in
the extension's own nursery).

One writer task owns stdout. Everything else hands it whole encoded lines
through a small bounded channel, so lines never interleave, and a client
that stops reading holds up only the tasks that have something to write
(the pipe's backpressure), never the Trio loop: pipes and sockets are read
and written by Trio without blocking, and only what cannot be polled (a
regular file, a terminal) is read and written in a worker thread. At most
``max_in_flight`` requests other than listens and task streams (bounded by
their own limits) are in flight at once; the next request line waits until
one of them is answered, and stdin is not read meanwhile, so a client that
sends requests without reading their answers is held by the pipe, and the
server's memory stays bounded.

On end of input the server stops listen streams at once, gives in-flight
requests a short grace period, writes what they answered, then exits.

If the server's lifetime fails (the task runner cannot run on), serving
stops at once and :func:`serve_stdio` raises
:class:`~presa_trio.server.faults.ServerFailed` with one line, as
:func:`~presa_trio.http.serving.serve_http` does: the process exits
non-zero and a supervisor restarts it, rather than reading requests it can
no longer serve (docs/tasks.md, the failure policy).

Spec: 2026-07-28 basic/transports/stdio; basic/patterns/cancellation
§Transport-Specific Cancellation.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import attrs
import trio

from presa_trio.line_reader import LineReader, LineTooLong
from presa_trio.server import Connection, Dispatcher, Server
from presa_trio.server.dispatch import encode_error
from presa_trio.server.faults import ServerFailed, report_lifetime_failure
from presa_trio.server.open_streams import LONG_LIVED
from presa_trio.wire.admission import AdmittedRequest, Refused, admit
from presa_trio.wire.envelope import Notification, RequestId, dumps, is_request_id
from presa_trio.wire.errors import InvalidRequest

log = logging.getLogger(__name__)

#: Seconds that in-flight requests, then the output, may take once input has ended.
EOF_GRACE_S = 5.0
#: Default longest input line, in bytes (the HTTP edge's default body limit).
DEFAULT_MAX_LINE = 4 * 1024 * 1024
#: Encoded lines waiting for the writer; a task with a line to write waits when it is full.
OUTPUT_BUFFER = 16
#: Requests in flight at once, listens and task streams aside; the next one waits for room.
MAX_IN_FLIGHT = 1024


@attrs.define(eq=False, repr=False)
class RequestOutput:
    """One request's notifications on the shared stdout: written while it is in flight.

    Closed once the request is answered or cancelled, before its response is
    queued; a handler that kept its context writes nothing after it, so no
    line of an answered request reaches the client among another's
    (basic/transports/stdio §Receiving Messages: notifications relate to an
    in-flight request; logging §Per-request log level: before the final
    response; basic/patterns/progress §Behavior Requirements).

    Cancelled, its lines not yet written are dropped too, those queued and
    one waiting for room in the queue, which a shielded part of the handler
    may be doing (basic/transports/stdio §Cancellation: nothing further for
    a cancelled request). Answered, they go out before the response.
    """

    write: Callable[[bytes, RequestOutput | None], Awaitable[None]]
    in_flight: bool = True
    cancelled: bool = False

    async def send(self, message: dict[str, Any]) -> None:
        """A handler's notification; a value JSON cannot hold is the handler's fault."""
        if self.in_flight:
            await self.write(dumps(message), self)

    def close(self) -> None:
        self.in_flight = False

    def cancel(self) -> None:
        self.close()
        self.cancelled = True


#: An encoded message for the writer, and the request whose notification it is.
Line = tuple[bytes, RequestOutput | None]


@attrs.frozen(eq=False)
class InFlight:
    """A request being answered, while its id is taken."""

    # Cancelled by the client's notifications/cancelled, or, if long-lived, at end of input.
    scope: trio.CancelScope
    # Its notifications; closed once it is answered or cancelled.
    output: RequestOutput
    # A listen or a task stream: it answers only when ended.
    long_lived: bool
    # Set once its handler has returned: nothing it held is held any more.
    finished: trio.Event = attrs.field(factory=trio.Event)

    def cancel(self, reason: str) -> None:
        """Stop it, and let nothing more of it out, even from a shielded part of its handler."""
        self.output.cancel()
        self.scope.cancel(reason=reason)


@attrs.define(eq=False, repr=False)
class StdioServer:
    """Serves one dispatcher over a pair of byte streams."""

    dispatcher: Dispatcher
    input: trio.abc.ReceiveStream
    output: trio.abc.SendStream
    max_line: int = DEFAULT_MAX_LINE
    max_in_flight: int = MAX_IN_FLIGHT
    # In-flight requests by id.
    _in_flight: dict[RequestId, InFlight] = attrs.field(factory=dict)
    # Whole encoded lines, from any task to the one writer task, each with the
    # request whose notification it is (None: a response, or no request's).
    _lines: trio.MemorySendChannel[Line] = attrs.field(init=False)
    _to_write: trio.MemoryReceiveChannel[Line] = attrs.field(init=False)
    # Room for ordinary requests in flight (max_in_flight); long-lived ones take none.
    _room: trio.CapacityLimiter = attrs.field(init=False)
    # Why the server's lifetime ended by itself, in one line; None while it runs.
    failure: str | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        self._lines, self._to_write = trio.open_memory_channel[Line](OUTPUT_BUFFER)
        self._room = trio.CapacityLimiter(self.max_in_flight)

    async def serve(self) -> None:
        """Read until end of input, answering every request concurrently.

        Raises :class:`ServerFailed` if the server's lifetime failed.

        Failure policies: the lifetime's nursery never fails (its failure is
        kept in :attr:`failure` and cancels serving, :meth:`run_lifetime`);
        the output's writer stops serving when stdout closes; a request's
        own failure is answered by the dispatcher, so none reaches the
        requests' nursery, and a ``notifications/cancelled`` ends only its
        request's scope.
        """
        async with trio.open_nursery() as lifetime:
            await lifetime.start(self.run_lifetime, lifetime.cancel_scope)
            async with trio.open_nursery() as output:
                output.start_soon(self.write_lines, lifetime.cancel_scope)
                async with self._lines, trio.open_nursery() as requests:
                    await self.read_lines(requests)
                    self.end_listens()
                    requests.cancel_scope.deadline = trio.current_time() + EOF_GRACE_S
                output.cancel_scope.deadline = trio.current_time() + EOF_GRACE_S
            lifetime.cancel_scope.cancel(reason="end of input")
        if self.failure is not None:
            raise ServerFailed(self.failure)

    async def run_lifetime(
        self,
        serving: trio.CancelScope,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """The server's lifetime (the extensions: the task runner); its failure stops serving.

        The failure is logged with its traceback and kept in one line
        (:attr:`failure`), and ``serving`` is cancelled: requests in flight
        and the input end with it.
        """
        started = False
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.dispatcher.run)
                started = True
                task_status.started()
        except Exception as error:
            self.failure = report_lifetime_failure(log, error)
            serving.cancel(reason="the server cannot run")
            if not started:
                task_status.started()

    async def read_lines(self, requests: trio.Nursery) -> None:
        """Admit each input line until end of input (or a broken input stream)."""
        reader = LineReader(self.input, self.max_line)
        while True:
            try:
                line = await reader.next_line()
            except LineTooLong:
                error = InvalidRequest(f"Message longer than {self.max_line} bytes")
                await self.write(encode_error(None, error)[0])
                continue
            except trio.BrokenResourceError:
                log.warning("stdin cannot be read; treating it as end of input", exc_info=True)
                return
            if line is None:
                return
            if line.strip():
                await self.receive(line, requests)

    async def receive(self, line: bytes, requests: trio.Nursery) -> None:
        """Admit one line: a request starts a worker, a notification acts at once."""
        admitted = admit(line)
        if isinstance(admitted, Notification):
            cancelled = self.on_notification(admitted)
            if cancelled is not None and cancelled.long_lived:
                # The client replaces a stream by cancelling it and opening another
                # (SEP-2694 §tasks/stream), and nothing tells it when a cancellation
                # took effect: the next line is read once the stream let go of its
                # place (one per task per connection, a client's share of streams).
                await cancelled.finished.wait()
            return
        if isinstance(admitted, AdmittedRequest) and admitted.request.id in self._in_flight:
            # Responses are matched by id: two in flight with one id cannot be told apart.
            in_use = InvalidRequest("The id is already used by a request in flight")
            admitted = Refused(admitted.request.id, in_use)
        if isinstance(admitted, Refused):
            if admitted.notification:
                log.debug("malformed notification ignored: %s", admitted.error.message)
                return
            # A response's id is not the client's: echoed, it could answer one of its requests.
            request_id = None if admitted.response else admitted.request_id
            await self.write(encode_error(request_id, admitted.error)[0])
            return
        await requests.start(self.run_request, admitted)

    async def run_request(
        self,
        admitted: AdmittedRequest,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Answer one request in its own cancel scope; once answered or cancelled, it is silent.

        An ordinary request starts once there is room for it (:attr:`max_in_flight`):
        until then, the reader waits for it, and reads no further line.
        """
        request = admitted.request
        long_lived = request.method in LONG_LIVED
        room: contextlib.AbstractAsyncContextManager[Any] = (
            contextlib.nullcontext() if long_lived else self._room
        )
        async with room:
            with trio.CancelScope() as scope:
                output = RequestOutput(self.write)
                entry = InFlight(scope, output, long_lived)
                self._in_flight[request.id] = entry
                task_status.started()
                try:
                    # The pipe is the one connection (SEP-2694 "per connection").
                    line, _ = await self.dispatcher.respond(
                        request, admitted.meta, output.send, connection=Connection(self)
                    )
                    output.close()
                    await self.write(line)
                finally:
                    output.close()
                    # A cancellation freed the id already; it may name a newer request now.
                    if self._in_flight.get(request.id) is entry:
                        del self._in_flight[request.id]
                    entry.finished.set()

    def on_notification(self, message: Notification) -> InFlight | None:
        """``notifications/cancelled`` cancels an in-flight request, which is returned;
        other notifications are dropped.

        Only a string or an integer names a request (basic/index §Requests);
        any other ``requestId`` (``true``, ``1.0``, a list…) names none and is ignored.
        So is a cancellation whose ``reason`` is not a string or whose ``_meta``
        is not an object (schema ``CancelledNotificationParams``): it is
        malformed, and SHOULD be ignored (basic/patterns/cancellation §Error Handling).
        The id is free at once: the cancelled request writes nothing more
        (:meth:`InFlight.cancel`), so a request that reuses the id,
        read before the cancelled one has stopped, is served, not refused
        (basic/patterns/cancellation §Behavior Requirements: free its resources).
        The reason is logged at DEBUG (basic/patterns/cancellation
        §Implementation Notes: SHOULD log it), quoted: it is the client's text.
        """
        if message.method != "notifications/cancelled":
            return None
        params = message.params
        if not isinstance(params.get("reason", ""), str) or not isinstance(
            params.get("_meta", {}), dict
        ):
            log.debug("malformed notifications/cancelled ignored")
            return None
        request_id = params.get("requestId")
        if is_request_id(request_id) and (found := self._in_flight.pop(request_id, None)):
            reason = params.get("reason")
            log.debug("request %r cancelled by the client: %r", request_id, reason)
            found.cancel(reason="notifications/cancelled")
            return found
        return None

    def end_listens(self) -> None:
        for entry in self._in_flight.values():
            if entry.long_lived:
                entry.scope.cancel(reason="end of input")

    async def write(self, line: bytes, request: RequestOutput | None = None) -> None:
        """Queue one encoded message for the writer; waits while the queue is full.

        A notification of ``request`` is dropped if the request is cancelled
        before the writer takes it.
        """
        await self._lines.send((line, request))

    async def write_lines(self, lifetime: trio.CancelScope) -> None:
        """The writer: each line whole, in order; a closed stdout stops the server."""
        async with self._to_write:
            async for line, request in self._to_write:
                if request is not None and request.cancelled:
                    continue
                try:
                    await self.output.send_all(line + b"\n")
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    log.warning("stdout is closed; stopping")
                    lifetime.cancel(reason="stdout closed")
                    return


@attrs.define(eq=False)
class ThreadedFd(trio.abc.Stream):
    """A file descriptor Trio cannot poll (a regular file, a terminal): I/O in a thread.

    The descriptor is borrowed, not owned: closing the stream leaves it open.
    """

    fd: int

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        try:
            return await trio.to_thread.run_sync(
                os.read, self.fd, max_bytes or 65536, abandon_on_cancel=True
            )
        except OSError as exc:
            raise trio.BrokenResourceError from exc

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        remaining = memoryview(data)
        while remaining:
            try:
                written = await trio.to_thread.run_sync(os.write, self.fd, remaining)
            except OSError as exc:
                raise trio.BrokenResourceError from exc
            remaining = remaining[written:]

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


def open_fd(fd: int) -> trio.abc.Stream:
    """A Trio stream on ``fd``: non-blocking when it is a pipe or a socket of its own.

    Non-blocking mode belongs to the open file, shared with every descriptor
    copied from it, so a pipe that is also stderr (``2>&1``) stays blocking:
    log records are written to stderr synchronously.
    """
    opened = os.fstat(fd)
    pollable = stat.S_ISFIFO(opened.st_mode) or stat.S_ISSOCK(opened.st_mode)
    if sys.platform != "win32" and pollable and not is_stderr(opened):
        return trio.lowlevel.FdStream(os.dup(fd))
    return ThreadedFd(fd)


def is_stderr(opened: os.stat_result) -> bool:
    try:
        return os.path.samestat(opened, os.fstat(2))
    except OSError:  # no stderr at all
        return False


class StreamNotOpen(Exception):
    """stdin or stdout is not open: there is nothing to serve on."""


@attrs.frozen
class StandardStreams:
    """Descriptors of this process's stdin and stdout that only the protocol uses."""

    input: int
    output: int


@contextlib.contextmanager
def claim_standard_streams() -> Iterator[StandardStreams]:
    """Keep stdin and stdout for MCP messages alone, until leaving.

    The protocol gets copies of descriptors 0 and 1; meanwhile descriptor 0
    reads ``/dev/null`` and descriptor 1 writes to stderr. So a ``print()``
    in a tool, a library that writes to stdout, or a child process that
    inherits the descriptors can neither put a line that is not a message on
    stdout nor take the client's messages from stdin. Claim them before
    importing the server, so that what its modules print is caught too.
    Raises :class:`StreamNotOpen` when there is no stdin or stdout.

    Spec: basic/transports/stdio (the server MUST NOT write anything to its
    stdout that is not a valid MCP message; it MAY write to stderr).
    """
    for fd, name in ((0, "stdin"), (1, "stdout")):
        try:
            os.fstat(fd)
        except OSError:
            raise StreamNotOpen(f"{name} is not open; stdio serves on stdin and stdout") from None
    # Descriptor 2 itself when stderr is not open: then stray output is dropped.
    nothing = os.open(os.devnull, os.O_RDWR)
    claimed = StandardStreams(os.dup(0), os.dup(1))
    os.dup2(nothing, 0)
    os.dup2(2, 1)
    if nothing != 2:
        os.close(nothing)
    try:
        yield claimed
    finally:
        if sys.stdout is not None:  # what a tool left in the buffer goes to stderr too
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.flush()
        os.dup2(claimed.input, 0)
        os.dup2(claimed.output, 1)
        os.close(claimed.input)
        os.close(claimed.output)


async def serve_stdio(
    server: Server,
    *,
    max_line: int = DEFAULT_MAX_LINE,
    streams: StandardStreams | None = None,
) -> None:
    """Serve ``server`` on this process's stdin and stdout until end of input.

    Run it with ``trio.run(serve_stdio, server)``, as
    :func:`~presa_trio.http.serving.serve_http` for HTTP. Input lines
    longer than ``max_line`` bytes are refused. The two streams are claimed
    (:func:`claim_standard_streams`) while serving, unless ``streams`` gives
    those the caller claimed before.
    """
    with contextlib.ExitStack() as claims:
        if streams is None:
            streams = claims.enter_context(claim_standard_streams())
        async with open_fd(streams.input) as stdin, open_fd(streams.output) as stdout:
            log.info("serving %s %s on stdin/stdout", server.name, server.version)
            await StdioServer(Dispatcher.for_server(server), stdin, stdout, max_line).serve()
