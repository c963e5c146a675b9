"""Task event streams (``--task-events``, SEP-2694), in process: rates, delays, replay, storage.

The app is served in process (``presa_trio.testing``: the whole ASGI path,
SSE encoding included, without sockets), the task tool emits through
``ctx.emit`` as a user's tool would, and the reader is a ``tasks/stream``.
Per store (memory, a SQLite file, a database on a temporary PostgreSQL):

- **events/s, one worker to one reader:** a task emits N events back to
  back while one stream reads them; N over the time from the first emit to
  the last delivery.
- **emit → delivery p50/p99:** events emitted one at a time, each carrying
  its emit time; the delay is its arrival on the reader, on one clock.
- **replay of 10,000 retained events:** a finished task's whole log,
  streamed from the start to the result.
- **storage per retained event** (SQLite and PostgreSQL): the bytes the
  events tables grew by, per event of ``{"n": i, "text": "step i"}``.
- **readers against the worker:** the time the worker takes to emit N
  events with no reader, with 10 readers, and with one reader that never
  reads (its transport full): a reader never slows the worker.

Across processes (PostgreSQL only): two stores on one database, as two
processes open it; events appended through one, heard through the other's
LISTEN connection and read back from the database, emit → read p50/p99.

Run: ``python -m bench.task_events [--quick]``; ``nox -s bench`` prints its table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from presa_trio.auth.principal import ANONYMOUS
from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TaskRunner, TasksExtension, model
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.events import NewEvent, Retention
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import Limits, StoredTask, TaskStore
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, request, running

EVENT = "notifications/tasks/event"
RETAIN_ALL = Retention(max_events=20_000, max_age_ms=None)


@attrs.frozen
class StoreFigures:
    store: str
    events_per_s: float
    delay_p50_ms: float
    delay_p99_ms: float
    replay_10k_s: float
    bytes_per_event: float | None
    # Seconds the worker took to emit N events: no reader, 10 readers, one stalled reader.
    worker_alone_s: float
    worker_ten_readers_s: float
    worker_stalled_reader_s: float


@attrs.frozen
class Report:
    count: int
    stores: list[StoreFigures]
    # Across two stores on one PostgreSQL (None when it could not be started).
    cross_p50_ms: float | None
    cross_p99_ms: float | None


@attrs.define
class Timings:
    """How long each labelled emit run took, and an Event set when it ended."""

    seconds: dict[str, float] = attrs.field(factory=dict)
    done: defaultdict[str, trio.Event] = attrs.field(factory=lambda: defaultdict(trio.Event))

    def __getitem__(self, label: str) -> float:
        return self.seconds[label]


def events_app(store: TaskStore, timings: Timings) -> McpApp:
    """One tool, ``emit``: ``count`` events, ``spaced`` seconds apart, each with its emit time."""
    server = Server("events-bench", "0")
    tasks = TasksExtension(TaskRunner(store))
    server.add_extension(tasks)
    tasks.enable_events(TaskEventLog(RETAIN_ALL))

    @tasks.tool(Policy.REQUIRED, description="Emits events")
    async def emit(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        start = time.perf_counter()
        for n in range(arguments["count"]):
            await ctx.emit("bench.events.step", {"n": n, "t": time.perf_counter()})
            if arguments.get("spaced"):
                await trio.sleep(arguments["spaced"])
        label = arguments.get("label", "")
        timings.seconds[label] = time.perf_counter() - start
        timings.done[label].set()
        return "done"

    return McpApp.for_server(server)


async def start(client: McpClient, **arguments: Any) -> str:
    result = await client.call_tool("emit", arguments, capabilities=TASKS_CAPABILITIES)
    task_id: str = result["taskId"]
    return task_id


async def read_stream(
    client: McpClient, task_id: str, on_event: Callable[[dict[str, Any]], None], port: int = 50000
) -> None:
    """Read ``task_id``'s stream to its end, calling ``on_event`` as each arrives."""
    message = request("tasks/stream", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES)
    async with client.stream(message, client=("127.0.0.1", port)) as stream:
        while True:
            received = await stream.next_message()
            if received.get("method") != EVENT:
                return
            on_event(received["params"])


