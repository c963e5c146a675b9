"""Requests answered by a stream of notifications: ``subscriptions/listen``, ``tasks/stream``.

Both stay open while the server sends notifications on the request's own
response stream, and end with the request's result. A
:class:`NotificationStream` reads such a response one notification at a
time: a JSON-RPC error raises :class:`~presa_trio.testing.RequestFailed`,
the result ends it (``trio.EndOfChannel``, or the end of ``async for``),
and a notification that does not come within :data:`WAIT` seconds fails
the test rather than hanging it. Leaving the ``async with`` block closes
the stream, as a client closing its connection does.

Spec: 2026-07-28 basic/patterns/subscriptions §Opening a Stream,
§Acknowledgment, §Receiving Notifications, §Graceful Closure; SEP-2694
(draft) §tasks/stream, §notifications/tasks/event.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Generic, TypeVar

import attrs
import trio

from presa_trio.testing.driver import McpClient, RequestFailed, Stream, request
from presa_trio.wire.convert import from_wire
from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import EVENT_NOTIFICATION, StreamedTaskEvent

T = TypeVar("T")

#: How long a helper waits for what the server must send before it fails the test, in seconds.
WAIT = 10.0
#: The notification a listen stream opens with.
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"


@attrs.frozen
class Notification:
    """A notification as received: its method, its params, and their ``_meta`` apart."""

    method: str
    params: JSONObject
    meta: JSONObject

    @classmethod
    def read(cls, message: JSONObject) -> Notification:
        params = dict(message.get("params") or {})
        return cls(message["method"], params, params.pop("_meta", {}))


@attrs.define(eq=False)
class NotificationStream(Generic[T]):
    """An open request's response: its notifications, read one at a time, until its result."""

    _stream: Stream
    # Reads one notification message into what the stream yields.
    _read: Callable[[JSONObject], T]
    # The request's result, once it arrived (the stream is then over).
    result: JSONObject | None = None

    async def next(self) -> T:
        """The next notification; ``trio.EndOfChannel`` once the result has come.

        Read after its ``async with`` block, where the client has closed the
        stream, ``trio.ClosedResourceError``; a notification not come within
        :data:`WAIT` seconds, ``trio.TooSlowError``.
        """
        if self.result is not None:
            raise trio.EndOfChannel
        if self._stream.closed:
            raise trio.ClosedResourceError(
                "the stream was closed when its async with block ended; read it inside the block"
            )
        try:
            with trio.fail_after(WAIT):
                message = await self._stream.next_message()
        except trio.TooSlowError:
            raise trio.TooSlowError(f"no notification came within {WAIT:g} s") from None
        if "error" in message:
            raise RequestFailed(self._stream.response.status, message["error"])
        if "result" in message:
            self.result = message["result"]
            raise trio.EndOfChannel
        return self._read(message)

    def __aiter__(self) -> NotificationStream[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.next()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None


@asynccontextmanager
async def open_notification_stream(
    raw: McpClient, method: str, params: Mapping[str, Any], read: Callable[[JSONObject], T]
) -> AsyncIterator[NotificationStream[T]]:
    """Send ``method`` and read its response as it streams; ``params`` carries its ``_meta``.

    A plain JSON answer is read at once: an error raises here, a result is
    a stream with nothing in it.
    """
    async with raw.stream(request(method, params)) as opened:
        notifications = NotificationStream(opened, read)
        if not opened.response.is_event_stream:
            with contextlib.suppress(trio.EndOfChannel):
                await notifications.next()
        yield notifications


def read_task_event(message: JSONObject) -> StreamedTaskEvent:
    """One ``notifications/tasks/event``, typed; any other notification fails the test."""
    if message.get("method") != EVENT_NOTIFICATION:
        raise AssertionError(f"a task's stream carried {message.get('method')}")
    return from_wire(message["params"], StreamedTaskEvent)


@attrs.define(eq=False)
class Listener:
    """An open ``subscriptions/listen`` stream: what the server honoured, then the changes.

    ``await listener.next()`` is the next change notification (its
    ``_meta.subscriptionId`` in ``meta``); ``async for`` reads them until
    the server ends the stream.
    """

    notifications: NotificationStream[Notification]
    # The filter as the acknowledgement names it: the subset this server delivers.
    honoured: JSONObject

    async def next(self) -> Notification:
        return await self.notifications.next()

    def __aiter__(self) -> NotificationStream[Notification]:
        return self.notifications


@asynccontextmanager
async def open_listener(
    raw: McpClient, wanted: Mapping[str, Any], meta: JSONObject
) -> AsyncIterator[Listener]:
    """Open ``subscriptions/listen`` with the filter ``wanted``; acknowledged on return.

    Spec: basic/patterns/subscriptions §Acknowledgment — the server's first
    message names the honoured filter, and every change after it is sent.
    """
    params = {"notifications": dict(wanted), "_meta": meta}
    opening = open_notification_stream(raw, "subscriptions/listen", params, Notification.read)
    async with opening as notifications:
        acknowledged = await notifications.next()
        if acknowledged.method != ACKNOWLEDGED:
            raise AssertionError(f"a listen stream opened with {acknowledged.method}")
        yield Listener(notifications, acknowledged.params["notifications"])
