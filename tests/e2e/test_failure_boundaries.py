"""End to end: every store method failing in every way, on a real server that serves on.

Rules of this file: a real hypercorn on port 0 and httpx over loopback; the
store is a real one (memory, SQLite) behind :class:`FaultyStore`, a proxy
of every async method of the :class:`~presa_trio.tasks.stores.base.TaskStore`
protocol, found by introspection (a method added to the protocol is faulted
here without a line changed). One server per store runs the whole matrix:
each case arms one method with one error, once, announces
:data:`~presa_trio.tasks.stores.base.RESYNC` as a store does after it lost
its watch, and drives the server until the method has met the error. Then
it shows the failure policy of :mod:`presa_trio.tasks.runner` from the
outside: every answer and every task outcome is the one the policy gives
that class of error, ``server/discover`` answers, a new task completes, the
tasks running since before the first case run on, and the server's
lifetime never ends (no 503, ever). Waits are bounded by ``trio.fail_after``,
which fails only if the server never gets there; nothing asserts how long
anything took.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, cast

import attrs
import httpx
import pytest
import trio

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TaskEventLog, TaskRunner, TasksExtension
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import (
    RESYNC,
    StoreDefect,
    StoreRefused,
    StoreUnavailable,
    TaskStore,
)
from presa_trio.testing import request
from presa_trio.wire.mrtr import Elicitation
from tests.e2e.gates import Gates
from tests.e2e.harness import TASKS, Served, TaskClient, headers, start
from tests.streams import sse_messages

CONFIRM = Elicitation("Go ahead?", {"type": "object", "properties": {}})

#: Every async method of the store protocol, and its signature: found, never listed.
METHODS: dict[str, inspect.Signature] = {
    name: inspect.signature(method)
    for name, method in inspect.getmembers(TaskStore, inspect.iscoroutinefunction)
    if not name.startswith("_")
}
#: The methods that run until cancelled and report when they listen (the watches).
WATCHES = {name for name, signature in METHODS.items() if "task_status" in signature.parameters}
#: The one method the server calls only as it stops (checked by the shutdown test).
AT_SHUTDOWN = {"release"}
#: The one method no part of the server calls (for tools and tests); checked never called.
NEVER_CALLED = {"counts"}
#: Every other method is faulted while the server serves.
SERVING = sorted(set(METHODS) - AT_SHUTDOWN - NEVER_CALLED)

#: What a faulted call raises: each class of store error, and one no store classified.
KINDS: dict[str, Callable[[str], Exception]] = {
    "unavailable": StoreUnavailable,
    "refused": StoreRefused,
    "defect": StoreDefect,
    "unclassified": RuntimeError,
}
#: An armed fault that makes the call never answer (it waits until cancelled).
NO_ANSWER = None


@attrs.define(eq=False, repr=False)
class FaultyStore:
    """A real store; :meth:`arm` makes the next call of one method fail, once.

    Each protocol method is served by :meth:`__getattr__`: the call is
    counted, meets the armed fault if any, and goes on to the real store. A
    watch (a method started with ``nursery.start``) fails while running
    when armed; its first argument is the deliver callback, which
    :meth:`announce_resync` calls with ``RESYNC``.
    """

    inner: TaskStore
    calls: Counter[str] = attrs.field(factory=Counter)
    _armed: dict[str, Exception | None] = attrs.field(factory=dict)
    _tripped: dict[str, trio.Event] = attrs.field(factory=dict)
    # A running watch's Event that, set, makes it meet its fault.
    _breaks: dict[str, trio.Event] = attrs.field(factory=dict)
    _delivers: dict[str, Callable[[Any], None]] = attrs.field(factory=dict)

    def __getattr__(self, name: str) -> Any:
        if name not in METHODS:
            raise AttributeError(name)
        method = getattr(self.inner, name)
        return partial(self._watch if name in WATCHES else self._call, name, method)

    def arm(self, name: str, fault: Exception | None) -> trio.Event:
        """Fault the next call of ``name`` (``NO_ANSWER``: it never answers); set once met."""
        self._armed[name] = fault
        tripped = self._tripped[name] = trio.Event()
        if name in self._breaks:
            self._breaks[name].set()
        return tripped

    def announce_resync(self) -> None:
        """Announce RESYNC on every watch, as a store that lost its connection does."""
        for deliver in self._delivers.values():
            deliver(RESYNC)

    async def _meet_fault(self, name: str) -> None:
        if name not in self._armed:
            return
        fault = self._armed.pop(name)
        self._tripped[name].set()
        if fault is NO_ANSWER:
            await trio.sleep_forever()
        raise fault

    async def _call(self, name: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.calls[name] += 1
        await self._meet_fault(name)
        return await method(*args, **kwargs)

    async def _watch(
        self,
        name: str,
        method: Callable[..., Any],
        deliver: Callable[[Any], None],
        *args: Any,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
        **kwargs: Any,
    ) -> None:
        self.calls[name] += 1
        await self._meet_fault(name)
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(method, deliver, *args, **kwargs))
            self._delivers[name] = deliver
            broken = self._breaks[name] = trio.Event()
            task_status.started()
            await broken.wait()
            await self._meet_fault(name)


def build(store: FaultyStore, gates: Gates) -> McpApp:
    """A server with task event streams on, and every housekeeping loop turning often."""
    server = Server("failure-boundaries", "1.0.0")
    # Leases of 2.4 s: renewal every 0.8 s, recovery every 1.2 s; a renewal
    # that fails is tried again after the keeper's back-off, in time.
    runner = TaskRunner(cast(TaskStore, store), lease_ms=2_400, reap_every=0.2)
    tasks = TasksExtension(runner)
    server.add_extension(tasks)
    tasks.enable_events(TaskEventLog(prune_every=0.2))

    @tasks.tool(Policy.REQUIRED, description="Waits for its label's gate, if any, then answers.")
    async def work(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        label = arguments.get("label")
        if label is not None:
            await gates[label].wait()
        return f"done {label}"

    @tasks.tool(Policy.REQUIRED, description="Asks to confirm, then answers.")
    async def confirm(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.ask({"go": CONFIRM})
        return "confirmed"

    return McpApp.for_server(server)


@pytest.fixture(params=["memory", "sqlite"])
async def inner_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    url = "memory:" if request.param == "memory" else f"sqlite:///{tmp_path / 'tasks.db'}"
    async with open_store(url) as store:
        yield store


@contextmanager
def case(*names: str) -> Iterator[None]:
    """Name the case in the failure of anything inside."""
    try:
        yield
    except BaseException as failure:
        failure.add_note(f"in the case: {' × '.join(names)}")
        raise


async def stream(client: TaskClient, task_id: str) -> dict[str, Any]:
    """``tasks/stream`` of ``task_id`` read to its end: its last message (result or error)."""
    message = request("tasks/stream", {"taskId": task_id}, capabilities=TASKS)
    sent = headers(message, **{"mcp-name": task_id})
    async with client.http.stream("POST", client.served.url, json=message, headers=sent) as got:
        assert got.status_code in (200, 500), got.status_code  # never a 503
        messages = [message async for message in sse_messages(got)]
    return messages[-1]


async def exercise(
    client: TaskClient, finished: str, answers: list[dict[str, Any]], created: list[str]
) -> None:
    """One round of the requests that reach every store method the server calls when asked.

    A read, a creation (its worker's writes and event appends), and a
    replay of a finished task's event log; the loops reach the rest.
    """
    answers.append(await client.send("tasks/get", taskId=finished))
    made = await client.send("tools/call", name="work", arguments={})
    answers.append(made)
    if "result" in made:
        created.append(made["result"]["taskId"])
    answers.append(await stream(client, finished))


def check_answer(answer: dict[str, Any], kind: str) -> None:
    """A request that met the fault: -32603, and what the policy says for its class."""
    if "result" in answer:
        return
    error = answer["error"]
    assert error["code"] == -32603, error
    if kind == "unavailable":
        assert error["data"] == {"retryable": True}
    elif kind == "refused":
        assert error["data"] == {"retryable": False}
        assert error["message"] == "Could not store the request: test: refused"
    else:  # a defect, or what no store classified: an incident, and no detail
        assert set(error["data"]) == {"incident"}
        assert "test:" not in error["message"]


def check_outcome(result: dict[str, Any], kind: str) -> None:
    """A task made during the case, once terminal: completed, or failed as its class says."""
    if result["status"] == "completed":
        return
    assert kind != "unavailable", result  # an unavailable store is waited for
    assert result["status"] == "failed", result
    error = result["error"]
    if kind == "refused":
        assert error["message"].startswith("Could not store the task's ")
        assert error["data"] == {"retryable": False}
    else:
        assert (error["code"], set(error["data"])) == (-32603, {"incident"})


async def still_serving(client: TaskClient, served: Served) -> None:
    """discover answers, a new task completes, and the server's lifetime runs on."""
    assert "result" in await client.send("server/discover")
    fresh = await client.create("work")
    assert (await client.settled(fresh))["status"] == "completed"
    assert not served.app.failed.is_set()


async def test_no_store_failure_ends_the_server(
    nursery: trio.Nursery, http: httpx.AsyncClient, inner_store: TaskStore
) -> None:
    """presa-defined (docs/tasks.md, the failure policy): every method of the store
    protocol failing with each class of store error (unavailable, refused data, a
    defect) or an exception no store classified, while the store announces RESYNC,
    ends at most the request or the task that met it: a request gets -32603
    (retryable only for unavailable), a task fails saying what could not be stored
    (refused) or with an incident (defect, unclassified), a worker's write waits for
    an unavailable store, and a loop (resync included) is logged and started again.
    After every case discover answers and a new task completes; the tasks running
    since the start run on and end well; the server's lifetime never ends."""
    store = FaultyStore(inner_store)
    gates = Gates()
    served, shutdown = await start(build(store, gates), nursery)
    client = TaskClient(http, served)
    with trio.fail_after(20):
        running = await client.create("work", label="running")
        asking = await client.create("confirm")
        await client.reached(asking, "input_required")
        finished = await client.create("work")
        await client.settled(finished)
    for method in SERVING:
        for kind, error_class in KINDS.items():
            with case(method, kind), trio.fail_after(20):
                tripped = store.arm(method, error_class(f"test: {kind}"))
                store.announce_resync()
                answers: list[dict[str, Any]] = []
                created: list[str] = []
                while not tripped.is_set():
                    await exercise(client, finished, answers, created)
                    with trio.move_on_after(0.1):
                        await tripped.wait()
                for answer in answers:
                    check_answer(answer, kind)
                for task_id in created:
                    check_outcome(await client.settled(task_id), kind)
                await still_serving(client, served)
    with trio.fail_after(20):
        assert (await client.send("tasks/get", taskId=running))["result"]["status"] == "working"
        answered = await client.send(
            "tasks/update",
            taskId=asking,
            inputResponses={"go": {"action": "accept", "content": {}}},
        )
        assert answered["result"]["resultType"] == "complete"
        gates["running"].set()
        ended = await client.settled(asking)
        assert ended["status"] == "completed", ended
        assert (await client.settled(running))["status"] == "completed"
    assert {name: store.calls[name] for name in NEVER_CALLED} == dict.fromkeys(NEVER_CALLED, 0)
    shutdown.set()


@pytest.mark.parametrize("kind", [*KINDS, "no answer"])
async def test_a_store_failing_at_shutdown_still_ends_it(
    http: httpx.AsyncClient, inner_store: TaskStore, kind: str
) -> None:
    """presa-defined (docs/tasks.md, shutdown): what the server calls only as it
    stops (the release of its leases) failing in each way, or never answering,
    leaves the shutdown to end as usual, with the server's lifetime intact; a
    parked task keeps its input requests for the next process."""
    store = FaultyStore(inner_store)
    gates = Gates()
    armed: list[trio.Event] = []
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            served, shutdown = await start(build(store, gates), nursery)
            client = TaskClient(http, served)
            asking = await client.create("confirm")
            await client.reached(asking, "input_required")
            for method in sorted(AT_SHUTDOWN):
                armed.append(
                    store.arm(method, NO_ANSWER if kind == "no answer" else KINDS[kind]("test"))
                )
            shutdown.set()
    assert all(tripped.is_set() for tripped in armed)
    assert served.app.failure is None
    parked = await store.inner.read(asking)
    assert parked is not None
    assert parked.task.status.value == "input_required"
