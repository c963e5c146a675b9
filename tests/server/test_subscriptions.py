"""The change bus behind ``subscriptions/listen``: fan-out that never blocks a publisher.

Pure Trio, no transport: publishing is synchronous; each subscription gets
only what its predicate wants, the newest undelivered change per topic, in
publication order; one with too many topics waiting is ended; leaving the
``with`` block unsubscribes. A test reads what a subscription delivers up
to a marker change published last.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio
import trio.testing

from presa_trio.server.subscriptions import (
    MAX_PENDING_TOPICS,
    Change,
    ChangeBus,
    Subscription,
    in_run,
)

TOOLS = Change("notifications/tools/list_changed")
PROMPTS = Change("notifications/prompts/list_changed")
MARK = Change("mark")


def task(task_id: str, status: str) -> Change:
    return Change("notifications/tasks", {"taskId": task_id, "status": status}, about=task_id)


def updated(uri: str) -> Change:
    return Change("notifications/resources/updated", {"uri": uri}, about=uri)


async def delivered(subscription: Subscription) -> list[Change]:
    """What the subscription delivers before :data:`MARK`, which the test published last."""
    with trio.fail_after(5):
        received: list[Change] = []
        async for change in subscription:
            if change == MARK:
                return received
            received.append(change)
    raise AssertionError("the subscription ended before the marker")


async def test_each_subscription_gets_only_what_it_wants() -> None:
    """Spec-mandated (basic/patterns/subscriptions §Opening a Stream: only the
    requested types, to every stream that asked)."""
    bus = ChangeBus()
    with (
        bus.subscribe(lambda c: c in (TOOLS, MARK)) as tools,
        bus.subscribe(lambda c: True) as everything,
    ):
        for change in (PROMPTS, TOOLS, MARK):
            bus.publish(change)
        assert await delivered(tools) == [TOOLS]
        assert await delivered(everything) == [PROMPTS, TOOLS]


async def test_a_newer_change_supersedes_an_undelivered_one_on_its_topic() -> None:
    """presa-defined (subscriptions.py; SEP-2663 §Task Status Notifications: each
    notification carries the whole task): the newest state per task, in the order
    of the last changes; a delivered state is followed only by newer ones."""
    bus = ChangeBus()
    with bus.subscribe(lambda c: True) as changes:
        for change in (task("a", "working"), task("b", "working"), task("a", "completed"), MARK):
            bus.publish(change)
        assert await delivered(changes) == [task("b", "working"), task("a", "completed")]
        bus.publish(task("b", "failed"))
        bus.publish(MARK)
        assert await delivered(changes) == [task("b", "failed")]


async def test_changes_about_different_subjects_are_all_kept() -> None:
    """Spec-mandated (basic/patterns/subscriptions §Receiving Notifications): an update
    for each subscribed URI arrives, however close together they are published; list
    changes coalesce by method."""
    bus = ChangeBus()
    with bus.subscribe(lambda c: True) as changes:
        for change in (updated("a://1"), TOOLS, updated("a://2"), TOOLS, updated("a://1"), MARK):
            bus.publish(change)
        assert await delivered(changes) == [updated("a://2"), TOOLS, updated("a://1")]


async def test_a_burst_far_larger_than_the_topics_loses_no_final_state() -> None:
    """presa-defined (subscriptions.py): 100 tasks changing ten times each, published
    without a pause, reach a reader as one final state per task."""
    bus = ChangeBus()
    with bus.subscribe(lambda c: True) as changes:
        for step in range(10):
            for n in range(100):
                bus.publish(task(f"t{n}", f"step {step}"))
        bus.publish(MARK)
        assert await delivered(changes) == [task(f"t{n}", "step 9") for n in range(100)]


async def test_a_subscription_with_too_many_topics_waiting_is_ended() -> None:
    """presa-defined (subscriptions.py): up to MAX_PENDING_TOPICS distinct topics
    waiting, nothing is lost; a reader that stops reading while more change is
    ended, its pending changes dropped, and stays ended."""
    bus = ChangeBus()
    with bus.subscribe(lambda c: True) as changes:
        for n in range(MAX_PENDING_TOPICS - 1):
            bus.publish(updated(f"a://{n}"))
        bus.publish(MARK)
        assert len(await delivered(changes)) == MAX_PENDING_TOPICS - 1
        for n in range(MAX_PENDING_TOPICS + 1):
            bus.publish(updated(f"a://{n}"))
        bus.publish(TOOLS)
        with trio.fail_after(5):
            assert [change async for change in changes] == []


async def test_leaving_the_block_unsubscribes() -> None:
    """Spec-mandated (basic/patterns/subscriptions §Cancellation: the stream ends with
    its transport): once the block is left, the bus no longer asks the subscription
    about changes, and its iteration is over."""
    bus = ChangeBus()
    asked: list[Change] = []

    def wants(change: Change) -> bool:
        asked.append(change)
        return True

    with bus.subscribe(wants) as left:
        bus.publish(TOOLS)
    bus.publish(PROMPTS)
    assert asked == [TOOLS]
    assert [change async for change in left] == []


async def test_a_waiting_subscription_is_woken_by_a_publish() -> None:
    """presa-defined: publish is synchronous; the subscription's reader wakes."""
    bus = ChangeBus()
    received: list[Any] = []

    async def listener(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with bus.subscribe(lambda c: True) as changes:
            task_status.started()
            received.append(await anext(changes))

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(listener)
            bus.publish(TOOLS)
    assert received == [TOOLS]


async def test_closing_the_bus_ends_every_stream_now_and_later() -> None:
    """Spec-mandated (subscriptions §Graceful Closure: a server tearing a subscription
    down SHOULD answer the listen, then close): ``close`` ends each open subscription
    after what it already holds and takes no newer change; one subscribing afterwards
    ends at once (one that waited instead fails here rather than hang the run)."""
    bus = ChangeBus()
    with trio.fail_after(5):
        with bus.subscribe(lambda c: True) as changes:
            bus.publish(TOOLS)
            bus.close()
            bus.publish(PROMPTS)
            assert [change async for change in changes] == [TOOLS]
        with bus.subscribe(lambda c: True) as late:
            bus.publish(TOOLS)
            assert [change async for change in late] == []


async def test_a_publisher_in_another_trio_run_is_refused_and_the_stream_waits_on() -> None:
    """presa-defined (subscriptions are the Trio thread's: module docstring of
    presa_trio.server.subscriptions): code in another ``trio.run`` (a tool's worker
    thread running its own) is no publisher on the server's run; its publish is
    refused with Trio's RuntimeError. It woke the server's waiting stream from the
    wrong run: Trio's assertion failed there, and the stream was never woken."""
    bus = ChangeBus()
    received: list[Change] = []

    async def receive_one(subscription: Subscription) -> None:
        received.append(await subscription.__anext__())

    def publish_from_its_own_run() -> None:
        async def publish() -> None:
            bus.publish(TOOLS)

        trio.run(publish)

    with bus.subscribe(lambda change: True) as subscription, trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive_one, subscription)
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(RuntimeError, match="call it from a thread"):
                await trio.to_thread.run_sync(publish_from_its_own_run)
            bus.publish(PROMPTS)
    assert received == [PROMPTS]


