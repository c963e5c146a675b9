"""The PostgreSQL store's hand-over of a call to a connection thread, on its own.

:class:`~presa_trio.tasks.stores.postgres_io.Call` is the one use of
``trio.lowlevel`` in presa_trio/tasks/; these tests hold it to the guard
rails trio's own primitives would give. The threads are plain threads fed
by a queue, as the store's are; no database is needed.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

import outcome
import pytest
import trio
import trio.lowlevel
import trio.testing

from presa_trio.tasks.stores.postgres_io import Call

Lane = queue.SimpleQueue[Call[Any]]
#: What the store's threads pass each call; these calls need no connection.
NO_CONNECTION: Any = None


@pytest.fixture
def lane() -> Lane:
    return queue.SimpleQueue()


def serve_one(calls: Lane, release: threading.Event | None = None) -> threading.Thread:
    """A thread that takes one call, waits for ``release`` if given, and hands back."""

    def run() -> None:
        call = calls.get()
        if not call.take():
            return
        if release is not None:
            release.wait()
        call.hand_back(outcome.capture(call.work, NO_CONNECTION))

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


async def test_a_call_a_thread_has_taken_is_waited_for_then_the_cancel_lands() -> None:
    """presa-defined (a transaction is never left half-done): once a thread has
    taken the call, a cancel cannot withdraw it; the caller gets the outcome, and
    the cancellation is delivered at its next checkpoint."""
    calls: Lane = queue.SimpleQueue()
    release = threading.Event()
    taken = threading.Event()

    def work(_: Any) -> str:
        return "committed"

    def run() -> None:
        call = calls.get()
        assert call.take()
        taken.set()
        release.wait()
        call.hand_back(outcome.capture(call.work, NO_CONNECTION))

    threading.Thread(target=run, daemon=True).start()
    got: list[str] = []
    with trio.CancelScope() as scope:

        async def cancel_once_taken() -> None:
            await trio.to_thread.run_sync(taken.wait)
            scope.cancel()
            release.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_once_taken)
            got.append(await Call(work).wait(calls.put))
            await trio.lowlevel.checkpoint()
            got.append("not reached")
    assert got == ["committed"]
    assert scope.cancelled_caught
