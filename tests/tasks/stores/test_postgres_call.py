"""The PostgreSQL store's hand-over of a call to a connection thread, on its own.

:class:`~presa_trio.tasks.stores.postgres.database.Call` is the one use of
``trio.lowlevel`` in presa_trio/tasks/; these tests hold it to the guard
rails trio's own primitives would give. The threads are plain threads fed
by a queue and serving as the store's do (take, run, report, hand back);
no database is needed.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import outcome
import pytest
import trio
import trio.lowlevel

from presa_trio.tasks.stores.postgres.database import Call, Session

Lane = queue.SimpleQueue[Call[Any]]
#: What the store's threads pass each call; these calls need no connection.
NO_CONNECTION: Any = None
#: The deadline of a call in these tests, in seconds: far enough not to matter.
BOUND_S = 30.0


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


async def handed(call: Call[Any], submit: Callable[[Call[Any]], None]) -> Any:
    """``call.wait`` within a deadline of :data:`BOUND_S`, as ``Database.run`` does."""
    with trio.move_on_after(BOUND_S) as bound:
        return await call.wait(submit, bound, time.monotonic() + BOUND_S)
    raise AssertionError("the call's deadline passed")


async def test_a_call_taken_by_a_thread_returns_its_outcome(lane: Lane) -> None:
    """presa-defined (the store's hand-over): the thread's result, or its exception,
    comes back to the waiting Trio task."""
    serve_one(lane)
    assert await handed(Call(lambda _: 42), lane.put) == 42

    def fail(_: Any) -> Any:
        raise LookupError("from the thread")

    serve_one(lane)
    with pytest.raises(LookupError, match="from the thread"):
        await handed(Call(fail), lane.put)


async def test_a_call_cancelled_while_it_waits_is_withdrawn_and_never_runs(lane: Lane) -> None:
    """presa-defined (trio's guard rails: a cancelled wait leaves nothing behind):
    cancelled before any thread took it, the call is withdrawn; a thread that
    comes later finds it taken and does not run it."""
    ran: list[str] = []
    with trio.move_on_after(0.05) as waited:
        await handed(Call(lambda _: ran.append("ran")), lane.put)
    assert waited.cancelled_caught
    serve_one(lane).join()
    assert ran == []


async def test_a_taken_call_is_waited_for_when_its_caller_is_cancelled(lane: Lane) -> None:
    """presa-defined (a writer learns whether its write was made): once a thread has
    taken the call, a cancel from outside does not withdraw it; the caller gets
    the outcome, and the cancellation lands at its next checkpoint."""
    taken, release = threading.Event(), threading.Event()
    serve_one(lane, taken, release)
    got: list[str] = []
    with trio.CancelScope() as scope:

        async def cancel_once_taken() -> None:
            await trio.to_thread.run_sync(taken.wait)
            scope.cancel()
            release.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_once_taken)
            got.append(await handed(Call(lambda _: "committed"), lane.put))
            await trio.lowlevel.checkpoint()
            got.append("not reached")
    assert got == ["committed"]
    assert scope.cancelled_caught


async def test_a_taken_call_past_its_deadline_is_abandoned(lane: Lane) -> None:
    """presa-defined (every store call is bounded): at the call's deadline its caller
    stops waiting at once; the thread's outcome is then dropped, never handed back."""
    taken, release = threading.Event(), threading.Event()
    thread = serve_one(lane, taken, release)
    ran: list[str] = []
    call = Call(lambda _: ran.append("ran"))
    with trio.CancelScope() as bound:

        async def deadline_once_taken() -> None:
            await trio.to_thread.run_sync(taken.wait)
            bound.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(deadline_once_taken)
            await call.wait(lane.put, bound, time.monotonic() + BOUND_S)
    assert bound.cancelled_caught
    assert call.abandoned
    release.set()
    await trio.to_thread.run_sync(thread.join)
    assert ran == ["ran"]  # it ran, and nobody was woken by it
