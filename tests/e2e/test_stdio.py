"""End to end: ``presa-trio stdio`` as a subprocess, newline-delimited JSON-RPC.

Rules of this file: the server is a real child process (``python -m
presa_trio stdio``); every exchange is bounded by ``trio.fail_after``; the
test closes stdin to end the server and then requires a clean exit.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from presa_trio.testing import request
from presa_trio.wire.errors import INVALID_REQUEST, PARSE_ERROR
from presa_trio.wire.meta import META_SERVER_INFO
from tests.e2e.peers import StdioPeer

TASKS: dict[str, Any] = {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.fixture
async def peer(nursery: trio.Nursery) -> AsyncIterator[StdioPeer]:
    """The server as a child of the test's nursery (``trio.run_process``)."""
    command = [sys.executable, "-m", "presa_trio", "stdio", "--log-level", "WARNING"]
    process: trio.Process = await nursery.start(
        partial(trio.run_process, command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    )
    opened = StdioPeer(process)
    yield opened
    assert process.stdin is not None
    await process.stdin.aclose()
    with trio.fail_after(10):
        while await opened.next_message() is not None:
            pass
        assert await process.wait() == 0


@asynccontextmanager
async def piped_server(*arguments: str, **options: Any) -> AsyncIterator[StdioPeer]:
    """``presa-trio stdio ARGUMENTS`` with stdin, stdout and stderr piped, as a peer; its
    stdin is closed on leaving, and the block ends once the server has exited.
    ``options`` go to :func:`trio.run_process`."""
    command = [sys.executable, "-m", "presa_trio", "stdio", *arguments]
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    async with trio.open_nursery() as nursery:
        process: trio.Process = await nursery.start(
            partial(trio.run_process, command, check=False, **pipes, **options)
        )
        yield StdioPeer(process)
        assert process.stdin is not None
        await process.stdin.aclose()


async def exited(process: trio.Process) -> tuple[int, bytes]:
    """The server's exit status, once it has exited, and all it wrote to stderr."""
    status = await process.wait()
    assert process.stderr is not None
    stderr = b""
    while chunk := await process.stderr.receive_some():
        stderr += chunk
    return status, stderr


async def test_discover_and_a_tool_call_over_stdio(peer: StdioPeer) -> None:
    """Spec-mandated (basic/transports/stdio §Receiving Messages): one
    message per line, the same results as over HTTP, serverInfo in ``_meta``."""
    with trio.fail_after(10):
        discovered = await peer.call("server/discover", {}, 1)
        called = await peer.call("tools/call", {"name": "test_simple_text"}, 2)
    assert discovered["result"]["supportedVersions"] == ["2026-07-28"]
    assert discovered["result"]["_meta"][META_SERVER_INFO]["name"] == "presa-trio"
    assert called["result"]["content"][0]["text"] == "This is a simple text response for testing."


async def test_a_multi_round_trip_over_stdio(peer: StdioPeer) -> None:
    """Spec-mandated (basic/patterns/mrtr §Basic Workflow): input_required with a signed
    state, then the retry with answers and state completes; §2 applies on stdio."""
    params: dict[str, Any] = {"name": "test_input_required_result_request_state"}
    with trio.fail_after(10):
        first = (await peer.call("tools/call", params, 1))["result"]
        retry = {
            **params,
            "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
            "requestState": first["requestState"],
        }
        second = (await peer.call("tools/call", retry, 2))["result"]
    assert first["resultType"] == "input_required"
    assert second["resultType"] == "complete"
    assert second["content"][0]["text"].startswith("state-ok")


async def poll_until(peer: StdioPeer, task_id: str, status: str, first_id: int) -> dict[str, Any]:
    """tasks/get until the task shows ``status``; each poll is one round trip."""
    request_id = first_id
    while True:
        got = await peer.call("tasks/get", {"taskId": task_id}, request_id, capabilities=TASKS)
        if got["result"]["status"] == status:
            result: dict[str, Any] = got["result"]
            return result
        request_id += 1


async def test_a_full_task_life_over_stdio_survives_cancelling_its_request(
    peer: StdioPeer,
) -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation; T-50): notifications/cancelled for
    the creating request never cancels a task; the task runs create → input_required
    → update → completed over stdio."""
    call = {"name": "confirm_delete", "arguments": {"filename": "a.txt"}}
    with trio.fail_after(10):
        created = (await peer.call("tools/call", call, 1, capabilities=TASKS))["result"]
        task_id = created["taskId"]
        await peer.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        )
        parked = await poll_until(peer, task_id, "input_required", 100)
        answer = {"confirm-delete": {"action": "accept", "content": {"confirm": True}}}
        await peer.call(
            "tasks/update", {"taskId": task_id, "inputResponses": answer}, 2, capabilities=TASKS
        )
        done = await poll_until(peer, task_id, "completed", 1000)
    assert created["resultType"] == "task"
    assert list(parked["inputRequests"]) == ["confirm-delete"]
    assert done["result"]["content"] == [{"type": "text", "text": "Delete confirmed: true"}]


async def test_notifications_cancelled_stops_an_ordinary_request(peer: StdioPeer) -> None:
    """Spec-mandated (basic/transports/stdio §Cancellation): after
    notifications/cancelled the server sends nothing more for that request, and
    keeps serving others."""
    with trio.fail_after(10):
        await peer.send(
            request(
                "tools/call", {"name": "slow_compute", "arguments": {"seconds": 30}}, request_id=9
            )
        )
        await peer.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 9, "reason": "test"},
            }
        )
        later = await peer.call("server/discover", {}, 10)
        assert peer.process.stdin is not None
        await peer.process.stdin.aclose()
        while await peer.next_message() is not None:
            pass
    assert later["result"]["resultType"] == "complete"
    assert [m for m in peer.received if m.get("id") == 9] == []


async def test_a_cancelled_id_is_reused_and_a_malformed_cancellation_is_unanswered(
    peer: StdioPeer,
) -> None:
    """Spec-mandated (basic/patterns/cancellation §Error Handling: malformed cancellation
    notifications SHOULD be ignored; §Behavior Requirements: free the cancelled
    request's resources): in one write, a slow request, a cancellation whose params are
    a list, a good cancellation and the same id again: the malformed one gets no line,
    the cancelled request none either, and the reused id its one answer."""
    assert peer.process.stdin is not None

    def slow(seconds: int) -> dict[str, Any]:
        params = {"name": "slow_compute", "arguments": {"seconds": seconds}}
        return request("tools/call", params, request_id=7)

    def cancellation(params: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}

    sent = [slow(30), cancellation([7]), cancellation({"requestId": 7}), slow(1)]
    with trio.fail_after(10):
        await peer.process.stdin.send_all(b"".join(json.dumps(m).encode() + b"\n" for m in sent))
        answered = await peer.response_to(7)
        discovered = await peer.call("server/discover", {}, 8)
    assert answered["result"]["content"] == [{"type": "text", "text": "Completed slow_compute"}]
    assert discovered["result"]["resultType"] == "complete"
    assert [m.get("id") for m in peer.received] == [7, 8]


async def test_no_line_stops_the_server_process(peer: StdioPeer) -> None:
    """Spec-mandated (basic/index §Requests: an id is a string or an integer;
    basic/transports/stdio §Cancellation): lines that are not JSON, not UTF-8, not
    one message, or a cancellation whose ``requestId`` is a list, an object, ``true``
    or ``1.0`` stop nothing: request 1 is still answered, and so is the next one."""
    assert peer.process.stdin is not None
    slow = {"name": "slow_compute", "arguments": {"seconds": 1}}
    with trio.fail_after(10):
        await peer.send(request("tools/call", slow, request_id=1))
        for request_id in ([1], {"id": 1}, True, 1.0):
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": request_id},
                }
            )
        await peer.process.stdin.send_all(b"{not json\n\xff\xfe\x00\n[]\n{}\n\n")
        await peer.send({"jsonrpc": "2.0", "id": True, "method": "server/discover"})
        answered = await peer.response_to(1)
        discovered = await peer.call("server/discover", {}, 2)
    assert answered["result"]["content"] == [{"type": "text", "text": "Completed slow_compute"}]
    assert discovered["result"]["resultType"] == "complete"
    refused = [m["error"]["code"] for m in peer.received if m.get("id") is None]
    assert refused == [PARSE_ERROR, PARSE_ERROR, INVALID_REQUEST, INVALID_REQUEST, INVALID_REQUEST]


async def test_stdin_and_stdout_may_be_regular_files(tmp_path: Path) -> None:
    """presa-defined (stdio.py: what Trio cannot poll is read and written in a worker
    thread): ``presa-trio stdio < requests > answers`` answers every line and exits
    at the end of the file."""
    requests = tmp_path / "requests.jsonl"
    answers = tmp_path / "answers.jsonl"
    requests.write_bytes(
        b"".join(
            json.dumps(request("server/discover", request_id=n)).encode() + b"\n" for n in range(3)
        )
    )
    command = [sys.executable, "-m", "presa_trio", "stdio", "--log-level", "WARNING"]
    with requests.open("rb") as stdin, answers.open("wb") as stdout, trio.fail_after(10):
        await trio.run_process(command, stdin=stdin, stdout=stdout)
    lines = [json.loads(line) for line in answers.read_bytes().splitlines()]
    assert sorted(m["id"] for m in lines) == [0, 1, 2]
    assert {m["result"]["resultType"] for m in lines} == {"complete"}


async def test_a_client_that_does_not_read_stdout_stalls_only_the_writer(
    peer: StdioPeer,
) -> None:
    """presa-defined (stdio.py: one writer task owns stdout, which Trio writes without
    blocking): with stdout full (the client reads nothing), the server goes on reading
    stdin and acting on it; once the client reads, every response arrives, whole."""
    assert peer.process.stdin is not None
    with trio.fail_after(20):
        for n in range(100):  # about 0.5 MB of answers: far more than a pipe holds
            await peer.send(request("tools/list", {}, request_id=n))
        # A blocked loop would stop reading stdin, and these writes would block in turn.
        filler = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n' * 20_000
        await peer.process.stdin.send_all(filler)
        answered: dict[int, dict[str, Any]] = {}
        while len(answered) < 100:
            message = await peer.next_message()
            assert message is not None, "the server closed stdout"
            answered[message["id"]] = message
    assert sorted(answered) == list(range(100))
    assert len({json.dumps(answer["result"]["tools"]) for answer in answered.values()}) == 1


async def test_a_server_whose_lifetime_fails_exits_with_one_line_and_status_1() -> None:
    """presa-defined (docs/tasks.md, the failure policy; stdio.py): when the
    server-lifetime nursery (where the task runner runs) fails, ``presa-trio stdio``
    stops at once, with stdin still open: status 1, the failure logged once, and one
    line last on stderr for a supervisor (as ``presa-trio serve``), no uncaught
    traceback."""
    async with piped_server("tests.e2e.failing_server:server", "--log-level", "ERROR") as peer:
        with trio.fail_after(20):
            discovered = await peer.call("server/discover", {}, 1)
            await peer.send(request("tools/call", {"name": "doom", "arguments": {}}, request_id=2))
            while await peer.next_message() is not None:
                pass
            status, stderr = await exited(peer.process)
    lines = stderr.decode().splitlines()
    assert discovered["result"]["resultType"] == "complete"
    assert status == 1
    assert lines[-1] == (
        "presa-trio: error: the server cannot run: RuntimeError: the runner lost its store for good"
    )
    logged = [line for line in lines if " ERROR " in line]
    assert len(logged) == 1
    assert logged[0].endswith(
        "presa_trio.stdio: the server cannot run: RuntimeError: the runner lost its store for good"
    )
    assert not any("<frozen runpy>" in line for line in lines)


async def test_stdout_carries_only_messages_whatever_the_server_prints() -> None:
    """Spec-mandated (basic/transports/stdio: the server MUST NOT write anything to its
    stdout that is not a valid MCP message; it MAY log to stderr): what a server prints
    as it is imported, what a tool prints (flushed or not) and what a child process
    writes to the stdout it inherits all go to stderr; a child that reads the stdin it
    inherits finds nothing there, and takes none of the client's messages."""
    command = [
        *[sys.executable, "-m", "presa_trio", "stdio", "tests.e2e.printing_server:server"],
        *["--log-level", "WARNING"],
    ]
    tools = [("stray", 1), ("read_stdin", 2)]
    lines = b"".join(
        json.dumps(request("tools/call", {"name": name}, request_id=n)).encode() + b"\n"
        for name, n in tools
    )
    discover = json.dumps(request("server/discover", request_id=3)).encode() + b"\n"
    with trio.fail_after(20):
        ran = await trio.run_process(
            command, stdin=lines + discover, capture_stdout=True, capture_stderr=True
        )
    answers = {m["id"]: m for m in map(json.loads, ran.stdout.splitlines())}
    assert answers[1]["result"]["content"][0]["text"] == "done"
    assert answers[2]["result"]["content"][0]["text"] == "0 0"
    assert answers[3]["result"]["resultType"] == "complete"
    for printed in [
        "printed while the server module was imported",
        "printed by a tool, flushed",
        "printed by a tool, left in the buffer",
        "written by a child process",
    ]:
        assert printed in ran.stderr.decode()


#: ``serve_stdio`` called as the API has it, the printing server's tool run, then a print.
SERVE_THEN_PRINT = """
import trio
from presa_trio.stdio import serve_stdio
from tests.e2e.printing_server import server
trio.run(serve_stdio, server)
print("printed once serving had ended", flush=True)
"""


async def test_serve_stdio_gives_stdout_back_when_it_returns() -> None:
    """presa-defined (docs/api.md, serve_stdio: while it serves, what else writes to
    stdout goes to stderr; basic/transports/stdio: only MCP messages on stdout): called
    from Python, ``serve_stdio`` claims stdout itself while it runs, so a tool's print goes
    to stderr, and gives it back when it returns, so what the program prints before and
    after is on stdout."""
    call = json.dumps(request("tools/call", {"name": "stray"}, request_id=1)).encode() + b"\n"
    with trio.fail_after(20):
        ran = await trio.run_process(
            [sys.executable, "-c", SERVE_THEN_PRINT],
            stdin=call,
            capture_stdout=True,
            capture_stderr=True,
        )
    before, answer, after = ran.stdout.decode().splitlines()
    assert before == "printed while the server module was imported"  # before the claim
    assert json.loads(answer)["result"]["content"][0]["text"] == "done"
    assert after == "printed once serving had ended"
    assert "printed by a tool, flushed" in ran.stderr.decode()


@pytest.mark.parametrize(("closing", "name"), [("<&-", "stdin"), (">&-", "stdout")])
async def test_a_closed_stdin_or_stdout_stops_the_start_in_one_line(
    closing: str, name: str
) -> None:
    """presa-defined (cli/main.py: an operator's mistake is one line and status 2): a
    ``presa-trio stdio`` started without stdin or without stdout says which is missing,
    with no traceback."""
    command = [sys.executable, "-m", "presa_trio", "stdio"]
    shell = ["sh", "-c", f'exec "$@" {closing}', "sh", *command]
    with trio.fail_after(20):
        ran = await trio.run_process(shell, capture_stderr=True, check=False)
    assert ran.returncode == 2
    assert ran.stderr.decode().splitlines() == [
        f"presa-trio: error: {name} is not open; stdio serves on stdin and stdout"
    ]


def default_sigint() -> None:
    """In the child, before it runs the server: SIGINT at its default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "with-a-request-in-flight"])
async def test_ctrl_c_stops_the_server_with_status_130_and_no_traceback(busy: bool) -> None:
    """presa-defined (cli/main.py: Ctrl-C exits 130): SIGINT, as a terminal sends it to
    ``presa-trio stdio`` and to every process of its group, stops the server at once,
    idle or with a request in flight, with status 130 and without a traceback; the
    request is not answered.

    The server starts with SIGINT at its default disposition, as a terminal's
    foreground job does: a process started with SIGINT ignored (a background job
    of a script, ``nohup``) keeps ignoring it, as Python and Unix convention have it,
    and this test may itself run as such a job."""
    async with piped_server("--log-level", "WARNING", preexec_fn=default_sigint) as peer:
        with trio.fail_after(20):
            await peer.call("server/discover", {}, 1)
            if busy:
                slow = {"name": "slow_compute", "arguments": {"seconds": 60}}
                await peer.send(request("tools/call", slow, request_id=2))
            peer.process.send_signal(signal.SIGINT)
            while await peer.next_message() is not None:
                pass
            status, stderr = await exited(peer.process)
    assert status == 130
    assert b"Traceback" not in stderr
    assert [m["id"] for m in peer.received] == [1]


async def test_a_client_that_closes_stdout_stops_the_server() -> None:
    """presa-defined (stdio.py: a closed stdout stops the server): once the client has
    closed its end of stdout, the next answer meets a broken pipe and the server exits,
    status 0, with stdin still open and a listen in flight, saying why on stderr and
    without a traceback."""
    listen = {"notifications": {"toolsListChanged": True}}
    async with piped_server("--log-level", "WARNING") as peer:
        with trio.fail_after(20):
            await peer.send(request("subscriptions/listen", listen, request_id="L"))
            await peer.next_message()
            assert peer.process.stdout is not None
            await peer.process.stdout.aclose()
            await peer.send(request("server/discover", request_id=1))
            status, stderr = await exited(peer.process)
    assert status == 0
    assert stderr.decode().splitlines()[-1].endswith("presa_trio.stdio: stdout is closed; stopping")
    assert b"Traceback" not in stderr
