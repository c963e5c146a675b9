"""What a test sees when it misuses the testing client or the server is too slow: one line.

presa-defined (presa_trio.testing): each failure names what went wrong in
its message, at once where waiting cannot help, instead of a bare
``TooSlowError`` or a wait that ends only when the test's clock runs out.
"""

from __future__ import annotations

import pytest
import trio
from trio.testing import MockClock

from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TaskEventLog, TasksExtension
from presa_trio.testing import (
    DEFAULT_CAPABILITIES,
    TASKS_CAPABILITIES,
    accept,
    connect,
    meta,
    open_client,
    request,
)
from presa_trio.testing.streams import WAIT
from presa_trio.wire.meta import META_LOG_LEVEL


def sleepy_server() -> Server:
    """A tool and a task tool that sleep as long as they are told."""
    server = Server("sleepy", "1.0.0")
    tasks = server.add_extension(TasksExtension())
    tasks.enable_events(TaskEventLog())

    @server.tool()
    async def nap(ctx: RequestContext, seconds: float) -> str:
        """Sleeps, then answers."""
        await trio.sleep(seconds)
        return "awake"

    @tasks.tool(Policy.REQUIRED)
    async def hibernate(ctx: RequestContext, seconds: float) -> str:
        """Sleeps in a task, then answers."""
        await trio.sleep(seconds)
        return "awake"

    @server.tool()
    async def chatter(ctx: RequestContext) -> str:
        """Logs once, then sleeps for ever."""
        await ctx.log("info", "started")
        await trio.sleep_forever()

    return server


async def test_a_stream_read_after_its_block_fails_at_once_saying_so(
    autojump_clock: MockClock,
) -> None:
    """A listen stream and a task's event stream read after their block, where the
    client has closed them, fail naming that, not after the client's wait."""
    async with open_client(sleepy_server()) as client:
        async with client.listen(tools_list_changed=True) as changes:
            pass
        with pytest.raises(trio.ClosedResourceError, match="closed when its async with block"):
            await changes.next()
        task = await client.start_task("hibernate", {"seconds": 10 * WAIT})
        async with task.stream() as events:
            await events.next()
        with pytest.raises(trio.ClosedResourceError, match="closed when its async with block"):
            await events.next()
        await task.cancel()


async def test_a_raw_response_read_after_its_block_ends_with_what_had_come(
    autojump_clock: MockClock,
) -> None:
    """The wire-level stream read after its block (the app cancelled by the client's
    leaving, without a last body event) gives what had come, then its end."""
    asks_logs = meta(None, **{META_LOG_LEVEL: "info"})
    message = request("tools/call", {"name": "chatter", "_meta": asks_logs})
    async with connect(sleepy_server()) as client:
        async with client.stream(message) as opened:
            logged = await opened.next_message()
        with trio.fail_after(WAIT), pytest.raises(trio.EndOfChannel):
            await opened.next_message()
    assert logged["method"] == "notifications/message"


async def test_a_wait_that_times_out_names_what_it_waited_for(autojump_clock: MockClock) -> None:
    """A call not answered in time names its method; a wait for a status names the
    task, the status and the one it is in; a listen stream says nothing came."""
    async with open_client(sleepy_server()) as client:
        with pytest.raises(trio.TooSlowError, match=r"^tools/call not answered within 5 s$"):
            await client.call_tool("nap", {"seconds": 6})
        task = await client.start_task("hibernate", {"seconds": 10 * WAIT})
        expected = f"^task {task.task_id} not completed within 10 s; it is working$"
        with pytest.raises(trio.TooSlowError, match=expected):
            await task.wait_for("completed")
        await task.cancel()
        async with client.listen(tools_list_changed=True) as changes:
            with pytest.raises(trio.TooSlowError, match=r"^no notification came within 10 s$"):
                await changes.next()


async def test_waiting_for_a_misspelt_status_fails_at_once_naming_it(
    autojump_clock: MockClock,
) -> None:
    """A status the task can never be in (SEP-2663 §Task Status spells five) fails
    the wait at once, naming it, rather than after the client's wait."""
    async with open_client(sleepy_server()) as client:
        task = await client.start_task("hibernate", {"seconds": 10 * WAIT})
        with pytest.raises(ValueError, match=r"^'input-required' is no task status; wait for "):
            await task.wait_for("working", "input-required")
        with pytest.raises(ValueError, match=r"^no status is no task status"):
            await task.wait_for()
        await task.cancel()


async def test_one_answer_given_for_a_list_of_them_fails_at_once_saying_so() -> None:
    """A single answer passed as ``answer=`` (a dict, iterable by its keys) is refused
    where it is given, not sent as the key names the server would refuse (mypy refuses
    it too, in a typed test)."""
    with pytest.raises(TypeError, match=r"^answer= got one answer; pass a list of answers"):
        async with open_client(sleepy_server(), answer=accept({"ok": True})):  # type: ignore[arg-type]
            pass
    async with open_client(sleepy_server()) as client:
        with pytest.raises(TypeError, match=r"^answer= got one answer"):
            await client.call_tool("nap", {"seconds": 0}, answer=accept())  # type: ignore[arg-type]


async def test_a_task_declares_the_extensions_the_client_declares_beside_the_tasks_one() -> None:
    """Spec-mandated (basic/versioning §Extension Negotiation: ``extensions`` maps every
    extension the client advertises): ``start_task`` adds the Tasks extension to the
    client's own, which the task still sees, rather than putting it in their place."""
    server = Server("extensions", "1.0.0")
    tasks = server.add_extension(TasksExtension())

    @tasks.tool(Policy.REQUIRED)
    async def declared(ctx: RequestContext) -> str:
        """Answers whether the client declared its own extension."""
        return str(ctx.capabilities.has_extension("com.example/mine"))

    mine = {**DEFAULT_CAPABILITIES, "extensions": {"com.example/mine": {}}}
    async with open_client(server, capabilities=mine) as client:
        task = await client.start_task("declared")
        assert (await task.result()).text == "True"


async def test_a_call_answered_with_a_task_fails_naming_start_task() -> None:
    """Spec-mandated (SEP-2663 §Task Creation: a call that declares the extension may
    be answered with a task): call_tool, with the extension among the client's
    capabilities, fails in one line naming start_task, not deep in reading a result."""
    async with open_client(sleepy_server(), capabilities=TASKS_CAPABILITIES) as client:
        with pytest.raises(AssertionError, match=r"^hibernate answered task \S+, the client's"):
            await client.call_tool("hibernate", {"seconds": 0})
