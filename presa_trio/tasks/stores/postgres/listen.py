"""Signals between processes: PostgreSQL LISTEN/NOTIFY, read on the Trio thread.

Two channels carry them, each to every listening connection, in commit
order: every committed change of a task, announced by the schema's trigger
(:data:`~presa_trio.tasks.stores.postgres.schema.CHANNEL`), and every append
to a task's event log (:data:`~presa_trio.tasks.stores.postgres.event_logs.EVENTS_CHANNEL`).
:func:`listen` is the one loop that keeps a connection listening on a
channel, for both: it hands each payload to the store's side, and after a
reconnection awaits the store's resync first. :class:`TaskChanges` is the
store's side for task changes (a payload becomes
:class:`~presa_trio.tasks.stores.base.Changed` with the task as stored, or
:class:`~presa_trio.tasks.stores.base.Deleted`); :class:`Appends` the side
for event logs (a payload names the task whose log grew).

The listening connection needs no thread: Trio's I/O loop waits until its
socket is readable (:func:`trio.lowlevel.wait_readable`, trio's primitive
for a descriptor it does not own), then libpq reads what arrived
(``consume_input``, which never blocks: libpq keeps its sockets
non-blocking) and returns the notifications it holds. Only connecting,
which blocks, runs in a thread. Cancelling :func:`listen` ends it at once.
Every delivery goes through
:func:`~presa_trio.tasks.stores.local.deliver_safely`: a watcher that fails
ends neither the loop nor the other watchers' deliveries.

Most notifications need no work at all: every process hears its own writes
again (it announced them to its watchers when they committed), and a task
moves through several revisions in a burst. So before decoding a record,
:func:`listen` asks ``delivered(task_id, version)`` whether that version, or
a newer one, was delivered already, and drops the notification if so. A
record too large for a notification is announced by id alone, and read
(``read``) before it is delivered, in its turn, so events keep commit order.

A notification can be lost: the listening connection drops (the database
restarts, the network fails) and whatever commits meanwhile is announced
to nobody. So after every reconnection, once ``LISTEN`` is in place again,
:func:`listen` awaits ``resync``, which re-reads what this process holds
(the store re-reads every unfinished task it has announced or read, and
delivers what changed; then :data:`~presa_trio.tasks.stores.base.RESYNC`, on which the
runner re-reads its workers' tasks). Whatever commits after the
``LISTEN`` is announced; whatever committed before it is found by the
re-read; so no worker stays parked and no listen stream silent on a lost
signal. A read that fails counts as a lost connection: listen again,
then re-read again. Reconnections wait as every retry in the runtime does
(:class:`~presa_trio.tasks.backoff.Backoff`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import attrs
import psycopg
import trio
from psycopg import sql

from presa_trio.tasks.backoff import Backoff
from presa_trio.tasks.stores.base import (
    RESYNC,
    Changed,
    Deleted,
    Deliver,
    DeliverAppend,
    StoredTask,
    StoreError,
    StoreEvent,
)
from presa_trio.tasks.stores.local import deliver_safely
from presa_trio.tasks.stores.postgres.database import stay_when_idle
from presa_trio.tasks.stores.postgres.errors import first_line
from presa_trio.tasks.stores.record import UNDELIVERED, from_record, readable

log = logging.getLogger(__name__)

#: Whether the change of a task (id, ``(revision, lease generation)``) was
#: delivered already.
Delivered = Callable[[str, tuple[int, int]], bool]

#: The task as stored now, or None if it is gone (read through the store).
Read = Callable[[str], Awaitable[StoredTask | None]]


async def listen(
    conninfo: str,
    channel: str,
    hear: Callable[[str], Awaitable[None]],
    resync: Callable[[], Awaitable[None]],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Hand every payload announced on ``channel`` to ``hear`` until cancelled.

    Started once listening; after every reconnection, ``resync`` is awaited
    before anything else is heard. ``hear`` runs once per notification,
    in commit order; a store error it raises (a read that failed) counts as
    a lost connection.
    """
    backoff = Backoff()
    reconnected = False
    while True:
        try:
            # Abandoned if cancelled: a shutdown never waits for a connection to come.
            connection = await trio.to_thread.run_sync(
                connect_and_listen, conninfo, channel, abandon_on_cancel=True
            )
        except psycopg.Error as error:
            log.warning("cannot listen on %s: %s", channel, first_line(error))
        else:
            try:
                if reconnected:
                    await resync()
                else:
                    task_status.started()
                reconnected = True
                backoff.reset()
                await pump(connection, hear)
            except (psycopg.Error, StoreError) as error:
                log.warning("lost the connection listening on %s: %s", channel, first_line(error))
            finally:
                # Nothing waits on its socket any more: closing is one
                # message to the server, and never blocks for long.
                connection.close()
        await backoff.wait()