async def measure_store(
    name: str, store: TaskStore, count: int, size: Callable[[], int] | None
) -> StoreFigures:
    timings = Timings()
    app = events_app(store, timings)
    async with running(app) as client:
        # events/s: one worker to one reader.
        arrived: list[float] = []
        task_id = await start(client, count=count, label="rate")
        began = time.perf_counter()
        await read_stream(client, task_id, lambda e: arrived.append(time.perf_counter()))
        rate = (len(arrived) - 2) / (arrived[-1] - began)
        # emit → delivery, one at a time.
        delays: list[float] = []
        spaced = await start(client, count=min(count, 500), spaced=0.002, label="delay")
        await read_stream(
            client,
            spaced,
            lambda e: (
                delays.append(time.perf_counter() - e["payload"]["t"])
                if "t" in e["payload"]
                else None
            ),
        )
        # storage per retained event, and replay of 10,000.
        before = size() if size is not None else 0
        payloads = [
            NewEvent("bench.events.step", {"n": n, "text": f"step {n}"}) for n in range(100)
        ]
        store_task = await fresh_open_task(store)
        for _ in range(100):
            await store.append_events(store_task, payloads, 0, RETAIN_ALL)
        grown = (size() - before) / 10_000 if size is not None else None
        await store.append_events(
            store_task, [NewEvent("bench.events.end", {})], 0, RETAIN_ALL, closing=True
        )
        replay_start = time.perf_counter()
        await read_stream_raw(client, store_task)
        replay = time.perf_counter() - replay_start
        # readers against the worker.
        alone_id = await start(client, count=count, label="alone")
        await read_stream(client, alone_id, lambda e: None)
        async with trio.open_nursery() as nursery:
            ten = await start(client, count=count, label="ten", spaced=0)
            for port in range(10):
                nursery.start_soon(read_stream, client, ten, lambda e: None, 51000 + port)
        stalled = await start(client, count=count, label="stalled")
        async with trio.open_nursery() as nursery:
            await nursery.start(stalled_reader, client, stalled)
            with trio.fail_after(120):
                await timings.done["stalled"].wait()
            nursery.cancel_scope.cancel()
    ms = sorted(d * 1000 for d in delays)
    return StoreFigures(
        name,
        rate,
        statistics.median(ms),
        ms[int(len(ms) * 0.99) - 1],
        replay,
        grown,
        timings["alone"],
        timings["ten"],
        timings["stalled"],
    )


async def stalled_reader(
    client: McpClient,
    task_id: str,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """A ``tasks/stream`` whose transport takes the response head and then nothing:
    every later write waits, as on a socket whose peer stopped reading."""
    message = request("tasks/stream", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES)
    body = json.dumps(message).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "server": ("127.0.0.1", 3000),
        "client": ("127.0.0.1", 52000),
        "headers": [
            (k.lower().encode(), v.encode()) for k, v in client.headers_for(message).items()
        ],
    }
    pending = [body]

    async def receive() -> dict[str, Any]:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(event: dict[str, Any]) -> None:
        if event["type"] == "http.response.start":
            task_status.started()
        else:
            await trio.sleep_forever()

    # An ASGI app, called with plain dicts as presa_trio.testing.driver does.
    target: Any = client.app
    await target(scope, receive, send)


async def fresh_open_task(store: TaskStore) -> str:
    """A stored task with an empty log, made directly in the store (the bench's own)."""
    now = int(time.time() * 1000)
    task = model.create(
        f"replay-{time.monotonic_ns()}", now_ms=now, ttl_ms=None, poll_interval_ms=None
    )
    await store.create(StoredTask(ANONYMOUS, task), Limits(), now)
    return task.task_id


async def read_stream_raw(client: McpClient, task_id: str) -> int:
    """Stream a whole log; how many events came."""
    message = request("tasks/stream", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES)
    response = await client.post(message, limit_s=600)
    return sum(1 for m in response.messages() if m.get("method") == EVENT)


