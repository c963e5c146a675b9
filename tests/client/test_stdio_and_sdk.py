"""The same commands over ``--stdio`` against ``presa-trio stdio``, and over HTTP
against a server built with the official Python SDK's ``MCPServer``."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from tests.client.helpers import client
from tests.e2e.serve_process import ServeProcess

STDIO = ["--", sys.executable, "-m", "presa_trio", "stdio", "--log-level", "WARNING"]
LEGACY_STDIO = str(Path(__file__).with_name("legacy_stdio_server.py"))


async def test_stdio_discover_list_and_call() -> None:
    discovered = await client("discover", "--stdio", "--json", *STDIO)
    assert json.loads(discovered.stdout)["supportedVersions"] == ["2026-07-28"], discovered.stderr
    listed = await client("list", "--stdio", "prompts", *STDIO)
    assert "test_simple_prompt()" in listed.stdout
    called = await client("call", "--stdio", "greet", "name=Ada", *STDIO)
    assert called.stdout == "Hello, Ada!\n"


async def test_stdio_progress_finds_its_request() -> None:
    ran = await client("call", "--stdio", "test_tool_with_progress", *STDIO)
    assert ran.status == 0, ran.stderr
    assert "progress 50/100" in ran.stderr


async def test_stdio_elicitation_multi_round_and_task(tmp_path: Path) -> None:
    answer = '{"action":"accept","content":{"name":"Ada"}}'
    asked = await client(
        "call",
        "--stdio",
        "test_input_required_result_elicitation",
        "--answer",
        f"user_name={answer}",
        *STDIO,
    )
    assert asked.stdout == "Hello, Ada!\n", asked.stderr
    confirm = '{"action":"accept","content":{"confirm":true}}'
    record = tmp_path / "stdio.jsonl"
    tasked = await client(
        "call",
        "--stdio",
        "confirm_delete",
        "--answer",
        f"confirm-delete={confirm}",
        "--transcript",
        str(record),
        *STDIO,
    )
    assert tasked.stdout == "Delete confirmed: true\n", tasked.stderr
    methods = [json.loads(line)["request"]["body"]["method"] for line in record.open()]
    assert {"tools/list", "tools/call", "tasks/update"} <= set(methods)
    rendered = await client("transcript", str(record))
    assert "`tasks/update`" in rendered.stdout


async def test_a_stdio_task_left_waiting_names_the_command_that_answers_it(
    tmp_path: Path,
) -> None:
    """presa-defined (docs/client.md, Answers): the line that ends a call over stdio
    with no answer to give says how to answer the task later, and that command,
    run as written (its ``…`` the answer), reaches the same server and answers."""
    server = ["--", sys.executable, "-m", "presa_trio", "stdio", "--log-level", "WARNING"]
    server += ["--store", f"sqlite:///{tmp_path / 'tasks.db'}"]
    waiting = await client("call", "--stdio", "confirm_delete", *server)
    assert waiting.status == 2
    later = waiting.error().split("; the task waits: ")[1]
    answer = '{"action":"accept","content":{"confirm":true}}'
    program, *words = shlex.split(later.replace("…", shlex.quote(f"confirm-delete={answer}")))
    assert program == "presa-trio"
    answered = await client(*words)
    assert answered.status == 0, answered.stderr
    assert "answered confirm-delete" in answered.stderr


async def test_stdio_read_and_prompt() -> None:
    read = await client("read", "--stdio", "test://static-text", *STDIO)
    assert read.stdout == "This is the content of the static text resource.\n"
    prompt = await client("prompt", "--stdio", "test_simple_prompt", *STDIO)
    assert prompt.stdout == "user: This is a simple prompt for testing.\n"


async def test_a_stdio_command_that_is_not_mcp() -> None:
    ran = await client("list", "--stdio", "--", sys.executable, "-c", "print('hello')")
    assert ran.status == 3
    assert "wrote a line that is no MCP response or notification: hello" in ran.error()


async def test_a_stdio_command_with_a_control_character_is_named_on_one_line() -> None:
    """presa-defined (docs/client.md, For scripts: every failure is one line): the
    command is named as a shell reads it back, an argument with a newline or another
    control character as ``$'…'`` with the character escaped."""
    command = ["/nonexistent/presa-trio server", "two\nlines", "tab\there\x1b"]
    ran = await client("list", "--stdio", "--", *command)
    assert ran.status == 2
    assert ran.error() == (
        "cannot start '/nonexistent/presa-trio server' $'two\\nlines' $'tab\\there\\x1b': "
        "No such file or directory"
    )


async def test_the_sdk_server_lists_and_calls_with_typed_arguments(sdk: ServeProcess) -> None:
    discovered = await client("discover", sdk.url)
    assert "server: sdk-fixture 2.3.0" in discovered.stdout, discovered.stderr
    listed = json.loads((await client("list", sdk.url, "--json")).stdout)
    assert {tool["name"] for tool in listed["tools"]} == {"add", "greet"}
    resources = await client("list", sdk.url, "resources")
    assert resources.stdout.startswith("note://today"), resources.stderr
    added = await client("call", sdk.url, "add", "a=2", "b=40", "--json")
    assert added.status == 0, added.stderr
    assert json.loads(added.stdout)["content"] == [{"type": "text", "text": "42"}]
    mistyped = await client("call", sdk.url, "add", "a=two", "b=1")
    assert mistyped.error() == "the arguments of add: a: expected integer, got 'two'"


async def test_the_sdk_server_multi_round_trip_answered_from_answer(sdk: ServeProcess) -> None:
    answer = '{"action":"accept","content":{"name":"Ada"}}'
    ran = await client("call", sdk.url, "greet", "--answer", f"who={answer}")
    assert ran.status == 0, ran.stderr
    assert ran.stdout.splitlines()[0] == "Hello, Ada!"


async def test_the_sdk_server_read_and_prompt(sdk: ServeProcess) -> None:
    read = await client("read", sdk.url, "note://today")
    assert read.stdout == "Water the plants.\n", read.stderr
    prompt = await client("prompt", sdk.url, "haiku", "topic=rain")
    assert prompt.stdout.endswith("user: Write a haiku about rain.\n"), prompt.stderr


async def test_a_stdio_server_of_the_initialize_era_is_found_before_anything_runs() -> None:
    """Spec-mandated (versioning §Compatibility Matrix, Modern client and Legacy server:
    on stdio, clients SHOULD send server/discover first to fail deterministically, then
    surface an actionable error; basic/transports/stdio §Backward Compatibility: any
    error other than a recognized modern one, whatever its code, means legacy): a
    legacy server that would serve ``tools/call`` without the handshake never gets it;
    the client says which version the server speaks, exit 3."""
    for code in ("-32601", "-32602", "-32000"):
        server = ["--", sys.executable, LEGACY_STDIO, code]
        ran = await client("call", "--stdio", "delete_all", *server)
        assert ran.status == 3, (code, ran.stderr)
        assert "ran delete_all" not in ran.stderr, code
        assert ran.error() == (
            f"{sys.executable} {LEGACY_STDIO} {code} speaks MCP 2025-11-25 (the initialize "
            "handshake), not 2026-07-28, the only version this client speaks"
        ), code
