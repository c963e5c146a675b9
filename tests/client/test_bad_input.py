"""Bad input gets one line on stderr and a non-zero exit, never a traceback.

A mistake the client can see (arguments against the schema, an answer that
is no JSON or no valid answer) is exit 2 and found before the request that
would carry it is sent; what the other end does wrong is exit 3.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.client.helpers import client
from tests.e2e.serve_process import ServeProcess


async def test_an_unreachable_url(closed_port_url: str) -> None:
    ran = await client("list", closed_port_url)
    assert ran.status == 3
    assert ran.error().startswith(f"cannot reach {closed_port_url}")


async def test_a_url_that_is_not_one() -> None:
    ran = await client("list", "ftp://example.org/mcp")
    assert ran.status == 2
    assert "is not an http:// or https:// URL" in ran.error()


async def test_a_url_no_connection_could_use_is_a_usage_error() -> None:
    """presa-defined (docs/client.md, exit statuses): a URL without a host, with a port
    past 65535 or a broken IPv6 literal is the command line's mistake, found before
    anything is tried, for ``logout`` (which reads the URL alone) as for the rest."""
    for url, said in (
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://127.0.0.1:99999/mcp", "Port out of range 0-65535"),
        ("http:///mcp", "it names no host"),
    ):
        for command in ("list", "logout"):
            ran = await client(command, url)
            assert ran.status == 2
            assert ran.error() == f"{url} is not a URL: {said}"


async def test_a_server_that_is_not_mcp(not_mcp: ServeProcess) -> None:
    ran = await client("discover", not_mcp.url)
    assert ran.status == 3
    assert ran.error().startswith(f"{not_mcp.url} is not an MCP server: HTTP 501 (text/html)")


async def test_a_legacy_only_server_says_what_it_speaks(sdk_legacy: ServeProcess) -> None:
    """streamable-http §Backward Compatibility: the first answer is no modern
    result, and an initialize probe tells which version the server speaks."""
    ran = await client("list", sdk_legacy.url)
    assert ran.status == 3
    assert ran.error() == (
        f"{sdk_legacy.url} speaks MCP 2025-11-25 (the initialize handshake), "
        "not 2026-07-28, the only version this client speaks"
    )


async def test_a_dual_era_servers_error_to_a_first_request_is_its_own(sdk: ServeProcess) -> None:
    """Spec-mandated (basic/versioning §Compatibility Matrix: a dual-era server is
    modern to a modern client, whatever it answers ``initialize``): the SDK's server,
    which serves both eras, answers ``tasks/get`` -32601 (no Tasks extension); that is
    its error, not a sign it speaks only the initialize era."""
    ran = await client("task", "get", sdk.url, "abc")
    assert ran.status == 3
    assert ran.error() == "tasks/get: JSON-RPC error -32601: Method not found"


async def test_an_unknown_tool_or_prompt_is_exit_2(presa: ServeProcess) -> None:
    """presa-defined (docs/client.md, exit statuses): a name the server's list lacks is
    the command line's mistake, for a tool and a prompt alike."""
    ran = await client("call", presa.url, "no_such_tool")
    assert ran.status == 2
    assert ran.error().startswith(f"{presa.url} has no tool 'no_such_tool' (its tools: ")
    prompted = await client("prompt", presa.url, "no_such_prompt")
    assert prompted.status == 2
    assert prompted.error().startswith(f"{presa.url} has no prompt 'no_such_prompt' (its prompts: ")


async def test_arguments_that_do_not_fit_the_schema(presa: ServeProcess, tmp_path: Path) -> None:
    """Checked before sending: the transcript holds the tools/list and nothing else."""
    record = tmp_path / "wire.jsonl"
    mistyped = await client(
        "call", presa.url, "slow_compute", "seconds=soon", "--transcript", str(record)
    )
    assert mistyped.status == 2
    assert mistyped.error() == "the arguments of slow_compute: seconds: expected number, got 'soon'"
    below = await client(
        "call", presa.url, "slow_compute", "seconds=-1", "--transcript", str(record)
    )
    assert below.status == 2
    assert "/seconds: -1 is less than the minimum of 0" in below.error()
    not_pairs = await client("call", presa.url, "greet", "name", "--transcript", str(record))
    assert not_pairs.error() == "the arguments of greet: 'name' is not key=value"
    not_object = await client("call", presa.url, "greet", "--args", "[1]")
    assert not_object.error() == "--args must be a JSON object, got '[1]'"
    methods = [json.loads(line)["request"]["body"]["method"] for line in record.open()]
    assert methods == ["tools/list"] * 3


async def test_json_that_could_not_be_sent_is_refused_in_one_short_line(
    presa: ServeProcess, tmp_path: Path
) -> None:
    """presa-defined (docs/client.md, Arguments): JSON given on the command line is read
    as the server reads JSON (RFC 8259 §6: no NaN or Infinity; nesting Python cannot
    decode is none), and refused before it is sent, in a line that quotes only the
    start of what was typed."""
    deep = "[" * 20_000 + "]" * 20_000
    file = tmp_path / "answers.json"
    file.write_text(f'{{"user_name": {deep}}}')
    elicit = ("call", presa.url, "test_input_required_result_elicitation")
    refused = {
        "the arguments of greet: name:= needs JSON, got '[[[[": (
            "call",
            presa.url,
            "greet",
            f"name:={deep}",
        ),
        "--args must be a JSON object, got '[[[[": ("call", presa.url, "greet", "--args", deep),
        "the params of tools/list must be a JSON object, got '[[[[": (
            "request",
            presa.url,
            "tools/list",
            deep,
        ),
        "--answer user_name: not JSON: '[[[[": (*elicit, "--answer", f"user_name={deep}"),
        f"{file} is not JSON: nested too deeply to decode": (*elicit, "--answers", str(file)),
        "the arguments of slow_compute: seconds: expected number, got 'NaN'": (
            "call",
            presa.url,
            "slow_compute",
            "seconds=NaN",
        ),
        'the params of tools/call must be a JSON object, got \'{"name": "greet"': (
            "request",
            presa.url,
            "tools/call",
            '{"name": "greet", "arguments": {"name": NaN}}',
        ),
    }
    for said, arguments in refused.items():
        ran = await client(*arguments)
        assert ran.status == 2, ran.stderr[-500:]
        assert ran.error().startswith(said), ran.error()[:200]
        assert len(ran.error()) < 200


