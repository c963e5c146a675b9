"""Every client command against a real ``presa-trio serve``, checked on the wire.

The transcript the client writes (``--transcript``) is the record of what it
sent, so the headers and ``_meta`` are asserted there, as a proxy would see
them.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import trio

from tests.client.helpers import client, client_command, client_environment
from tests.e2e.serve_process import REPOSITORY, ServeProcess, presa_serve, serving

ACCEPT_NAME = '{"action":"accept","content":{"name":"Ada"}}'


def exchanges(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def sent(record: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    return record["request"]["headers"], record["request"]["body"]


async def test_discover_says_what_the_server_speaks(presa: ServeProcess) -> None:
    ran = await client("discover", presa.url, "--json")
    assert ran.status == 0, ran.stderr
    discovered = json.loads(ran.stdout)
    assert discovered["supportedVersions"] == ["2026-07-28"]
    assert "io.modelcontextprotocol/tasks" in discovered["capabilities"]["extensions"]
    readable = await client("discover", presa.url)
    assert "versions: 2026-07-28" in readable.stdout
    assert "extensions: io.modelcontextprotocol/tasks" in readable.stdout


async def test_list_reads_every_kind(presa: ServeProcess) -> None:
    tools = json.loads((await client("list", presa.url, "--json")).stdout)["tools"]
    assert {"greet", "slow_compute", "confirm_delete"} <= {tool["name"] for tool in tools}
    resources = await client("list", presa.url, "resources")
    assert "test://static-text" in resources.stdout
    templates = await client("list", presa.url, "templates")
    assert "test://template/{id}/data" in templates.stdout
    prompts = await client("list", presa.url, "prompts")
    assert "test_prompt_with_arguments(arg1, arg2)" in prompts.stdout


async def test_call_sends_the_headers_and_meta_of_the_spec(
    presa: ServeProcess, tmp_path: Path
) -> None:
    """Mcp-Method, Mcp-Name, MCP-Protocol-Version and Mcp-Param-* (from the tool's
    x-mcp-header), and per-request _meta, as streamable-http and basic/index say."""
    record = tmp_path / "wire.jsonl"
    ran = await client(
        "call", presa.url, "test_x_mcp_header", "region=eu-west", "--transcript", str(record)
    )
    assert ran.status == 0, ran.stderr
    listed, called = exchanges(record)
    assert sent(listed)[0]["mcp-method"] == "tools/list"
    headers, body = sent(called)
    assert headers["mcp-method"] == "tools/call"
    assert headers["mcp-name"] == "test_x_mcp_header"
    assert headers["mcp-protocol-version"] == "2026-07-28"
    assert headers["mcp-param-region"] == "eu-west"
    meta = body["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    capabilities = meta["io.modelcontextprotocol/clientCapabilities"]
    assert {"elicitation", "sampling", "roots"} <= capabilities.keys()
    assert "io.modelcontextprotocol/tasks" in capabilities["extensions"]
    assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "presa-trio"
    assert called["response"]["status"] == 200
    rendered = await client("transcript", str(record))
    assert "`tools/call` `test_x_mcp_header`" in rendered.stdout


async def test_key_value_arguments_are_typed_by_the_schema(
    presa: ServeProcess, tmp_path: Path
) -> None:
    record = tmp_path / "wire.jsonl"
    ran = await client(
        "call",
        presa.url,
        "slow_compute",
        "seconds=0",
        "label=42",
        "--no-tasks",
        "--transcript",
        str(record),
    )
    assert ran.status == 0, ran.stderr
    assert ran.stdout == "Completed 42\n"
    params = sent(exchanges(record)[1])[1]["params"]
    assert params["arguments"] == {"seconds": 0, "label": "42"}
    declared = params["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert "io.modelcontextprotocol/tasks" not in declared.get("extensions", {})
    as_json = await client("call", presa.url, "greet", "--args", '{"name": "Grace"}', "--json")
    assert json.loads(as_json.stdout)["content"] == [{"type": "text", "text": "Hello, Grace!"}]


async def test_options_may_stand_among_the_words_after_them(presa: ServeProcess) -> None:
    """presa-defined (docs/client.md): KEY=VALUE words, ``list``'s kind and ``request``'s
    params read the same after an option as before it."""
    called = await client("call", presa.url, "greet", "--json", "name=Ada", "--no-tasks")
    assert called.status == 0, called.stderr
    assert json.loads(called.stdout)["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    listed = await client("list", presa.url, "--json", "prompts")
    assert listed.status == 0, listed.stderr
    assert "prompts" in json.loads(listed.stdout)
    requested = await client("request", presa.url, "tools/call", "--json", '{"name": "greet"}')
    assert requested.status == 0, requested.stderr
    assert json.loads(requested.stdout)["content"][0]["text"] == "Hello, World!"


async def test_a_call_past_the_servers_rate_limit_is_said_as_such(tmp_path: Path) -> None:
    """presa-defined (docs/client.md, Exit codes; spec-notes §67): presa's ``--rate-limit``
    answers a call past it 429 in plain text with ``Retry-After`` (RFC 6585 §4). The
    client says the server refused the call for now, exit 3, and asks no more of a
    busy server: it is not a server of another era (streamable-http §Backward
    Compatibility: 400, 404 or 405), nor no MCP server."""
    record = tmp_path / "wire.jsonl"
    async with presa_serve("--rate-limit", "0.1") as served:
        first = await client("call", served.url, "greet", "name=Ada")
        assert first.status == 0, first.stderr
        ran = await client("call", served.url, "greet", "name=Ada", "--transcript", str(record))
    assert ran.status == 3
    assert ran.error().startswith(
        f"{served.url} refused the request for now: HTTP 429 Too Many Requests (Retry-After: "
    )
    called = [sent(record)[1]["method"] for record in exchanges(record)]
    assert called == ["tools/list", "tools/call"]


async def test_a_request_declaring_another_version_is_asked_as_declared(
    presa: ServeProcess, tmp_path: Path
) -> None:
    """Spec-mandated (streamable-http §Protocol Version Header: the header MUST match
    the body's ``_meta`` version; basic/versioning §Protocol Version Negotiation): a
    ``request`` whose ``_meta`` declares another version (docs/client.md: its keys
    win) is sent with that version in ``MCP-Protocol-Version`` too, so the server
    answers the question asked, UnsupportedProtocolVersionError naming what it
    speaks, not a header mismatch."""
    record = tmp_path / "wire.jsonl"
    meta = '{"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}}'
    ran = await client("request", presa.url, "tools/list", meta, "--transcript", str(record))
    assert ran.status == 3
    assert ran.error() == (
        "tools/list: JSON-RPC error -32022: Unsupported protocol version (it speaks 2026-07-28)"
    )
    headers, _ = sent(exchanges(record)[0])
    assert headers["mcp-protocol-version"] == "2099-01-01"


async def test_a_tool_error_exits_1(presa: ServeProcess) -> None:
    ran = await client("call", presa.url, "test_error_handling")
    assert ran.status == 1
    assert "intentionally returns an error" in ran.stdout


async def test_an_elicitation_is_answered_from_answer(presa: ServeProcess) -> None:
    ran = await client(
        "call",
        presa.url,
        "test_input_required_result_elicitation",
        "--answer",
        f"user_name={ACCEPT_NAME}",
    )
    assert ran.status == 0, ran.stderr
    assert ran.stdout == "Hello, Ada!\n"


async def test_a_multi_round_trip_call_is_retried_each_round(
    presa: ServeProcess, tmp_path: Path
) -> None:
    """Two rounds, each retried with that round's answer and the requestState given."""
    record = tmp_path / "wire.jsonl"
    answers = tmp_path / "answers.json"
    answers.write_text(
        json.dumps(
            {
                "step1": {"action": "accept", "content": {"name": "Ada"}},
                "step2": {"action": "accept", "content": {"color": "green"}},
            }
        )
    )
    ran = await client(
        "call",
        presa.url,
        "test_input_required_result_multi_round",
        "--answers",
        str(answers),
        "--transcript",
        str(record),
    )
    assert ran.status == 0, ran.stderr
    assert ran.stdout == "Ada likes green.\n"
    rounds = [sent(r)[1]["params"] for r in exchanges(record)[1:]]
    assert [sorted(p.get("inputResponses", {})) for p in rounds] == [[], ["step1"], ["step2"]]
    second_answer = exchanges(record)[2]["response"]["body"]["result"]
    assert rounds[2]["requestState"] == second_answer["requestState"]


async def test_sampling_and_roots_are_answered(presa: ServeProcess, tmp_path: Path) -> None:
    reply = '{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"me"}'
    sampled = await client(
        "call",
        presa.url,
        "test_input_required_result_sampling",
        "--answer",
        f"capital_question={reply}",
    )
    assert sampled.stdout == "The model answered: Paris\n", sampled.stderr
    rooted = await client(
        "call",
        presa.url,
        "test_input_required_result_list_roots",
        "--root",
        str(tmp_path),
        "--root",
        str(REPOSITORY),
    )
    assert rooted.stdout == "Client exposed 2 root(s).\n", rooted.stderr


async def test_read_and_prompt(presa: ServeProcess) -> None:
    read = await client("read", presa.url, "test://template/7/data", "--json")
    assert json.loads(json.loads(read.stdout)["contents"][0]["text"])["id"] == "7"
    prompt = await client("prompt", presa.url, "test_prompt_with_arguments", "arg1=a", "arg2=b")
    assert prompt.stdout == "user: Prompt with arguments: arg1='a', arg2='b'\n", prompt.stderr


async def test_a_task_that_asks_is_followed_and_answered(
    presa: ServeProcess, tmp_path: Path
) -> None:
    """The task's status lines, then its question answered through tasks/update;
    watched through a listen with taskIds, or by tasks/get alone (--no-listen)."""
    answer = '{"action":"accept","content":{"confirm":true}}'
    for follow, listens in (([], True), (["--no-listen"], False)):
        record = tmp_path / f"{listens}.jsonl"
        ran = await client(
            "call",
            presa.url,
            "confirm_delete",
            "filename=notes.txt",
            "--answer",
            f"confirm-delete={answer}",
            "--transcript",
            str(record),
            *follow,
        )
        assert ran.status == 0, ran.stderr
        assert ran.stdout == "Delete confirmed: true\n"
        assert ": input_required — The task is waiting for input" in ran.stderr
        assert "answered confirm-delete" in ran.stderr
        assert ran.stderr.splitlines()[-1].split(" (")[0].endswith(": completed")
        listen = [r for r in exchanges(record) if sent(r)[1]["method"] == "subscriptions/listen"]
        assert bool(listen) == listens
        if listens:
            (opened,) = listen
            assert sent(opened)[1]["params"]["notifications"]["taskIds"] == [
                exchanges(record)[1]["response"]["body"]["result"]["taskId"]
            ]
            kinds = {event["data"]["method"] for event in opened["response"]["events"]}
            assert kinds == {"notifications/subscriptions/acknowledged", "notifications/tasks"}


async def test_tasks_that_fail(presa: ServeProcess) -> None:
    tool_error = await client("call", presa.url, "failing_job")
    assert tool_error.status == 1
    assert tool_error.stdout == "The task job failed\n"
    protocol_error = await client("call", presa.url, "protocol_error_job")
    assert protocol_error.status == 3
    assert protocol_error.error().endswith("failed: -32603: Internal error")
    as_json = await client("call", presa.url, "protocol_error_job", "--json")
    assert as_json.status == 3
    failed = json.loads(as_json.stdout)["error"]  # one document: the failure, the task in it
    assert (failed["exitCode"], failed["task"]["error"]["code"]) == (3, -32603)


async def test_detach_then_get_wait_and_cancel(presa: ServeProcess) -> None:
    detached = await client("call", presa.url, "slow_compute", "seconds=0.5", "--detach")
    assert detached.status == 0
    task_id = detached.stdout.strip()
    got = json.loads((await client("task", "get", presa.url, task_id, "--json")).stdout)
    assert got["taskId"] == task_id
    waited = await client("task", "wait", presa.url, task_id)
    assert waited.stdout == "Completed slow_compute\n", waited.stderr
    long = (await client("call", presa.url, "slow_compute", "seconds=60", "--detach")).stdout
    cancelled = await client("task", "cancel", presa.url, long.strip())
    assert cancelled.stdout == f"task {long.strip()}: cancelled\n"


async def test_task_update_answers_a_detached_task(presa: ServeProcess) -> None:
    task_id = (await client("call", presa.url, "confirm_delete", "--detach")).stdout.strip()
    answer = '{"action":"accept","content":{"confirm":false}}'
    for _ in range(50):  # each look is a process of its own: no need to sleep between
        got = json.loads((await client("task", "get", presa.url, task_id, "--json")).stdout)
        if got["status"] == "input_required":
            break
    assert got["inputRequests"]["confirm-delete"]["method"] == "elicitation/create"
    updated = await client(
        "task", "update", presa.url, task_id, "--answer", f"confirm-delete={answer}", "--json"
    )
    assert updated.status == 0, updated.stderr
    # presa-defined (docs/client.md, For scripts): one document, the task once answered.
    assert json.loads(updated.stdout)["taskId"] == task_id
    assert "answered confirm-delete" in updated.stderr
    waited = await client("task", "wait", presa.url, task_id)
    assert waited.stdout == "Delete confirmed: false\n"
    again = await client("task", "update", presa.url, task_id, "--json")
    assert (again.status, json.loads(again.stdout)["status"]) == (0, "completed")


async def test_logout_prints_one_json_document(presa: ServeProcess, tmp_path: Path) -> None:
    """presa-defined (docs/client.md, For scripts): ``--json`` is one document for a
    command that asks no server too."""
    env = {**client_environment(), "PRESA_TRIO_CONFIG": str(tmp_path)}
    ran = await client("logout", presa.url, "--json", env=env)
    assert ran.status == 0, ran.stderr
    assert json.loads(ran.stdout) == {"resource": presa.url, "signedOut": False}
    # A configuration "directory" that is a file keeps no sign-in: none to forget.
    (tmp_path / "file").write_text("")
    in_a_file = {**env, "PRESA_TRIO_CONFIG": str(tmp_path / "file")}
    nothing = await client("logout", presa.url, env=in_a_file)
    assert (nothing.status, nothing.stderr) == (0, f"no sign-in was kept for {presa.url}\n")


async def test_ctrl_c_cancels_the_task_and_exits_130(presa: ServeProcess) -> None:
    """SIGINT while a task runs: tasks/cancel, the task reads cancelled, exit 130."""
    command = client_command("call", presa.url, "slow_compute", "seconds=60")
    async with serving(command, r"task (\S+): working") as watched:
        task_id = watched.url
        watched.process.send_signal(signal.SIGINT)
        with trio.fail_after(30):
            assert await watched.stopped() == 130
    assert f"task {task_id}: cancelled" in watched.stderr
    looked = await client("task", "get", presa.url, task_id, "--json")
    assert looked.status == 0, looked.stderr
    assert json.loads(looked.stdout)["status"] == "cancelled"
