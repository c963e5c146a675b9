"""Change notifications for ``subscriptions/listen`` streams.

A listen stream is a subscriber: a filter plus the send end of a Trio memory
channel. Publishing a change is synchronous (``send_nowait``) and never
blocks the publisher: a subscriber whose buffer is full is closed, which ends
its stream, rather than silently missing a change.

Spec: 2026-07-28 basic/patterns/subscriptions; wire §11.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import trio

#: How many undelivered changes one stream may hold before it is closed.
SUBSCRIBER_BUFFER = 64


@attrs.frozen
class Change:
    """One change: the notification method, its params, and what it is about."""

    method: str
    params: dict[str, Any] = attrs.field(factory=dict)
    # What the change concerns, for subscribers to match on; never sent.
    about: Any = None


Wants = Callable[[Change], bool]


@attrs.define(eq=False)
class _Subscriber:
    # Decides, per change, whether this stream asked for it.
    wants: Wants
    # Closed by the bus on overflow, by the subscriber when it leaves.
    send: trio.MemorySendChannel[Change]


@attrs.define(eq=False, repr=False)
class ChangeBus:
    """Fan-out of changes to every open listen stream that asked for them."""

    _subscribers: set[_Subscriber] = attrs.field(factory=set)

    @contextmanager
    def subscribe(self, wants: Wants) -> Iterator[trio.MemoryReceiveChannel[Change]]:
        """Register a subscriber for the duration of the ``with`` block."""
        send, receive = trio.open_memory_channel[Change](SUBSCRIBER_BUFFER)
        subscriber = _Subscriber(wants, send)
        self._subscribers.add(subscriber)
        try:
            with receive:
                yield receive
        finally:
            self._subscribers.discard(subscriber)
            send.close()

    def publish(self, change: Change) -> None:
        """Deliver ``change`` to every subscriber that wants it, without blocking."""
        for subscriber in list(self._subscribers):
            if not subscriber.wants(change):
                continue
            try:
                subscriber.send.send_nowait(change)
            except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
                self._subscribers.discard(subscriber)
                subscriber.send.close()

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)
