"""Signals between processes: PostgreSQL LISTEN/NOTIFY, delivered into Trio.

Every committed change of a task is announced on one channel by the
schema's trigger (:mod:`presa_trio.tasks.postgres_schema`), to every
listening connection, in commit order. :func:`listen` keeps one connection
listening, in a thread of its own, and hands each announcement to Trio as
a store event: :class:`~presa_trio.tasks.store.Changed` with the task as
stored, or :class:`~presa_trio.tasks.store.Deleted`.

A notification can be lost: the listening connection drops (the database
restarts, the network fails) and whatever commits meanwhile is announced
to nobody. So after every reconnection, once ``LISTEN`` is in place again,
:func:`listen` awaits ``resync``, which re-reads what this process holds
(the store re-reads every task it has announced or read, and delivers
what changed; then :data:`~presa_trio.tasks.store.RESYNC`, on which the
runner re-reads its workers' tasks). Whatever commits after the
``LISTEN`` is announced; whatever committed before it is found by the
re-read; so no worker stays parked and no listen stream silent on a lost
signal. A re-read that fails counts as a lost connection: listen again,
then re-read again.

The thread waits on the connection in short slices and, between them, asks
Trio whether it was cancelled, so cancelling :func:`listen` ends the thread
within one slice. It queues each event on the Trio thread without waiting
for it to run. Reconnections back off exponentially, up to a cap.

Most notifications need no work at all: every process hears its own writes
again (it announced them to its watchers when they committed), and a task
moves through several revisions in a burst. So before decoding a record
the thread asks ``delivered(task_id, version)`` whether that version, or a
newer one, was delivered already, and drops the notification unread if so.
Versions only grow, so an answer read while the Trio thread updates it can
only be too old, which lets a stale notification through to the Trio
thread's own check, never drops a fresh one. This keeps the thread's share
of the interpreter lock, and the Trio thread's wake-ups, to the changes
this process has not seen.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import psycopg
import trio
from psycopg import sql

from presa_trio.tasks.postgres_schema import CHANNEL, COLUMNS, decode
from presa_trio.tasks.record import from_record
from presa_trio.tasks.store import Changed, Deleted, Deliver, StoreEvent, StoreUnavailable

log = logging.getLogger(__name__)

#: How long the thread waits for a notification before checking for cancellation.
SLICE_S = 0.2

#: Whether the change of a task (id, ``(revision, lease generation)``) was
#: delivered already. Called from the listening thread: it may only read.
Delivered = Callable[[str, tuple[int, int]], bool]


def nothing_delivered(task_id: str, version: tuple[int, int]) -> bool:
    """The default: decode and hand over every notification."""
    return False


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


async def listen(
    conninfo: str,
    deliver: Deliver,
    resync: Callable[[], Awaitable[None]],
    delivered: Delivered = nothing_delivered,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Deliver every announced change until cancelled; started once listening.

    ``deliver`` runs in the Trio thread, once per event, in commit order;
    ``delivered`` filters in the listening thread (see the module docstring).
    """
    backoff = Backoff()
    # The listening thread's own slot: it lives as long as this call, and
    # must not hold one of the slots Trio's other threads share.
    slot = trio.CapacityLimiter(1)
    reconnected = False
    token = trio.lowlevel.current_trio_token()

    def hand_over(event: StoreEvent) -> None:
        """From the thread: queue ``deliver(event)`` on the Trio thread, without waiting.

        Trio runs queued callbacks in order, so events keep commit order, and
        the thread reads on at once instead of waiting for a context switch
        per notification.
        """
        token.run_sync_soon(deliver_safely, deliver, event)

    while True:
        try:
            connection = await trio.to_thread.run_sync(connect_and_listen, conninfo)
        except psycopg.OperationalError as error:
            log.warning("cannot listen for task changes: %s", error)
        else:
            try:
                if reconnected:
                    await resync()
                else:
                    task_status.started()
                reconnected = True
                backoff.reset()
                await trio.to_thread.run_sync(pump, connection, hand_over, delivered, limiter=slot)
            except (psycopg.OperationalError, StoreUnavailable) as error:
                log.warning("lost the connection listening for task changes: %s", error)
            finally:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(connection.close)
        await trio.sleep(backoff.delay())


def connect_and_listen(conninfo: str) -> psycopg.Connection[Any]:
    connection = psycopg.connect(conninfo, autocommit=True, connect_timeout=3)
    try:
        connection.execute(sql.SQL("LISTEN {}").format(sql.Identifier(CHANNEL)))
    except BaseException:
        connection.close()
        raise
    return connection


def pump(connection: psycopg.Connection[Any], hand_over: Deliver, delivered: Delivered) -> None:
    """In the thread: hand announcements to Trio until cancelled or disconnected."""
    while True:
        for notification in connection.notifies(timeout=SLICE_S):
            event = event_of(connection, notification.payload, delivered)
            if event is not None:
                hand_over(event)
        trio.from_thread.check_cancelled()


def deliver_safely(deliver: Deliver, event: StoreEvent) -> None:
    """A callback Trio runs for the thread must not raise: that would end the run."""
    try:
        deliver(event)
    except Exception:
        log.exception("a watcher failed on %r", event)


def event_of(
    connection: psycopg.Connection[Any], payload: str, delivered: Delivered = nothing_delivered
) -> StoreEvent | None:
    """The store event a payload announces, None if nothing new.

    A change already ``delivered`` is dropped undecoded; a record too large
    to announce is read.
    """
    message = json.loads(payload)
    if "stored" in message:
        record = message["stored"]
        lease = record["lease"]
        version = (record["task"]["revision"], 0 if lease is None else lease["generation"])
        if delivered(record["task"]["taskId"], version):
            return None
        return Changed(from_record(record))
    if "deleted" in message:
        return Deleted(message["scope"], message["deleted"])
    row = connection.execute(
        f"SELECT {COLUMNS} FROM presa_tasks WHERE task_id = %s", (message["changed"],)
    ).fetchone()
    # Deleted since: its deletion is announced next.
    return None if row is None else Changed(decode(row))