async def cross_process(url: str, count: int) -> tuple[float, float]:
    """Append through one store, hear and read through another on the same database."""
    async with open_store(url) as one, open_store(url) as two:
        task_id = await fresh_open_task(one)
        heard = trio.Event()
        delays: list[float] = []

        def wake(about: object) -> None:
            heard.set()

        async with trio.open_nursery() as nursery:
            await nursery.start(two.watch_events, wake)
            cursor = -1
            for n in range(count):
                heard = trio.Event()
                sent = time.perf_counter()
                await one.append_events(
                    task_id, [NewEvent("bench.events.step", {"n": n})], 0, RETAIN_ALL
                )
                while True:
                    await heard.wait()
                    window = await two.read_events(task_id, cursor, 10, 0, RETAIN_ALL)
                    if window.events:
                        cursor = window.events[-1].seq
                        break
                    heard = trio.Event()
                delays.append(time.perf_counter() - sent)
            nursery.cancel_scope.cancel()
    ms = sorted(d * 1000 for d in delays)
    return statistics.median(ms), ms[int(len(ms) * 0.99) - 1]


@asynccontextmanager
async def postgres_url() -> AsyncIterator[str | None]:
    """A fresh database on a temporary PostgreSQL (tests/postgres.py), else None."""
    try:
        from tests.postgres import temporary_postgresql
    except ImportError:
        yield None
        return
    with temporary_postgresql() as server:
        yield server.new_database()


def postgres_size(url: str) -> int:
    """Bytes of the event tables, their indexes and TOAST included."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT pg_total_relation_size('presa_task_events')"
            " + pg_total_relation_size('presa_task_event_logs')"
        ).fetchone()
    assert row is not None
    return int(row[0])


async def main_async(quick: bool) -> Report:
    count = 300 if quick else 2000
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "events.db"
        stores: list[
            tuple[str, AbstractAsyncContextManager[TaskStore], Callable[[], int] | None]
        ] = [
            ("memory", open_store("memory:"), None),
            ("sqlite", open_store(f"sqlite:///{path}"), lambda: sqlite_size(path)),
        ]
        for name, opener, size in stores:
            async with opener as store:
                figures.append(await measure_store(name, store, count, size))
    cross: tuple[float | None, float | None] = (None, None)
    async with postgres_url() as url:
        if url is not None:
            async with open_store(url) as store:
                database: str = url
                figures.append(
                    await measure_store("postgresql", store, count, lambda: postgres_size(database))
                )
            cross = await cross_process(url, 200 if quick else 1000)
    return Report(count, figures, *cross)


def sqlite_size(path: Path) -> int:
    return sum(os.path.getsize(p) for p in (path, Path(f"{path}-wal")) if p.exists())


def run(quick: bool = False) -> Report:
    return trio.run(main_async, quick)


def table(report: Report) -> str:
    lines = [
        f"Task event streams (in process, {report.count} events per figure):",
        "",
        "| store | events/s 1→1 | emit→delivery p50 / p99 ms | replay 10k s | bytes/event "
        "| worker alone / 10 readers / stalled reader s |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for f in report.stores:
        size = (
            ""
            if f.bytes_per_event is None or f.bytes_per_event <= 0
            else f"{f.bytes_per_event:.0f}"
        )
        lines.append(
            f"| {f.store} | {f.events_per_s:,.0f} | {f.delay_p50_ms:.2f} / {f.delay_p99_ms:.2f} "
            f"| {f.replay_10k_s:.2f} | {size} | {f.worker_alone_s:.2f} / "
            f"{f.worker_ten_readers_s:.2f} / {f.worker_stalled_reader_s:.2f} |"
        )
    if report.cross_p50_ms is not None and report.cross_p99_ms is not None:
        lines.append("")
        lines.append(
            f"Across two stores on one PostgreSQL (append → NOTIFY → read): "
            f"p50 {report.cross_p50_ms:.2f} ms, p99 {report.cross_p99_ms:.2f} ms"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    report = run(args.quick)
    print(table(report))
    print(json.dumps(attrs.asdict(report)))


if __name__ == "__main__":
    main()