def connect_and_listen(conninfo: str, channel: str) -> psycopg.Connection[Any]:
    """In a thread: a new connection, listening on ``channel``."""
    # ``conninfo`` carries the store's bounds (database.bounded_conninfo).
    connection = psycopg.connect(conninfo, autocommit=True)
    try:
        stay_when_idle(connection)
        connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    except BaseException:
        connection.close()
        raise
    return connection


#: What reading a payload that presa did not send raises: text that is not JSON,
#: JSON nested deeper than the decoder goes (``RecursionError``), JSON of another
#: shape (:func:`string_of`). Any role that may connect to the database may
#: ``NOTIFY`` on presa's channels.
FOREIGN = (ValueError, RecursionError, KeyError, TypeError)


def string_of(value: object) -> str:
    """A task id or scope read from a payload; :class:`TypeError` if it is not a string."""
    if not isinstance(value, str):
        raise TypeError(f"a string was expected, not {type(value).__name__}")
    return value


async def pump(connection: psycopg.Connection[Any], hear: Callable[[str], Awaitable[None]]) -> None:
    """Hear announcements as they arrive, until cancelled or disconnected.

    A payload presa did not send is ignored, in one line of the log: it
    must not end the listening, which would lose what follows.
    """
    pgconn = connection.pgconn
    encoding = connection.info.encoding
    while True:
        await trio.lowlevel.wait_readable(pgconn.socket)
        pgconn.consume_input()  # raises once the connection is lost
        while (notification := pgconn.notifies()) is not None:
            payload = notification.extra.decode(encoding)
            try:
                await hear(payload)
            except FOREIGN as error:
                channel = notification.relname.decode(encoding)
                log.warning(
                    "ignored a notification on %s that is not presa's (%s): %.100r",
                    channel,
                    error,
                    payload,
                )


@attrs.frozen
class TaskChanges:
    """The store's side of task changes: see the module docstring."""

    deliver: Deliver
    delivered: Delivered
    read: Read
    resync: Callable[[], Awaitable[None]]

    async def hear(self, payload: str) -> None:
        event = await self.event_of(payload)
        if event is not None:
            deliver_safely(self.deliver, event)

    async def event_of(self, payload: str) -> StoreEvent | None:
        """The store event a payload announces, None if nothing new.

        A change already delivered is dropped undecoded; a record too large to
        announce is read.
        """
        message = json.loads(payload)
        if "stored" in message:
            record = message["stored"]
            lease = record["lease"]
            version = (record["task"]["revision"], 0 if lease is None else lease["generation"])
            task_id = string_of(record["task"]["taskId"])
            if self.delivered(task_id, version):
                return None
            stored = readable(task_id, partial(from_record, record), UNDELIVERED)
            return None if stored is None else Changed(stored)
        if "deleted" in message:
            return Deleted(string_of(message["scope"]), string_of(message["deleted"]))
        stored = await self.read(string_of(message["changed"]))
        # Deleted since: its deletion is announced next.
        return None if stored is None else Changed(stored)


@attrs.frozen
class Appends:
    """The event logs' side: each payload names a task whose log grew."""

    deliver: DeliverAppend

    async def hear(self, payload: str) -> None:
        deliver_safely(self.deliver, string_of(json.loads(payload)["taskId"]))

    async def resync(self) -> None:
        """Appends made while no connection listened were announced to nobody."""
        deliver_safely(self.deliver, RESYNC)
