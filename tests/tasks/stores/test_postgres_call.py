"""The PostgreSQL store's hand-over of a call to a connection thread, on its own.

:class:`~presa_trio.tasks.stores.postgres_io.Call` is the one use of
``trio.lowlevel`` in presa_trio/tasks/; these tests hold it to the guard
rails trio's own primitives would give. The threads are plain threads fed
by a queue and serving as the store's do (take, run, report, hand back);
no database is needed.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

import outcome
import pytest
import trio

from presa_trio.tasks.stores.postgres_io import Call, Session

Lane = queue.SimpleQueue[Call[Any]]
#: What the store's threads pass each call; these calls need no connection.
NO_CONNECTION: Any = None


@pytest.fixture
def lane() -> Lane:
    return queue.SimpleQueue()


def serve_one(
    calls: Lane, taken: threading.Event | None = None, release: threading.Event | None = None
) -> threading.Thread:
    """A thread that serves one call as the store's threads do.

    With ``taken`` and ``release``: it says when it has taken the call, and
    runs it only once released.
    """

    def run() -> None:
        session = Session()
        call = calls.get()
        if not call.take(session):
            return
        if taken is not None and release is not None:
            taken.set()
            release.wait()
        result = outcome.capture(call.work, NO_CONNECTION)
        if session.report(call):
            call.hand_back(result)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


async def test_a_call_taken_by_a_thread_returns_its_outcome(lane: Lane) -> None:
    """presa-defined (the store's hand-over): the thread's result, or its exception,
    comes back to the waiting Trio task."""
    serve_one(lane)
    assert await Call(lambda _: 42).wait(lane.put) == 42

    def fail(_: Any) -> Any:
        raise LookupError("from the thread")

    serve_one(lane)
    with pytest.raises(LookupError, match="from the thread"):
        await Call(fail).wait(lane.put)


async def test_a_call_cancelled_while_it_waits_is_withdrawn_and_never_runs(lane: Lane) -> None:
    """presa-defined (trio's guard rails: a cancelled wait leaves nothing behind):
    cancelled before any thread took it, the call is withdrawn; a thread that
    comes later finds it taken and does not run it."""
    ran: list[str] = []
    with trio.move_on_after(0.05) as waited:
        await Call(lambda _: ran.append("ran")).wait(lane.put)
    assert waited.cancelled_caught
    serve_one(lane).join()
    assert ran == []


async def test_a_taken_call_is_abandoned_by_a_cancel_and_its_outcome_dropped(
    lane: Lane,
) -> None:
    """presa-defined (a store call is bounded and cancellable): once a thread has
    taken the call, its caller's cancellation abandons it at once; the thread
    then hands nothing back (its outcome is dropped, the waiter woken once)."""
    taken, release = threading.Event(), threading.Event()
    thread = serve_one(lane, taken, release)
    ran: list[str] = []
    with trio.CancelScope() as scope:

        async def cancel_once_taken() -> None:
            await trio.to_thread.run_sync(taken.wait)
            scope.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_once_taken)
            await Call(lambda _: ran.append("ran")).wait(lane.put)
    assert scope.cancelled_caught
    release.set()
    await trio.to_thread.run_sync(thread.join)
    assert ran == ["ran"]  # it ran, and nobody was woken by it
