"""The server's transcript: every HTTP exchange at the edge, as one JSON line.

:class:`TranscriptRecorder` is ASGI middleware around the app. It copies
what crosses the edge and changes nothing that is sent. Off by default;
``presa-trio serve --transcript FILE`` turns it on. The record format, which
the client writes too, is :mod:`presa_trio.wire.transcript`.

A file that refuses a write (a full disk, a file made read-only) changes no
answer: the exchange goes unrecorded, one warning says so, and one line
says when a write succeeds again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import attrs
import trio
from hypercorn.typing import (
    ASGIFramework,
    ASGIReceiveCallable,
    ASGIReceiveEvent,
    ASGISendCallable,
    ASGISendEvent,
    Scope,
)

from presa_trio.transcript_file import TranscriptFile
from presa_trio.wire.transcript import Exchange, kept

log = logging.getLogger(__name__)


@attrs.define(eq=False, repr=False)
class TranscriptRecorder:
    """ASGI middleware that appends each HTTP exchange to a JSON-lines file."""

    app: ASGIFramework
    path: Path
    clock: Callable[[], float]
    file: TranscriptFile = attrs.field(init=False)
    # Whether the last write failed: warned once, not once per exchange.
    failing: bool = attrs.field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        self.file = TranscriptFile(self.path)

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope["headers"]
            if kept(name.decode("latin-1").lower())
        }
        exchange = Exchange(
            self.clock(),
            {"method": scope["method"], "path": scope["path"], "headers": headers},
        )

        async def recording_receive() -> ASGIReceiveEvent:
            event = await receive()
            if event["type"] == "http.request":
                exchange.body += event.get("body", b"")
            return event

        async def recording_send(event: ASGISendEvent) -> None:
            if event["type"] == "http.response.start":
                content_type = dict(event["headers"]).get(b"content-type", b"").decode()
                exchange.response = {"status": event["status"], "contentType": content_type}
            elif event["type"] == "http.response.body":
                exchange.add_body(bytes(event.get("body", b"")), self.clock())
            await send(event)

        try:
            await self.app(scope, recording_receive, recording_send)
        finally:
            # Unbounded: the append waits only for the appends before it, each one
            # write in a thread, which a bound could not stop (abandoned, the next
            # line would interleave with it).
            with trio.CancelScope(shield=True):
                await self.append(exchange)

    async def append(self, exchange: Exchange) -> None:
        try:
            await self.file.append(exchange.record())
        except OSError as error:
            if not self.failing:
                log.warning(
                    "cannot write the transcript %s: %s; exchanges go unrecorded until it "
                    "can be written",
                    self.path,
                    error.strerror or error,
                )
            self.failing = True
            return
        if self.failing:
            log.info("writing the transcript %s again", self.path)
            self.failing = False
