"""What every command takes: ``--log-level``, ``-v``, ``--transcript -``, ``--json`` on
failure; and ``request``, any method sent as it is."""

from __future__ import annotations

import json
from pathlib import Path

from tests.client.helpers import client, client_environment, shown_on_terminal
from tests.e2e.serve_process import REPOSITORY, ServeProcess


async def test_log_level_asks_each_request_for_its_logs(
    typed: ServeProcess, tmp_path: Path
) -> None:
    """Spec-mandated (server/utilities/logging §Per-request log level): ``logLevel`` in the
    request's ``_meta``, and the logs at or above it on stderr; none asked, none sent."""
    record = tmp_path / "wire.jsonl"
    ran = await client(
        "call", typed.url, "chatty", "--log-level", "INFO", "--transcript", str(record)
    )
    assert ran.status == 0, ran.stderr
    assert ran.stdout == "done\n"
    assert ran.stderr.splitlines() == [
        "log info chatty: started",
        'log error chatty: {"failed": "nothing really"}',
    ]
    metas = [json.loads(line)["request"]["body"]["params"]["_meta"] for line in record.open()]
    assert [meta["io.modelcontextprotocol/logLevel"] for meta in metas] == ["info", "info"]
    quiet = await client("call", typed.url, "chatty")
    assert (quiet.stdout, quiet.stderr) == ("done\n", "")
    wrong = await client("call", typed.url, "chatty", "--log-level", "loud")
    assert wrong.status == 2
    assert "'loud' is not one of debug, info, notice" in wrong.error()


async def test_log_lines_are_coloured_by_level_on_a_terminal(typed: ServeProcess) -> None:
    """presa-defined (docs/client.md): ANSI colours on a terminal; none with NO_COLOR."""
    command = ("call", typed.url, "chatty", "--log-level", "debug")
    coloured = await shown_on_terminal(*command, env=client_environment())
    assert "\x1b[2mlog debug chatty: a detail\x1b[0m" in coloured
    assert "log info chatty: started\r\n" in coloured
    assert '\x1b[31mlog error chatty: {"failed": "nothing really"}\x1b[0m' in coloured
    plain = await shown_on_terminal(*command, env={**client_environment(), "NO_COLOR": "1"})
    assert "\x1b[" not in plain
    assert "log debug chatty: a detail" in plain


async def test_verbose_shows_each_message_as_it_goes(typed: ServeProcess) -> None:
    """presa-defined (docs/client.md): ``-v``, each request and response on stderr, in order."""
    ran = await client("call", typed.url, "greet", "name=Ada", "-v")
    assert ran.status == 0, ran.stderr
    assert ran.stdout == "Hello, Ada!\n"
    lines = ran.stderr.splitlines()
    assert [line[:2] for line in lines] == ["→ ", "← ", "→ ", "← "]
    messages = [json.loads(line[2:]) for line in lines]
    assert [m.get("method") for m in messages] == ["tools/list", None, "tools/call", None]
    assert [m["id"] for m in messages] == [1, 1, 2, 2]
    assert messages[3]["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]


async def test_transcript_dash_is_stdout(typed: ServeProcess) -> None:
    """presa-defined: ``--transcript -`` writes the records on stdout, no file named ``-``."""
    ran = await client("call", typed.url, "greet", "name=Ada", "--transcript", "-")
    assert ran.status == 0, ran.stderr
    *records, result = ran.stdout.splitlines()
    assert result == "Hello, Ada!"
    methods = [json.loads(record)["request"]["body"]["method"] for record in records]
    assert methods == ["tools/list", "tools/call"]
    assert not (REPOSITORY / "-").exists()


async def test_request_sends_any_method_as_it_is(typed: ServeProcess, tmp_path: Path) -> None:
    """presa-defined (docs/client.md): ``request METHOD JSON``, with the mirrored headers of
    the method table (streamable-http §Standard Request Headers) and the client's
    ``_meta`` under the one given; a JSON-RPC error is exit 3."""
    record = tmp_path / "wire.jsonl"
    params = '{"name": "review", "arguments": {"language": "perl"}, "_meta": {"trace": "x"}}'
    ran = await client("request", typed.url, "prompts/get", params, "--transcript", str(record))
    assert ran.status == 0, ran.stderr
    assert json.loads(ran.stdout)["messages"][0]["content"]["text"].startswith("Review this perl")
    (exchange,) = [json.loads(line) for line in record.open()]
    assert exchange["request"]["headers"]["mcp-name"] == "review"
    meta = exchange["request"]["body"]["params"]["_meta"]
    assert meta["trace"] == "x"
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    unknown = await client("request", typed.url, "no/such/method")
    assert unknown.status == 3
    assert unknown.error().startswith("no/such/method: JSON-RPC error -32601: ")
    not_object = await client("request", typed.url, "tools/list", "[1]")
    assert not_object.status == 2
    assert not_object.error() == "the params of tools/list must be a JSON object, got '[1]'"


async def test_a_failure_under_json_is_one_json_document(typed: ServeProcess) -> None:
    """presa-defined (docs/client.md, For scripts): with ``--json`` stdout holds exactly one
    JSON document, a failure's too: its line, its exit status, the server's error."""
    for arguments, status in (
        (["call", typed.url, "nope", "--json"], 2),
        (["request", typed.url, "no/such/method", "--json"], 3),
        (["describe", "--json"], 2),  # argparse's own refusal: no URL
    ):
        ran = await client(*arguments)
        assert ran.status == status
        document = json.loads(ran.stdout)["error"]
        assert document["exitCode"] == status
        assert document["message"] == ran.error()
        if status == 3:
            assert document["jsonrpc"]["code"] == -32601
