"""A ``tasks/stream`` whose access token lapses sends nothing more, mid-page included.

Rules of this file: the stream is served by the Tasks extension itself, with
a request context whose token lapses when the test says (a watch on an
Event) and whose stream records each message: the client's transport
holding a write is the test's ``send`` holding it.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from presa_trio.auth.principal import Access
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TasksExtension
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.testing import TASKS_CAPABILITIES, meta, open_client
from presa_trio.wire.meta import RequestMeta

STEPS = 5


class Lapse:
    """A token watch whose token lapses once :attr:`now` is set."""

    def __init__(self) -> None:
        self.now = trio.Event()

    async def lapsed(self, token: bytes) -> None:
        await self.now.wait()


def steps_server() -> tuple[Server, TasksExtension]:
    """A server with one task tool, ``steps``, that emits :data:`STEPS` events and ends."""
    server = Server("lapse-test", "0")
    tasks = TasksExtension()
    server.add_extension(tasks)
    tasks.enable_events(TaskEventLog())

    @tasks.tool(Policy.REQUIRED, description="Emits steps, then answers")
    async def steps(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        for n in range(STEPS):
            await ctx.emit("com.example.step", {"n": n})
        return "done"

    return server, tasks


async def test_a_stream_sends_none_of_its_page_after_its_token_lapsed() -> None:
    """Spec-mandated (SEP-2694 §Security Implications: "A client that cannot access a
    task MUST NOT be allowed to stream its events"; A-16, S-20, spec-notes §49): the stream
    holds one page of the log; its token lapses while the client's transport still
    holds the first event, and the stream ends with ``{}`` there, without the rest
    of the page."""
    server, tasks = steps_server()
    with trio.fail_after(5):
        async with open_client(server) as client:
            task = await client.start_task("steps")
            await task.result()
            lapse = Lapse()
            sent: list[dict[str, Any]] = []

            async def send(message: dict[str, Any]) -> None:
                sent.append(message)
                if len(sent) == 1:  # the token lapses while this write is held
                    lapse.now.set()
                    await trio.testing.wait_all_tasks_blocked()

            ctx = RequestContext(
                1,
                "tasks/stream",
                RequestMeta.from_params({"_meta": meta(TASKS_CAPABILITIES)}),
                server,
                send,
                access=Access(frozenset(), lapse, b"token"),
            )
            answer = await tasks.stream_task(server, ctx, {"taskId": task.task_id})
    assert answer == {}
    assert [message["params"]["seq"] for message in sent] == [0]
