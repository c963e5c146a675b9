"""The stdio edge: newline-delimited JSON-RPC on stdin and stdout.

One message per line each way; stdout carries only MCP messages (responses,
notifications about in-flight requests, listen notifications), logs go to
stderr. There are no headers, so admission is the body alone: envelope,
``_meta``, then the dispatcher's rungs (wire §13.2 rungs 7–8 and 11–14).

Every request runs in its own cancel scope in one nursery. The client
cancels a request, or ends a listen, with ``notifications/cancelled``; the
server then sends nothing more for it. A Task is not a request: cancelling
the request that created one never cancels the task (its worker lives in
the extension's own nursery).

On end of input the server stops listen streams at once, gives in-flight
requests a short grace period, then exits.

Spec: 2026-07-28 basic/transports/stdio; basic/patterns/cancellation
§Transport-Specific Cancellation; wire §15.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

import attrs
import trio

from presa_trio.server import Dispatcher
from presa_trio.server.dispatch import encode_error
from presa_trio.wire import envelope
from presa_trio.wire.errors import McpError
from presa_trio.wire.meta import RequestMeta

log = logging.getLogger(__name__)

#: Seconds that in-flight requests may take to finish once input has ended.
EOF_GRACE_S = 5.0


@attrs.define(eq=False, repr=False)
class StdioServer:
    """Serves one dispatcher over a pair of byte streams."""

    dispatcher: Dispatcher
    # Reads one line (b"" at end of input); blocking, so it runs in a thread.
    read_line: Callable[[], bytes]
    output: BinaryIO
    # In-flight requests by id: their cancel scope, and whether they are listens.
    _in_flight: dict[envelope.RequestId, tuple[trio.CancelScope, bool]] = attrs.field(factory=dict)

    def write(self, line: bytes) -> None:
        """Write one encoded message as one line. Synchronous: lines never interleave."""
        self.output.write(line + b"\n")
        self.output.flush()

    async def send(self, message: dict[str, Any]) -> None:
        """A handler's notification; a value JSON cannot hold is the handler's fault."""
        self.write(envelope.dumps(message))

    async def serve(self) -> None:
        """Read until end of input, answering every request concurrently."""
        async with trio.open_nursery() as lifetime:
            await lifetime.start(self.dispatcher.run)
            async with trio.open_nursery() as requests:
                while line := await trio.to_thread.run_sync(self.read_line, abandon_on_cancel=True):
                    if line.strip():
                        await self.receive(line, requests)
                self.end_listens()
                requests.cancel_scope.deadline = trio.current_time() + EOF_GRACE_S
            lifetime.cancel_scope.cancel(reason="end of input")

    async def receive(self, line: bytes, requests: trio.Nursery) -> None:
        """Admit one line: a request starts a worker, a notification acts at once."""
        request_id: envelope.RequestId | None = None
        try:
            decoded = envelope.parse_json(line)
            request_id = envelope.readable_id(decoded)
            message = envelope.parse_message(decoded)
            if isinstance(message, envelope.Notification):
                self.on_notification(message)
                return
            meta = RequestMeta.from_params(message.params)
        except McpError as error:
            self.write(encode_error(request_id, error)[0])
            return
        await requests.start(self.run_request, message, meta)

    async def run_request(
        self,
        request: envelope.Request,
        meta: RequestMeta,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Answer one request inside its own cancel scope; a cancelled one sends nothing."""
        with trio.CancelScope() as scope:
            self._in_flight[request.id] = (scope, request.method == "subscriptions/listen")
            task_status.started()
            try:
                line, _ = await self.dispatcher.respond(request, meta, self.send)
            finally:
                self._in_flight.pop(request.id, None)
            self.write(line)

    def on_notification(self, message: envelope.Notification) -> None:
        """``notifications/cancelled`` cancels an in-flight request; others are dropped."""
        if message.method != "notifications/cancelled":
            return
        found = self._in_flight.get(message.params.get("requestId"))  # type: ignore[arg-type]
        if found is not None:
            found[0].cancel(reason="notifications/cancelled")

    def end_listens(self) -> None:
        for scope, is_listen in self._in_flight.values():
            if is_listen:
                scope.cancel(reason="end of input")


def serve_stdio(dispatcher: Dispatcher) -> None:
    """Run the stdio server on this process's stdin and stdout until end of input."""
    server = StdioServer(dispatcher, sys.stdin.buffer.readline, sys.stdout.buffer)
    trio.run(server.serve)
