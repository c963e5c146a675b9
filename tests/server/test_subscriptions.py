"""The change bus behind ``subscriptions/listen``: fan-out that never blocks a publisher.

Pure Trio, no HTTP: publishing is synchronous; each subscriber gets only
what its predicate wants; one that falls behind is closed rather than
silently missing changes; leaving the ``with`` block unsubscribes.
"""

from __future__ import annotations

import pytest
import trio

from presa_trio.server.subscriptions import SUBSCRIBER_BUFFER, Change, ChangeBus

TOOLS = Change("notifications/tools/list_changed")
PROMPTS = Change("notifications/prompts/list_changed")


def test_publishing_with_no_subscriber_is_a_no_op() -> None:
    """presa-defined: a change with nobody listening goes nowhere and costs nothing."""
    bus = ChangeBus()
    bus.publish(TOOLS)
    assert bus.subscriber_count == 0


def test_each_subscriber_gets_only_what_it_wants() -> None:
    """Spec-mandated (wire §11.2-§11.3: only requested types, to every stream that
    asked)."""
    bus = ChangeBus()
    with bus.subscribe(lambda c: c == TOOLS) as tools, bus.subscribe(lambda c: True) as everything:
        bus.publish(PROMPTS)
        bus.publish(TOOLS)
        assert tools.receive_nowait() == TOOLS
        with pytest.raises(trio.WouldBlock):
            tools.receive_nowait()
        assert [everything.receive_nowait(), everything.receive_nowait()] == [PROMPTS, TOOLS]


def test_leaving_the_block_unsubscribes() -> None:
    """Spec-mandated (wire §11.4: drop the subscriber when the client goes away)."""
    bus = ChangeBus()
    with bus.subscribe(lambda c: True):
        assert bus.subscriber_count == 1
    assert bus.subscriber_count == 0
    bus.publish(TOOLS)


def test_a_subscriber_that_falls_behind_is_closed_not_starved() -> None:
    """presa-defined (subscriptions.py): a full buffer closes the subscriber, whose
    stream then ends, instead of blocking the publisher or dropping one change
    unnoticed."""
    bus = ChangeBus()
    with bus.subscribe(lambda c: True) as changes:
        for _ in range(SUBSCRIBER_BUFFER):
            bus.publish(TOOLS)
        assert bus.subscriber_count == 1
        bus.publish(TOOLS)
        assert bus.subscriber_count == 0
        drained = []
        while True:
            try:
                drained.append(changes.receive_nowait())
            except trio.EndOfChannel:
                break
        assert drained == [TOOLS] * SUBSCRIBER_BUFFER


async def test_a_waiting_subscriber_is_woken_by_a_publish() -> None:
    """presa-defined: publish is sync (send_nowait); the subscriber's worker wakes."""
    bus = ChangeBus()
    received: list[Change] = []

    async def listener(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with bus.subscribe(lambda c: True) as changes:
            task_status.started()
            received.append(await changes.receive())

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(listener)
            bus.publish(TOOLS)
    assert received == [TOOLS]
    assert bus.subscriber_count == 0