async def test_a_thread_trio_did_not_start_hands_its_change_to_the_trio_thread() -> None:
    """presa-defined (ChangeBus.publish): a publisher on a thread of its own (not one
    of trio.to_thread's, so it knows no Trio run) hands the change over to the run
    the subscriptions live in, and the waiting stream wakes."""
    bus = ChangeBus()
    received: list[Change] = []

    async def receive_one(subscription: Subscription) -> None:
        received.append(await subscription.__anext__())

    def publish_from_a_plain_thread() -> None:
        thread = threading.Thread(target=bus.publish, args=(TOOLS,))
        thread.start()
        thread.join()

    with bus.subscribe(lambda change: True) as subscription, trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(receive_one, subscription)
            await trio.testing.wait_all_tasks_blocked()
            await trio.to_thread.run_sync(publish_from_a_plain_thread)
    assert received == [TOOLS]


async def test_an_announced_change_is_published_then_relayed_a_published_one_only_published() -> (
    None
):
    """presa-defined (ChangeBus.announce): the server's own change is offered to this
    bus's streams and handed to the relay, on the Trio thread, even from a worker thread
    and with no stream here; a change only published (a task's, one heard from another
    process) never reaches the relay, nor does one announced once the relay is gone."""
    bus = ChangeBus()
    relayed: list[tuple[Change, bool]] = []
    trio_thread = trio.lowlevel.current_trio_token()

    def relay(change: Change) -> None:
        relayed.append((change, in_run(trio_thread)))

    with bus.relaying(relay):
        bus.announce(PROMPTS)
        with bus.subscribe(lambda change: True) as subscription:
            bus.announce(TOOLS)
            await trio.to_thread.run_sync(bus.announce, updated("test://a"))
            bus.publish(task("t-1", "working"))
            bus.publish(MARK)
            assert await delivered(subscription) == [
                TOOLS,
                updated("test://a"),
                task("t-1", "working"),
            ]
        with pytest.raises(RuntimeError, match="has a relay already"), bus.relaying(relay):
            pass
    bus.announce(TOOLS)
    assert relayed == [(PROMPTS, True), (TOOLS, True), (updated("test://a"), True)]
