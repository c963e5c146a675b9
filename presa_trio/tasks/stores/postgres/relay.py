"""The server's own change notifications, carried between the processes sharing a database.

A change the server's code announces (``ctx.server.notify_tools_list_changed()``
and the other list kinds, ``notify_resource_updated(uri)``:
:meth:`~presa_trio.server.subscriptions.ChangeBus.announce`) is published on
its process's bus at once; the process's :class:`ChangeRelay` then carries
it to every other process on the database, whose listen streams hear it as
theirs would. Task notifications need no relay: every process hears the
store's own announcements (:mod:`presa_trio.tasks.stores.postgres.listen`).

- **Sending.** :meth:`ChangeRelay.offer` (the bus's relay, on the Trio
  thread) puts the change in a bounded memory channel and returns: it
  never blocks the code that announced it, and never fails it. When
  :data:`MAX_QUEUED` changes wait, the sender being behind (the database
  slow or gone), a new one is **dropped**, with one warning line until the
  sender has caught up again. The sender takes whatever waits, each change
  once however often it was announced meanwhile (each says only "look
  again"), and announces them in one statement on the store's background
  lane, on :data:`RELAY_CHANNEL`, each with this process's origin id. What
  the database will not take or cannot be reached for is dropped, in one
  warning line: its notifications cannot be resent in their moment.
- **Hearing.** :func:`~presa_trio.tasks.stores.postgres.listen.listen` keeps
  a connection listening on the channel. A change from another origin is
  published on this process's bus, never announced, so it is not relayed
  again; one from this process's origin was published here already and is
  dropped. A payload that is not a relayed change is ignored, in one line
  of the log (any role that may connect may ``NOTIFY``).
- **A lost connection.** What was announced while this process did not
  listen reached no stream here. After listening again, each list's
  ``list_changed`` is published (tools, prompts, resources), so every
  stream that asked re-reads its lists. A ``resources/updated`` cannot be
  made good so: which URIs changed is not known, and announcing every URI
  a stream here follows would be a guess; those are lost, as they are when
  the sender drops them.

Spec: 2026-07-28 basic/patterns/subscriptions; server/tools §List Changed
Notification; server/prompts §List Changed Notification; server/resources
§List Changed Notification and §Subscriptions.
"""

from __future__ import annotations

import json
import logging
from functools import partial
from typing import Any

import attrs
import trio

from presa_trio.server.subscriptions import (
    LIST_CHANGES,
    RESOURCE_UPDATED,
    Change,
    ChangeBus,
    resource_updated,
)
from presa_trio.tasks.stores.base import StoreError
from presa_trio.tasks.stores.postgres.database import Connection, Database, Lane
from presa_trio.tasks.stores.postgres.listen import listen, string_of

log = logging.getLogger(__name__)

#: The channel relayed changes are announced on.
RELAY_CHANNEL = "presa_server_changes"

#: Most changes waiting to be sent before a new one is dropped.
MAX_QUEUED = 1024

#: The longest payload PostgreSQL announces, in bytes (its default build's limit).
MAX_PAYLOAD_BYTES = 7999

#: Announces each payload, in order, in one statement (one transaction).
NOTIFY_ALL = (
    "SELECT pg_notify(%s, payload)"
    " FROM unnest(%s::text[]) WITH ORDINALITY AS sent(payload, n) ORDER BY n"
)


def payload_of(change: Change, origin: str) -> str:
    """What announces ``change`` on the channel: its method, params and origin."""
    return json.dumps({"origin": origin, "method": change.method, "params": change.params})


def notify_all(payloads: list[str], connection: Connection) -> None:
    """In a thread: announce ``payloads`` on :data:`RELAY_CHANNEL`, in order, in one statement."""
    connection.execute(NOTIFY_ALL, (RELAY_CHANNEL, payloads))


def fits(payload: str) -> bool:
    """Whether PostgreSQL announces ``payload``; one too long (a URI of kilobytes) is
    dropped alone, in one warning line, not with the others sent with it."""
    if len(payload.encode()) <= MAX_PAYLOAD_BYTES:
        return True
    log.warning("a change notification too long to relay was dropped: %.100s", payload)
    return False


def change_of(message: Any) -> Change:
    """The change a decoded payload announces; :class:`ValueError` if it is none presa relays."""
    method = string_of(message["method"])
    if method == RESOURCE_UPDATED:
        return resource_updated(string_of(message["params"]["uri"]))
    if method not in LIST_CHANGES:
        raise ValueError(f"{method} is not a change presa relays")
    return Change(method)


@attrs.define(eq=False, repr=False)
class ChangeRelay:
    """One process's side of the relay; see the module docstring."""

    database: Database
    bus: ChangeBus
    # This process run's id: its own changes, heard again, are dropped.
    origin: str
    _send: trio.MemorySendChannel[Change] = attrs.field(init=False)
    _queued: trio.MemoryReceiveChannel[Change] = attrs.field(init=False)
    # Whether a change was dropped since the sender last caught up (one warning per episode).
    _behind: bool = False

    def __attrs_post_init__(self) -> None:
        self._send, self._queued = trio.open_memory_channel[Change](MAX_QUEUED)

    def offer(self, change: Change) -> None:
        """The bus's relay: queue ``change`` for the other processes, or drop it if full."""
        try:
            self._send.send_nowait(change)
        except trio.WouldBlock:
            if not self._behind:
                log.warning(
                    "the change relay is %d notifications behind: new ones are dropped until "
                    "it catches up, and other processes' listen streams miss them",
                    MAX_QUEUED,
                )
            self._behind = True

    async def send_all(self) -> None:
        """Announce what is queued, until cancelled."""
        while True:
            waiting = {payload_of(await self._queued.receive(), self.origin): None}
            while True:
                try:
                    waiting[payload_of(self._queued.receive_nowait(), self.origin)] = None
                except trio.WouldBlock:
                    break
            self._behind = False
            payloads = [payload for payload in waiting if fits(payload)]
            if not payloads:
                continue
            try:
                await self.database.run(partial(notify_all, payloads), Lane.BACKGROUND)
            except StoreError as error:
                log.warning(
                    "could not relay %d change notifications to the other processes: %s",
                    len(payloads),
                    error,
                )

    async def hear(self, payload: str) -> None:
        """Publish a change another process announced; drop this process's own."""
        message = json.loads(payload)
        if string_of(message["origin"]) != self.origin:
            self.bus.publish(change_of(message))

    async def resync(self) -> None:
        """After a lost connection: every list may have changed unheard."""
        for method in LIST_CHANGES:
            self.bus.publish(Change(method))


async def relay_changes(
    database: Database,
    bus: ChangeBus,
    origin: str,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Relay ``bus``'s announced changes, and hear other processes', until cancelled.

    Started once listening, with the relay set on the bus. Failure policy of
    its nursery: the listener does not fail (it connects again, backing
    off), and the sender drops what the store cannot take, so only a defect
    (an exception no store classified) ends it, and with it this call: its
    caller decides (the runner's keeper logs it and starts the relay again).
    Cancellation ends both, and takes the relay off the bus.
    """
    relay = ChangeRelay(database, bus, origin)
    async with trio.open_nursery() as nursery:
        await nursery.start(listen, database.conninfo, RELAY_CHANNEL, relay.hear, relay.resync)
        with bus.relaying(relay.offer):
            task_status.started()
            await relay.send_all()
