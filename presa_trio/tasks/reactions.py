"""What a store announcement means for the worker this process runs: a pure table.

The store is the truth and a worker is this process's view of it
(DESIGN: "in-process state is a cache of what the store says"). Every
announced change of a task this process runs, made here or by another
process, is first read as one :class:`Seen` (:func:`seen`), and the table
:data:`REACTIONS` says what that asks of the worker, as
:data:`~presa_trio.tasks.model.TRANSITIONS` says where a task's event
leads. Nothing else decides it; the runner only carries the actions out
(:meth:`~presa_trio.tasks.housekeeping.Housekeeping.react`).
Like the task's own machine, this module imports neither Trio nor the
store, and is tested on its own.

Spec: SEP-2663 §Task Cancellation (a cancel from any process stops the
work), §Task Update Requests (answers wake the keys they answer); the
store's rules 4 (leases) and 6 (announcements) in
:mod:`presa_trio.tasks.stores.base`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from presa_trio.tasks.stores.base import Lease, StoredTask
from presa_trio.wire.tasks import Status


class Seen(enum.Enum):
    """What an announcement says about a task this process runs."""

    DELETED = "deleted"  # its TTL elapsed and the reaper deleted it
    CANCELLED = "cancelled"  # tasks/cancel, here or in another process
    ENDED = "ended"  # completed or failed under this process's lease: its own outcome
    LEASE_DROPPED = "lease_dropped"  # still running, but nobody holds it
    LEASE_TAKEN = "lease_taken"  # another process claimed it
    LEASE_RECLAIMED = "lease_reclaimed"  # this process claimed its own lapsed lease
    HELD = "held"  # running, under this worker's lease: answers, messages


class Action(enum.Enum):
    """What the runner does to the worker."""

    STOP = "stop"  # cancel the task's scope; the worker writes nothing more
    ADOPT = "adopt"  # run on under the announced lease generation
    WAKE = "wake"  # take the announced task: set the Events of the keys it answered


#: The table: what is seen -> what is done, in order.
REACTIONS: Mapping[Seen, tuple[Action, ...]] = {
    Seen.DELETED: (Action.STOP,),
    Seen.CANCELLED: (Action.STOP,),
    Seen.ENDED: (Action.WAKE,),
    Seen.LEASE_DROPPED: (Action.STOP,),
    Seen.LEASE_TAKEN: (Action.STOP,),
    Seen.LEASE_RECLAIMED: (Action.ADOPT, Action.WAKE),
    Seen.HELD: (Action.WAKE,),
}

#: Why a worker stopped, as its cancel scope's reason and in the log.
STOP_REASONS: Mapping[Seen, str] = {
    Seen.DELETED: "ttlMs elapsed",
    Seen.CANCELLED: "tasks/cancel",
    Seen.LEASE_DROPPED: "lease lost",
    Seen.LEASE_TAKEN: "lease lost",
}


def seen(stored: StoredTask | None, owner: str, generation: int) -> Seen:
    """Read an announced task (None: deleted) against this process and its worker's lease.

    ``owner`` is this process's name on its leases and ``generation`` the
    one the worker runs under. A cancel stops the worker whoever holds the
    lease. A task that ended otherwise under this process's lease, or whose
    lease went with its end (store rule 4), ended by its worker's own write,
    which may still be on its way back: nothing is stopped then (stopping
    would interrupt that very write). One another process holds was ended
    there (interrupted, say): this worker stops.
    """
    if stored is None:
        return Seen.DELETED
    if stored.task.status is Status.CANCELLED:
        return Seen.CANCELLED
    lease: Lease | None = stored.lease
    if lease is None:
        return Seen.ENDED if stored.task.terminal else Seen.LEASE_DROPPED
    if lease.owner != owner:
        return Seen.LEASE_TAKEN
    if stored.task.terminal:
        return Seen.ENDED
    if lease.generation > generation:
        return Seen.LEASE_RECLAIMED
    return Seen.HELD
