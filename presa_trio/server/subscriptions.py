"""Change notifications for ``subscriptions/listen`` streams.

A listen stream is a :class:`Subscription`: a filter plus the changes it has
not delivered yet. Publishing a change is synchronous and never blocks a
publisher in the Trio thread (one on a worker thread waits for the Trio
thread to take it); the stream's own task delivers the changes, as fast as
its transport takes them.

Every change notification carries the whole current state of what it is
about (a ``notifications/tasks`` holds the task as ``tasks/get`` would
return it; a list-changed or resource-updated notification says only "look
again"), so an undelivered change is superseded by a newer one about the
same thing: a subscription keeps only the newest per *topic* (method and
subject). A reader that falls behind therefore loses nothing it needs, and
its memory is bounded by the number of topics its filter names, not by how
many changes happen. Delivery follows publication order with superseded
changes left out: a topic that changes again moves behind the others, and
a subject's state never goes backwards.

A reader that stops reading holds its stream's task in the transport's
backpressure (a full socket or pipe) while changes keep coalescing. Only
when more than :data:`MAX_PENDING_TOPICS` distinct topics wait at once is
the subscription ended: its pending changes are dropped and the stream
ends with the listen result, so the client knows to listen again rather
than silently missing changes.

The core's own changes (a list changed, a resource updated: what the
server's code announces through ``ctx.server.notify_…``) are announced
(:meth:`ChangeBus.announce`): published here, and handed to the bus's relay,
if it has one, which carries them to the other processes serving the same
store (a PostgreSQL store: :mod:`presa_trio.tasks.stores.postgres.relay`),
whose listen streams hear them as well. A change heard from another process,
and a task's change (the store carries those itself), are only published.

Spec: 2026-07-28 basic/patterns/subscriptions; server/tools and
server/resources §List Changed Notification, server/resources
§Subscriptions; SEP-2663 §Task Status Notifications; how presa ends a
stream: docs/spec-notes.md entry 3.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import trio

#: Most distinct topics one subscription may hold undelivered before it is ended.
MAX_PENDING_TOPICS = 1024

#: The core's "list changed" notifications, one per list.
TOOLS_LIST_CHANGED = "notifications/tools/list_changed"
PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed"
RESOURCES_LIST_CHANGED = "notifications/resources/list_changed"
LIST_CHANGES = (TOOLS_LIST_CHANGED, PROMPTS_LIST_CHANGED, RESOURCES_LIST_CHANGED)
#: The core's notification that one resource changed.
RESOURCE_UPDATED = "notifications/resources/updated"


@attrs.frozen
class Change:
    """One change: the notification method, its params, and what it is about."""

    method: str
    params: dict[str, Any] = attrs.field(factory=dict)
    # What the change concerns (a task, a resource URI), for subscribers to
    # match on and for a newer change to supersede an older one; never sent.
    about: Hashable = None

    @property
    def topic(self) -> tuple[str, Hashable]:
        """A newer change with the same topic supersedes an undelivered older one."""
        return (self.method, self.about)


def resource_updated(uri: str) -> Change:
    """``notifications/resources/updated`` for ``uri``: its topic is the URI."""
    return Change(RESOURCE_UPDATED, {"uri": uri}, about=uri)


Wants = Callable[[Change], bool]

#: Takes a change announced here to the other processes; called on the Trio
#: thread, it must neither block nor raise.
Relay = Callable[[Change], None]


@attrs.define(eq=False, repr=False)
class Subscription:
    """The undelivered changes of one listen stream: the newest per topic, in order.

    Iterate it to receive them; the iteration ends when the subscription is
    ended (too many topics waiting, or the stream left the bus).
    """

    # Decides, per change, whether this stream asked for it.
    wants: Wants
    # Topic -> newest undelivered change; insertion order is delivery order.
    _pending: dict[tuple[str, Hashable], Change] = attrs.field(factory=dict)
    # Set when a change arrives or the subscription ends; replaced by each wait.
    _arrived: trio.Event = attrs.field(factory=trio.Event)
    ended: bool = False

    def offer(self, change: Change) -> None:
        """Keep ``change`` for delivery, superseding any undelivered one on its topic."""
        if self.ended:
            return
        self._pending.pop(change.topic, None)
        if len(self._pending) >= MAX_PENDING_TOPICS:
            self.end()
            return
        self._pending[change.topic] = change
        self._arrived.set()

    def end(self) -> None:
        """Drop what is pending; the iteration ends at its next step."""
        self.ended = True
        self._pending.clear()
        self._arrived.set()

    def finish(self) -> None:
        """Take no more changes; the iteration ends once the pending ones are delivered."""
        self.ended = True
        self._arrived.set()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Change:
        await trio.lowlevel.checkpoint()
        while not self._pending:
            if self.ended:
                raise StopAsyncIteration
            self._arrived = trio.Event()
            await self._arrived.wait()
        topic = next(iter(self._pending))
        return self._pending.pop(topic)


def in_run(token: trio.lowlevel.TrioToken | None) -> bool:
    """Whether this code runs in the Trio run of ``token``: not on a worker thread,
    nor in another ``trio.run`` (a thread may have a run of its own).

    Trio has no higher-level question for it; a run's token names the run.
    """
    try:
        return trio.lowlevel.current_trio_token() is token
    except RuntimeError:  # no Trio run in this thread
        return False


@attrs.define(eq=False, repr=False)
class ChangeBus:
    """Fan-out of changes to every open listen stream that asked for them."""

    _subscriptions: set[Subscription] = attrs.field(factory=set)
    # The Trio run the subscriptions live in, for publishers on other threads.
    _trio: trio.lowlevel.TrioToken | None = None
    # Set by close(): the server is shutting down and takes no new subscription.
    _closed: bool = False
    # Where announced changes go besides this bus, while :meth:`relaying` lasts.
    _relay: Relay | None = None

    @contextmanager
    def subscribe(self, wants: Wants) -> Iterator[Subscription]:
        """A subscription on this bus for the duration of the ``with`` block.

        After :meth:`close` it is finished from the start: the stream is
        acknowledged and ends at once.
        """
        subscription = Subscription(wants)
        self._trio = trio.lowlevel.current_trio_token()
        if self._closed:
            subscription.finish()
        else:
            self._subscriptions.add(subscription)
        try:
            yield subscription
        finally:
            self._subscriptions.discard(subscription)
            subscription.end()

    @property
    def listening(self) -> bool:
        """Whether any stream is subscribed: a publisher may skip building a change."""
        return bool(self._subscriptions)

    def publish(self, change: Change) -> None:
        """Offer ``change`` to every subscription that wants it, without blocking.

        The subscriptions belong to the Trio thread: a publisher on a worker
        thread (a ``thread=True`` tool calling ``ctx.server.notify_…``) hands
        the change over to it, and waits while it is offered. Code in
        another Trio run is refused (Trio's ``RuntimeError``): it cannot wait
        for this run without blocking its own.
        """
        if not self._subscriptions:
            return
        if not in_run(self._trio):
            trio.from_thread.run_sync(self.publish, change, trio_token=self._trio)
            return
        for subscription in self._subscriptions:
            if subscription.wants(change):
                subscription.offer(change)

    def announce(self, change: Change) -> None:
        """Publish a change of the core's own here, then hand it to the relay, if any.

        As :meth:`publish`, from any thread of this run's process: the relay
        is called on the Trio thread, after the local subscriptions took it.
        """
        if self._relay is None:
            self.publish(change)
            return
        if not in_run(self._trio):
            trio.from_thread.run_sync(self.announce, change, trio_token=self._trio)
            return
        self.publish(change)
        self._relay(change)

    @contextmanager
    def relaying(self, relay: Relay) -> Iterator[None]:
        """Hand every change announced to ``relay`` too, while the ``with`` block lasts.

        One relay at a time: a second while the first lasts is a bug
        (:class:`RuntimeError`).
        """
        if self._relay is not None:
            raise RuntimeError("this bus has a relay already")
        self._relay = relay
        self._trio = trio.lowlevel.current_trio_token()
        try:
            yield
        finally:
            self._relay = None

    def close(self) -> None:
        """Finish every listen stream, now and later: each delivers what is pending,
        then answers its listen with the result.

        Spec: subscriptions §Graceful Closure — a server tearing a subscription
        down (e.g. during shutdown) SHOULD send the listen result, then close.
        """
        self._closed = True
        for subscription in self._subscriptions:
            subscription.finish()
