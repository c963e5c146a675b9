"""Signals between processes: PostgreSQL LISTEN/NOTIFY, read on the Trio thread.

Every committed change of a task is announced on one channel by the
schema's trigger (:mod:`presa_trio.tasks.stores.postgres.schema`), to every
listening connection, in commit order. :func:`listen` keeps one connection
listening and hands each announcement to the store as a store event:
:class:`~presa_trio.tasks.stores.base.Changed` with the task as stored, or
:class:`~presa_trio.tasks.stores.base.Deleted`.

The listening connection needs no thread: Trio's I/O loop waits until its
socket is readable (a Trio socket on a duplicate of libpq's, peeking one
byte: trio's public API, one more system call per wake-up), then libpq
reads what arrived (``consume_input``, which never blocks: libpq keeps its
sockets non-blocking) and returns the notifications it holds. Only
connecting, which blocks, runs in a thread.
A notification so costs no hand-over between threads, no wake-up of the
Trio thread from outside, and no share of Python's interpreter lock
taken from the Trio thread; cancelling :func:`listen` ends it at once.

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
(the store re-reads every task it has announced or read, and delivers
what changed; then :data:`~presa_trio.tasks.stores.base.RESYNC`, on which the
runner re-reads its workers' tasks). Whatever commits after the
``LISTEN`` is announced; whatever committed before it is found by the
re-read; so no worker stays parked and no listen stream silent on a lost
signal. A read that fails counts as a lost connection: listen again,
then re-read again. Reconnections back off exponentially, up to a cap.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import psycopg
import trio
from psycopg import sql

from presa_trio.tasks.stores.base import (
    Changed,
    Deleted,
    Deliver,
    StoredTask,
    StoreError,
    StoreEvent,
)
from presa_trio.tasks.stores.local import deliver_safely
from presa_trio.tasks.stores.postgres.schema import CHANNEL
from presa_trio.tasks.stores.record import from_record

log = logging.getLogger(__name__)

#: Whether the change of a task (id, ``(revision, lease generation)``) was
#: delivered already.
Delivered = Callable[[str, tuple[int, int]], bool]

#: The task as stored now, or None if it is gone (read through the store).
Read = Callable[[str], Awaitable[StoredTask | None]]


@attrs.define
class Backoff:
    """Delays between reconnection attempts: 0.1 s, doubling, at most 5 s."""

    first: float = 0.1
    cap: float = 5.0
    _next: float = attrs.field(init=False, default=0.0)

    def reset(self) -> None:
        self._next = self.first

    def delay(self) -> float:
        current = self._next or self.first
        self._next = min(current * 2, self.cap)
        return current


@attrs.frozen
class Listener:
    """What :func:`listen` reports to: the store's side of the module docstring."""

    deliver: Deliver
    delivered: Delivered
    read: Read
    resync: Callable[[], Awaitable[None]]


async def listen(
    conninfo: str,
    listener: Listener,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Deliver every announced change until cancelled; started once listening.

    ``listener.deliver`` runs once per event, in commit order.
    """
    backoff = Backoff()
    reconnected = False
    while True:
        try:
            # Abandoned if cancelled: a shutdown never waits for a connection to come.
            connection = await trio.to_thread.run_sync(
                connect_and_listen, conninfo, abandon_on_cancel=True
            )
        except psycopg.Error as error:
            log.warning("cannot listen for task changes: %s", error)
        else:
            try:
                if reconnected:
                    await listener.resync()
                else:
                    task_status.started()
                reconnected = True
                backoff.reset()
                await pump(connection, listener)
            except (psycopg.Error, StoreError) as error:
                log.warning("lost the connection listening for task changes: %s", error)
            finally:
                # Nothing waits on its socket any more: closing is one
                # message to the server, and never blocks for long.
                connection.close()
        await trio.sleep(backoff.delay())


def connect_and_listen(conninfo: str, channel: str = CHANNEL) -> psycopg.Connection[Any]:
    # ``conninfo`` carries the store's bounds (database.bounded_conninfo).
    connection = psycopg.connect(conninfo, autocommit=True)
    try:
        connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    except BaseException:
        connection.close()
        raise
    return connection


async def pump(connection: psycopg.Connection[Any], listener: Listener) -> None:
    """Deliver announcements as they arrive, until cancelled or disconnected."""
    pgconn = connection.pgconn
    encoding = connection.info.encoding
    with trio.socket.from_stdlib_socket(socket.socket(fileno=os.dup(pgconn.socket))) as wire:
        while True:
            # Returns once something arrived (b"" at the end): libpq reads it.
            await wire.recv(1, socket.MSG_PEEK)
            pgconn.consume_input()
            while (notification := pgconn.notifies()) is not None:
                event = await event_of(notification.extra.decode(encoding), listener)
                if event is not None:
                    deliver_safely(listener.deliver, event)


async def event_of(payload: str, listener: Listener) -> StoreEvent | None:
    """The store event a payload announces, None if nothing new.

    A change already delivered is dropped undecoded; a record too large to
    announce is read.
    """
    message = json.loads(payload)
    if "stored" in message:
        record = message["stored"]
        lease = record["lease"]
        version = (record["task"]["revision"], 0 if lease is None else lease["generation"])
        if listener.delivered(record["task"]["taskId"], version):
            return None
        return Changed(from_record(record))
    if "deleted" in message:
        return Deleted(message["scope"], message["deleted"])
    stored = await listener.read(message["changed"])
    # Deleted since: its deletion is announced next.
    return None if stored is None else Changed(stored)