async def test_malformed_answers(presa: ServeProcess, tmp_path: Path) -> None:
    tool = "test_input_required_result_elicitation"
    not_json = await client("call", presa.url, tool, "--answer", "user_name={nope")
    assert not_json.status == 2
    assert not_json.error() == "--answer user_name: not JSON: '{nope'"
    wrong_action = await client("call", presa.url, tool, "--answer", 'user_name={"action":"ok"}')
    assert wrong_action.status == 2
    assert "ElicitResult.action must be accept, decline or cancel" in wrong_action.error()
    wrong_content = await client(
        "call", presa.url, tool, "--answer", 'user_name={"action":"accept","content":{"name":1}}'
    )
    assert '/name: 1 is not of type "string"' in wrong_content.error()
    file = tmp_path / "answers.json"
    file.write_text("[]")
    bad_file = await client("call", presa.url, tool, "--answers", str(file))
    assert bad_file.error() == f"{file} must hold one object mapping each key to an answer object"


async def test_a_missing_answer_without_a_terminal(presa: ServeProcess) -> None:
    plain = await client("call", presa.url, "test_input_required_result_elicitation")
    assert plain.status == 2
    assert plain.error() == (
        "the server asks 'user_name' (elicitation/create 'What is your name?') and there is "
        "no terminal to ask: give --answer user_name=JSON"
    )
    in_a_task = await client("call", presa.url, "confirm_delete")
    assert in_a_task.status == 2
    assert "; the task waits: presa-trio task update" in in_a_task.error()


async def test_a_protocol_error_exits_3(presa: ServeProcess) -> None:
    ran = await client("task", "get", presa.url, "no-such-task")
    assert ran.status == 3
    assert ran.error().startswith("tasks/get: JSON-RPC error -32602: ")


async def test_usage_mistakes(tmp_path: Path) -> None:
    no_command = await client("list", "--stdio")
    assert no_command.status == 2
    assert "--stdio needs the server's command after --" in no_command.error()
    missing = await client("list", "--stdio", "--", str(tmp_path / "no-such-server"))
    assert missing.status == 2
    assert missing.error().startswith(f"cannot start {tmp_path / 'no-such-server'}")
    # Only what is missing is named: KEY=VALUE… may be left out.
    no_tool = await client("call", "http://127.0.0.1:9/mcp")
    assert no_tool.status == 2
    assert no_tool.error().startswith("the following arguments are required: TOOL (")
    no_ref = await client("complete", "http://127.0.0.1:9/mcp", "prompt")
    assert no_ref.error().startswith("the following arguments are required: REF, ARG=VALUE (")
    # basic/authorization §Protocol Requirements: stdio has no sign-in; no child is started.
    started = tmp_path / "started"
    for command in ("login", "logout"):
        signs_in = await client(command, "--stdio", "--", "touch", str(started))
        assert signs_in.status == 2
        assert signs_in.error() == f"{command} is for an http(s) URL, not --stdio"
    assert not started.exists()
    transcript = await client(
        "list", "http://127.0.0.1:9/mcp", "--transcript", str(tmp_path / "no" / "such.jsonl")
    )
    assert transcript.status == 2
    assert "cannot write the transcript" in transcript.error()


async def test_a_transcript_the_client_makes_is_readable_by_its_owner_alone(
    tmp_path: Path, closed_port_url: str
) -> None:
    """presa-defined (docs/client.md, Transcripts): the client's transcript holds the
    server's answers and results as the server's own does, so a file it makes is mode
    0600 whatever the umask, like the server's (client/elicitation §Statefulness)."""
    path = tmp_path / "t.jsonl"
    before = os.umask(0o022)
    try:
        ran = await client("list", closed_port_url, "--transcript", str(path))
    finally:
        os.umask(before)
    assert ran.status == 3
    assert os.stat(path).st_mode & 0o777 == 0o600


async def test_an_answer_for_a_key_the_server_does_not_ask(presa: ServeProcess) -> None:
    """presa-defined (docs/client.md, Answers): a misspelt ``--answer`` key is an error
    naming the keys asked, before anyone is asked in its place; one never asked by
    the end is named on stderr."""
    misspelt = await client(
        "call",
        presa.url,
        "test_input_required_result_elicitation",
        "--answer",
        'usernme={"action":"decline"}',
    )
    assert misspelt.status == 2
    assert misspelt.error() == "--answer usernme: the server asks for user_name, not usernme"
    unasked = await client(
        "call", presa.url, "test_simple_text", "--answer", 'extra={"action":"decline"}'
    )
    assert unasked.status == 0, unasked.stderr
    assert unasked.stderr == (
        "presa-trio: warning: --answer extra was not asked for (the server asked for nothing)\n"
    )
