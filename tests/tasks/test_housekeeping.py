"""The housekeeping loops: one keeper keeps each running, resync included.

Rules of this file: time moves only through ``autojump_clock``; every wait
is an Event or ``wait_all_tasks_blocked()``. Each test shows one line of the
loops' failure policy (:mod:`presa_trio.tasks.housekeeping`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import attrs
import pytest
import trio
import trio.testing
from trio.testing import wait_all_tasks_blocked

from presa_trio.tasks import TaskRunner
from presa_trio.tasks.housekeeping import keep_running
from presa_trio.tasks.stores.base import (
    RESYNC,
    Deliver,
    StoreDefect,
    StoredTask,
    StoreRefused,
    StoreUnavailable,
)
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.wire.tasks import Status
from tests.tasks.helpers import TRIO_CLOCK, creator, gated

#: Each class of store error, and an exception no store classified.
FAILURES: list[Callable[[str], Exception]] = [
    StoreUnavailable,
    StoreRefused,
    StoreDefect,
    RuntimeError,
]


@pytest.mark.parametrize("failure", FAILURES, ids=lambda f: f.__name__)
async def test_a_loop_that_fails_is_logged_and_started_again(
    autojump_clock: trio.testing.MockClock, failure: Callable[[str], Exception]
) -> None:
    """presa-defined (the failure policy: a housekeeping loop that fails is logged
    and started again, backing off): whatever a started loop raises ends only that
    run; the keeper itself never raises it."""
    runs: list[float] = []

    async def loop(*, task_status: trio.TaskStatus[None]) -> None:
        task_status.started()
        runs.append(trio.current_time())
        if len(runs) < 4:
            raise failure("test: the loop failed")
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        await nursery.start(keep_running, "a test loop", loop)
        await trio.sleep(10)
        nursery.cancel_scope.cancel()
    gaps = [round(later - earlier, 3) for earlier, later in itertools.pairwise(runs)]
    assert gaps == [0.1, 0.2, 0.4]


async def test_a_loop_that_cannot_start_the_first_time_raises() -> None:
    """presa-defined (the runner cannot run without its store watch): a failure
    before the loop's first start is the keeper's own failure."""

    async def loop(*, task_status: trio.TaskStatus[None]) -> None:
        raise StoreUnavailable("test: no watch today")

    with pytest.RaisesGroup(StoreUnavailable, flatten_subgroups=True):
        async with trio.open_nursery() as nursery:
            await nursery.start(keep_running, "a test loop", loop)


@attrs.define(eq=False, repr=False)
class FailingReadStore(MemoryStore):
    """The memory store, whose next ``read`` raises ``failure``; it counts the reads.

    ``deliver`` is the runner's watch, to announce RESYNC to.
    """

    failure: Exception | None = None
    deliver: Deliver | None = None
    reads: int = 0
    read_again: trio.Event = attrs.field(factory=trio.Event)

    async def watch(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        self.deliver = deliver
        await super().watch(deliver, task_status=task_status)

    async def read(self, task_id: str) -> StoredTask | None:
        self.reads += 1
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        if self.reads > 1:
            self.read_again.set()
        return await super().read(task_id)


@pytest.mark.parametrize("failure", FAILURES, ids=lambda f: f.__name__)
async def test_a_resync_that_fails_is_tried_again_and_the_runner_runs_on(
    autojump_clock: trio.testing.MockClock, failure: Callable[[str], Exception]
) -> None:
    """presa-defined (the failure policy: resync runs under the same keeper as every
    loop): a store that announces RESYNC and then fails the re-read, in any way,
    ends nothing; the resync is tried again, and the running task runs on to its
    result."""
    store = FailingReadStore()
    runner = TaskRunner(store, TRIO_CLOCK)
    release = trio.Event()
    async with trio.open_nursery() as nursery:
        await nursery.start(runner.run)
        task = await runner.start("s", gated(release, []), creator())
        await wait_all_tasks_blocked()
        store.reads = 0
        store.failure = failure("test: the re-read failed")
        assert store.deliver is not None
        store.deliver(RESYNC)
        await store.read_again.wait()
        release.set()
        await wait_all_tasks_blocked()
        assert (await runner.get("s", task.task_id)).status is Status.COMPLETED
        nursery.cancel_scope.cancel()
    assert store.reads == 2
