"""The announcement -> action table, on its own: no Trio, no store, no runner.

Every kind of announcement a worker's process can see is one row of
:data:`~presa_trio.tasks.reactions.REACTIONS`, tested the way
``model.TRANSITIONS`` is: the table is whole, and each row says what the
spec and the store's rules ask.
"""

from __future__ import annotations

import attrs
import pytest

from presa_trio.tasks import model
from presa_trio.tasks.reactions import REACTIONS, STOP_REASONS, Action, Seen, seen
from presa_trio.tasks.stores.base import Lease, StoredTask

HERE, THERE = "this-process", "another-process"
T0 = 1_700_000_000_000


HELD_HERE = Lease(HERE, 1, T0 + 30_000)


def running(lease: Lease | None = HELD_HERE) -> StoredTask:
    task = model.create("t", now_ms=T0, ttl_ms=None, poll_interval_ms=None)
    return StoredTask("s", task, None, lease)


def test_the_table_covers_everything_an_announcement_can_say() -> None:
    """presa-defined (DESIGN: the announcement -> action rule is a pure table): every
    Seen has a row; every row that stops a worker names why, and only those."""
    assert set(REACTIONS) == set(Seen)
    stopping = {s for s, actions in REACTIONS.items() if Action.STOP in actions}
    assert set(STOP_REASONS) == stopping
    # A stopped worker does nothing else: stop is a row of its own.
    assert all(REACTIONS[s] == (Action.STOP,) for s in stopping)


@pytest.mark.parametrize(
    ("stored", "generation", "expected"),
    [
        (None, 1, Seen.DELETED),
        (attrs.evolve(running(), task=model.cancel(running().task, T0 + 1)), 1, Seen.CANCELLED),
        (attrs.evolve(running(), task=model.complete(running().task, {}, T0 + 1)), 1, Seen.ENDED),
        (
            # Ended with its lease let go of (store rule 4): its own outcome.
            attrs.evolve(running(None), task=model.complete(running().task, {}, T0 + 1)),
            1,
            Seen.ENDED,
        ),
        (
            # Failed by another process that claimed it (interrupted): stop here.
            attrs.evolve(
                running(Lease(THERE, 2, T0 + 1)),
                task=model.fail(running().task, {"code": -32603, "message": "x"}, T0 + 1),
            ),
            1,
            Seen.LEASE_TAKEN,
        ),
        (
            # Cancelled by another process that holds the lease now: a cancel still.
            attrs.evolve(
                running(Lease(THERE, 2, T0 + 1)), task=model.cancel(running().task, T0 + 1)
            ),
            1,
            Seen.CANCELLED,
        ),
        (running(None), 1, Seen.LEASE_DROPPED),
        (running(Lease(THERE, 2, T0 + 30_000)), 1, Seen.LEASE_TAKEN),
        (running(Lease(HERE, 3, T0 + 30_000)), 2, Seen.LEASE_RECLAIMED),
        (running(), 1, Seen.HELD),
    ],
    ids=[
        "deleted",
        "cancelled",
        "ended",
        "ended-without-lease",
        "failed-elsewhere",
        "cancelled-elsewhere",
        "dropped",
        "taken",
        "reclaimed",
        "held",
    ],
)
def test_each_announcement_is_read_as_one_row(
    stored: StoredTask | None, generation: int, expected: Seen
) -> None:
    """presa-defined (SEP-2663 §Task Cancellation; store rules 4 and 6): a cancel is
    read before the lease; a finished task whose lease went with it is the worker's
    own end, not a lost lease; one ended by another process is a lost lease."""
    assert seen(stored, HERE, generation) is expected


def test_what_each_row_asks_of_the_worker() -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation, "MUST" stop; §Task Update Requests,
    answers wake the keys they answer; T-45, T-49): a cancel anywhere stops the
    worker; a change under its own lease wakes the keys it answered; a lease this
    process reclaimed is adopted, not restarted."""
    assert REACTIONS[Seen.CANCELLED] == (Action.STOP,)
    assert STOP_REASONS[Seen.CANCELLED] == "tasks/cancel"
    assert REACTIONS[Seen.HELD] == (Action.WAKE,)
    assert REACTIONS[Seen.LEASE_RECLAIMED] == (Action.ADOPT, Action.WAKE)
    # Its own outcome coming back must not stop (and so interrupt) that write.
    assert Action.STOP not in REACTIONS[Seen.ENDED]
    assert STOP_REASONS[Seen.LEASE_TAKEN] == STOP_REASONS[Seen.LEASE_DROPPED] == "lease lost"
