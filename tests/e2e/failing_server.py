"""A server whose lifetime fails once its ``doom`` tool is called (for ``presa-trio serve``
and ``presa-trio stdio``), and a store on which a task runner cannot start.

The ``Doomed`` extension runs in the server-lifetime nursery beside the
Tasks runtime, and raises when told to: from the outside, exactly a task
runner that cannot run on. :class:`UnwatchableStore` is a real memory
store whose announcements cannot be listened to, so a runner on it fails
as it starts.
"""

from __future__ import annotations

from typing import Any

import trio

from presa_trio.server import Extension, RequestContext, Server
from presa_trio.tasks import TasksExtension
from presa_trio.tasks.stores.base import Deliver, StoreUnavailable
from presa_trio.tasks.stores.memory import MemoryStore


class UnwatchableStore(MemoryStore):
    """A memory store whose announcements cannot be listened to."""

    async def watch(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        raise StoreUnavailable("test: no announcements today")


class Doomed(Extension):
    """Runs for the server's lifetime until :attr:`told` is set, then fails."""

    id = "test/doomed"

    def __init__(self) -> None:
        self.told = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await self.told.wait()
        raise RuntimeError("the runner lost its store for good")


doomed = Doomed()
server = Server("failing", "1.0.0")
server.add_extension(TasksExtension())
server.add_extension(doomed)


@server.tool(description="Makes the server's lifetime fail.")
async def doom(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    doomed.told.set()
    return "doomed"
