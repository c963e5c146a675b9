"""The client follows a task's events (SEP-2694, a draft): ``task stream``, and ``call``.

Rules of this file: every server is a real ``presa-trio serve`` child process
(with ``--task-events`` unless a test is about a server without event
streams), and the client a real ``python -m presa_trio`` process; a cut is a
real one, made by a TCP relay between them (:mod:`tests.client.relay`). What
the client sent is read from its ``--transcript``. Every wait is bounded by
``trio.fail_after`` and nothing asserts how long anything took.
"""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import pytest
import trio

from tests.client.helpers import client, client_command, start_client
from tests.client.relay import Relay
from tests.e2e.serve_process import ServeProcess, presa_serve

CONFIRM = '{"action":"accept","content":{"confirm":true}}'
STATUS = "presa_trio.task.status"
#: ``confirm_delete``, its question answered by a flag.
ANSWERED = ("confirm_delete", "filename=notes.txt", "--answer", f"confirm-delete={CONFIRM}")


@pytest.fixture
async def streaming() -> AsyncIterator[ServeProcess]:
    """``presa-trio serve --task-events``."""
    async with presa_serve("--task-events") as served:
        yield served


def exchanges(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def methods(path: Path) -> list[str]:
    return [record["request"]["body"]["method"] for record in exchanges(path)]


def streams_sent(path: Path) -> list[dict[str, Any]]:
    """The params of every ``tasks/stream`` the client sent, ``_meta`` left out."""
    return [
        {k: v for k, v in record["request"]["body"]["params"].items() if k != "_meta"}
        for record in exchanges(path)
        if record["request"]["body"]["method"] == "tasks/stream"
    ]


def lines_of(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


async def detached(url: str, tool: str, *pairs: str) -> str:
    ran = await client("call", url, tool, *pairs, "--detach")
    assert ran.status == 0, ran.stderr
    return ran.stdout.strip()


async def test_task_stream_prints_each_event_as_it_comes_and_ends_with_the_task(
    streaming: ServeProcess,
) -> None:
    """Spec-mandated (SEP-2694 §Task Event, §Resume and Replay Semantics): ``--json``
    prints each event's params as sent, one per line, seqs 0, 1, 2… up to the closing
    status event; the human form shows the same events, partial content as text."""
    task_id = await detached(streaming.url, "slow_compute", "seconds=0.5")
    ran = await client("task", "stream", streaming.url, task_id, "--json")
    assert ran.status == 0, ran.stderr
    events = lines_of(ran.stdout)
    assert [e["seq"] for e in events] == list(range(7))
    assert {e["taskId"] for e in events} == {task_id}
    assert (events[0]["type"], events[0]["payload"]["status"]) == (STATUS, "working")
    assert (events[-1]["type"], events[-1]["payload"]["status"]) == (STATUS, "completed")
    assert events[1]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    readable = await client("task", "stream", streaming.url, task_id)
    assert readable.status == 0, readable.stderr
    shown = readable.stdout.splitlines()
    assert shown[0] == f"0 {STATUS}: working — The task is running"
    assert shown[1] == "1 presa_trio.content.partial: step 1 of 5 done"
    assert shown[-1] == f"6 {STATUS}: completed"


async def test_task_stream_after_n_starts_after_event_n(streaming: ServeProcess) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics: "the server sends
    retained events with seq greater than this value")."""
    task_id = await detached(streaming.url, "slow_compute", "seconds=0")
    ran = await client("task", "stream", streaming.url, task_id, "--after", "3", "--json")
    assert ran.status == 0, ran.stderr
    assert [e["seq"] for e in lines_of(ran.stdout)] == [4, 5, 6]
    refused = await client("task", "stream", streaming.url, task_id, "--after", "-1")
    assert refused.status == 2
    assert "is not an event's seq" in refused.error()


async def test_task_stream_exits_with_the_status_task_wait_gives_the_outcome(
    streaming: ServeProcess,
) -> None:
    """presa-defined (docs/client.md, "Following a task's events"): a tool error is
    1, a failed task 3 with its error as the one line, a cancelled task 130."""
    tool_error = await detached(streaming.url, "failing_job")
    ran = await client("task", "stream", streaming.url, tool_error)
    assert ran.status == 1, ran.stderr
    assert ran.stdout.splitlines()[-1].endswith(": completed")
    failed = await detached(streaming.url, "protocol_error_job")
    ran = await client("task", "stream", streaming.url, failed)
    assert ran.status == 3
    assert ran.error() == f"task {failed} failed: -32603: Internal error"
    long = await detached(streaming.url, "slow_compute", "seconds=60")
    assert (await client("task", "cancel", streaming.url, long)).status == 0
    ran = await client("task", "stream", streaming.url, long)
    assert ran.status == 130
    assert ran.stdout.splitlines()[-1].endswith(": cancelled — The task was cancelled")
    assert f"task {long} was cancelled" in ran.stderr


async def test_events_gone_is_said_with_what_was_lost_and_the_stream_goes_on() -> None:
    """Spec-mandated (SEP-2694 §events_gone error: "call tasks/stream with after set to
    earliestSeq - 1 to resume from the earliest retained event"): with three events
    kept, a cursor before them is told on stderr which events are gone and from which
    seq the server keeps them; the stream goes on from there to the end."""
    async with presa_serve("--task-events", "--task-events-max", "3") as served:
        task_id = await detached(served.url, "slow_compute", "seconds=0")
        assert (await client("task", "wait", served.url, task_id)).status == 0
        ran = await client("task", "stream", served.url, task_id, "--after", "0", "--json")
        from_start = await client("task", "stream", served.url, task_id, "--json")
    assert ran.status == 0, ran.stderr
    assert [e["seq"] for e in lines_of(ran.stdout)] == [4, 5, 6]
    assert (
        f"events 1–3 of task {task_id} are gone: the server keeps the task's events "
        "from seq 4 on; going on from there"
    ) in ran.stderr
    assert from_start.status == 0, from_start.stderr
    assert [e["seq"] for e in lines_of(from_start.stdout)] == [4, 5, 6]
    assert f"events 0–3 of task {task_id} are gone" in from_start.stderr


@attrs.define(eq=False)
class StreamingClient:
    """``presa-trio task stream … --json`` running: its events read as they are printed."""

    process: trio.Process
    errors: Path
    printed: list[dict[str, Any]] = attrs.field(factory=list)
    _buffer: bytearray = attrs.field(factory=bytearray)

    async def read_until(self, count: int) -> None:
        """Read printed events until there are ``count``, or all when ``count`` is 0."""
        assert self.process.stdout is not None
        while count == 0 or len(self.printed) < count:
            while b"\n" not in self._buffer:
                chunk = await self.process.stdout.receive_some()
                if not chunk:
                    assert count == 0, self.errors.read_text()
                    return
                self._buffer += chunk
            line, _, rest = bytes(self._buffer).partition(b"\n")
            self._buffer[:] = rest
            self.printed.append(json.loads(line))


@asynccontextmanager
async def streaming_client(
    url: str, task_id: str, tmp_path: Path, record: Path
) -> AsyncIterator[StreamingClient]:
    errors = tmp_path / "stderr.txt"
    arguments = ("task", "stream", url, task_id, "--json", "--transcript", str(record))
    with errors.open("wb") as stderr:
        async with trio.open_nursery() as nursery:
            process = await start_client(nursery, *arguments, stderr=stderr)
            yield StreamingClient(process, errors)
            nursery.cancel_scope.cancel(reason="test over")


async def answer(url: str, task_id: str) -> None:
    answered = await client("task", "update", url, task_id, "--answer", f"confirm-delete={CONFIRM}")
    assert answered.status == 0, answered.stderr


def assert_every_event_once(watched: StreamingClient, record: Path, task_id: str) -> None:
    """The task's events printed once each, in order, to the closing one; the cut resumed
    with ``after: 2``."""
    assert [e["seq"] for e in watched.printed] == list(range(len(watched.printed)))
    assert watched.printed[2]["payload"]["status"] == "input_required"
    assert watched.printed[-1]["payload"]["status"] == "completed"
    assert "gone" not in watched.errors.read_text()
    sent = streams_sent(record)
    assert sent[0] == {"taskId": task_id}
    assert {"taskId": task_id, "after": 2} in sent[1:]
    assert all(params.get("after") == 2 for params in sent[1:])


async def test_a_cut_stream_resumes_after_the_last_event_printed_with_no_loss_or_repeat(
    streaming: ServeProcess, nursery: trio.Nursery, tmp_path: Path
) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics: "On reconnect, clients
    SHOULD pass that sequence number as after"; "SHOULD de-duplicate"): the client
    streams through a relay; once it has printed the three events of a task parked on
    its question, every connection through the relay is closed. The client resumes
    with `after: 2`, the task is answered, and the output holds every event once."""
    relay = Relay(int(streaming.url.split(":")[2].split("/")[0]))
    await nursery.start(relay.serve)
    task_id = await detached(streaming.url, "confirm_delete", "filename=a.txt")
    record = tmp_path / "wire.jsonl"
    through = f"http://127.0.0.1:{relay.port}/mcp"
    with trio.fail_after(60):
        async with streaming_client(through, task_id, tmp_path, record) as watched:
            await watched.read_until(3)
            assert relay.cut() >= 1
            await answer(streaming.url, task_id)
            await watched.read_until(0)
            assert await watched.process.wait() == 0, watched.errors.read_text()
    assert_every_event_once(watched, record, task_id)


async def test_a_stream_cut_by_a_server_restart_waits_for_the_server_and_resumes(
    tmp_path: Path,
) -> None:
    """Spec-mandated (SEP-2694 §Resume and Replay Semantics, §Rationale "Why not rely on
    transport-layer resume?": the cursor outlives the connection): the server is killed
    while the client streams a parked task; the client tries again until the next
    server on the same port and SQLite file answers, resumes with `after: 2`, and
    prints the rest once the task is answered there."""
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    options = ("--store", store, "--task-lease", "1", "--task-events")
    record = tmp_path / "wire.jsonl"
    with trio.fail_after(60):
        async with presa_serve(*options) as first:
            port = str(urlsplit(first.url).port)  # the one the first server bound
            task_id = await detached(first.url, "confirm_delete", "filename=a.txt")
            async with streaming_client(first.url, task_id, tmp_path, record) as watched:
                await watched.read_until(3)
                first.process.send_signal(signal.SIGKILL)
                await first.stopped()
                async with presa_serve(*options, "--port", port) as second:
                    assert second.url == first.url
                    await answer(second.url, task_id)
                    await watched.read_until(0)
                    assert await watched.process.wait() == 0, watched.errors.read_text()
    assert_every_event_once(watched, record, task_id)


async def test_a_stream_refused_for_now_is_tried_again_and_prints_every_event(
    tmp_path: Path,
) -> None:
    """presa-defined (docs/client.md, Following a task's events; spec-notes §31: a
    retryable -32603, over HTTP 429 for the caller's own limit): with one stream
    allowed per client, a second ``task stream`` is refused while the first is open; it
    says so on stderr and tries again, with backoff, until the first stream has ended,
    then prints every event of its task once and exits as the task ended. Refusals
    that go on for ``--timeout`` end the command with the refusal as its line."""
    limit = ("--task-events", "--task-events-max-streams-per-client", "1")
    with trio.fail_after(60):
        async with presa_serve(*limit) as served, trio.open_nursery() as nursery:
            parked = await detached(served.url, "confirm_delete", "filename=a.txt")
            done = await detached(served.url, "slow_compute", "seconds=0")
            holder = streaming_client(served.url, parked, tmp_path, tmp_path / "held.jsonl")
            async with holder as held:
                await held.read_until(3)
                waiting = await start_client(nursery, "task", "stream", served.url, done, "--json")
                assert waiting.stderr is not None
                assert waiting.stdout is not None
                said = b""
                while b"trying again" not in said:
                    chunk = await waiting.stderr.receive_some()
                    assert chunk, said.decode()
                    said += chunk
                bounded = await client("task", "stream", served.url, done, "--timeout", "1")
                assert bounded.status == 3
                assert "Too many task event streams" in bounded.error()
                await answer(served.url, parked)
                await held.read_until(0)
                assert await held.process.wait() == 0, held.errors.read_text()
            printed = b""
            async for chunk in waiting.stdout:
                printed += chunk
            async for chunk in waiting.stderr:
                said += chunk
            assert await waiting.wait() == 0, said.decode()
    events = lines_of(printed.decode())
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert events[-1]["payload"]["status"] == "completed"
    assert "-32603: Too many task event streams open for this client" in said.decode()
    assert "presa-trio: error" not in said.decode()


async def test_call_follows_a_task_by_its_events_when_the_server_offers_them(
    streaming: ServeProcess, tmp_path: Path
) -> None:
    """Spec-permitted (SEP-2694 §Specification: the eventStreams sub-capability): the
    status comes from the task's events, tasks/get only for the question and the
    outcome; the output and the exit status are those of a polled task."""
    record = tmp_path / "wire.jsonl"
    ran = await client("call", streaming.url, *ANSWERED, "--transcript", str(record))
    assert (ran.status, ran.stdout) == (0, "Delete confirmed: true\n"), ran.stderr
    assert ": input_required — The task is waiting for input" in ran.stderr
    assert "answered confirm-delete" in ran.stderr
    sent = methods(record)
    assert "server/discover" in sent
    assert "subscriptions/listen" not in sent
    assert sent.count("tasks/get") == 2
    assert streams_sent(record)[0].keys() == {"taskId"}
    failing = await client("call", streaming.url, "failing_job")
    assert (failing.status, failing.stdout) == (1, "The task job failed\n")
    protocol_error = await client("call", streaming.url, "protocol_error_job")
    assert protocol_error.status == 3
    assert protocol_error.error().endswith("failed: -32603: Internal error")


async def test_without_event_streams_call_polls_and_task_stream_is_refused(
    presa: ServeProcess, tmp_path: Path
) -> None:
    """Spec-mandated (SEP-2694 §Specification: a receiver without task event streams
    answers -32601): `call` asks server/discover, finds no eventStreams and follows
    the task as before; `task stream` is one line and exit 3."""
    record = tmp_path / "wire.jsonl"
    ran = await client(
        "call", presa.url, "slow_compute", "seconds=0.2", "--transcript", str(record)
    )
    assert (ran.status, ran.stdout) == (0, "Completed slow_compute\n"), ran.stderr
    sent = methods(record)
    assert "server/discover" in sent
    assert "tasks/stream" not in sent
    assert {"subscriptions/listen", "tasks/get"} & set(sent)
    task_id = await detached(presa.url, "slow_compute", "seconds=0")
    refused = await client("task", "stream", presa.url, task_id)
    assert refused.status == 3
    assert refused.error().startswith("tasks/stream: JSON-RPC error -32601")


async def test_over_stdio_the_events_of_a_stream_find_it_among_other_requests(
    tmp_path: Path,
) -> None:
    """presa-defined (client/transport.py): on stdio an event names no request, so it
    goes to the open tasks/stream of its task while tasks/get and tasks/update are
    in flight beside it."""
    record = tmp_path / "stdio.jsonl"
    server = client_command("stdio", "--task-events", "--log-level", "WARNING")
    ran = await client("call", "--stdio", *ANSWERED, "--transcript", str(record), "--", *server)
    assert (ran.status, ran.stdout) == (0, "Delete confirmed: true\n"), ran.stderr
    assert "tasks/stream" in methods(record)
