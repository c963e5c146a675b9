"""Lone surrogates: a JSON escape every parser accepts and no UTF-8 text can hold.

``"\\ud800"`` parses to a Python string that cannot be encoded. Wherever such a
string lands (tool arguments, their keys, prompt arguments, input responses,
task ids), the answer is one the spec names, never HTTP 500 (E-23).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from trio.testing import wait_all_tasks_blocked

from presa_trio.demo import build_app, build_server
from presa_trio.http.transcript import TranscriptRecorder
from presa_trio.tasks import TASKS_EXTENSION
from presa_trio.testing import McpClient, headers_for, request, running
from presa_trio.wire.errors import INVALID_PARAMS
from tests.expect import assert_still_serving, error_of, result_of
from tests.stdio_lines import serve_lines

LONE = "\ud800"
DECLARED: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}


@pytest.mark.parametrize(
    ("arguments", "at"),
    [
        ({"name": LONE}, "/name"),
        ({"name": "x", f"k{LONE}": 1}, "(root)"),
        ({"name": "x", "address": {"city": f"a{LONE}b"}}, "/address/city"),
    ],
    ids=["value", "key", "nested"],
)
async def test_a_lone_surrogate_in_tool_arguments_is_an_input_validation_error(
    client: McpClient, arguments: dict[str, Any], at: str
) -> None:
    """presa-defined (E-23; server/tools §Error Handling, input validation errors are
    tool execution errors; RFC 8259 §8.2): the string is not valid Unicode, so the
    arguments are invalid, said with the path."""
    params = {"name": "json_schema_2020_12_tool", "arguments": arguments}
    result = result_of(await client.call("tools/call", params))
    assert result["isError"] is True
    assert f"- {at}: string holds a lone surrogate" in result["content"][0]["text"]
    await assert_still_serving(client)


async def test_a_lone_surrogate_in_task_arguments_creates_no_task(client: McpClient) -> None:
    """presa-defined (E-23, E-18): the task path refuses it as the plain path does,
    before any task (and before the argument digest and the input size check)."""
    params = {"name": "confirm_delete", "arguments": {"filename": LONE}}
    result = result_of(await client.call("tools/call", params, capabilities=DECLARED))
    assert (result["resultType"], result["isError"]) == ("complete", True)


async def test_a_lone_surrogate_in_prompt_arguments_gets_the_prompt(client: McpClient) -> None:
    """presa-defined (E-23): prompt arguments have no schema; the request's digest
    (which binds requestState) is still defined, and the answer carries the
    string back as the escape it came in as."""
    params = {"name": "test_prompt_with_arguments", "arguments": {"arg1": LONE, "arg2": "b"}}
    response = await client.call("prompts/get", params)
    text = result_of(response)["messages"][0]["content"]["text"]
    assert text == f"Prompt with arguments: arg1='{LONE}', arg2='b'"
    assert b"\\ud800" in response.body


async def test_lone_surrogates_in_input_responses_and_task_ids_are_defined(
    client: McpClient,
) -> None:
    """presa-defined (E-23; T-44, E-22): an answer under an unknown key with a lone
    surrogate is ignored; one under the outstanding key is -32602, as any other
    invalid ElicitResult."""
    created = result_of(
        await client.call("tools/call", {"name": "confirm_delete"}, capabilities=DECLARED)
    )
    await wait_all_tasks_blocked()
    task = {"taskId": created["taskId"]}

    async def update(answers: dict[str, Any]) -> Any:
        params = {**task, "inputResponses": answers}
        return await client.call("tasks/update", params, capabilities=DECLARED)

    result_of(await update({LONE: {"action": LONE}}))
    error_of(await update({"confirm-delete": {"action": LONE}}), 400, INVALID_PARAMS)
    got = result_of(await client.call("tasks/get", task, capabilities=DECLARED))
    assert got["status"] == "input_required"


async def test_a_lone_surrogate_task_id_is_an_unknown_task_on_stdio() -> None:
    """presa-defined (E-23; T-57: an unknown id is -32602): over stdio, where no
    header stops it first, the id's byte length is still defined."""
    message = request("tasks/get", {"taskId": LONE}, capabilities=DECLARED)
    (answer,) = await serve_lines(build_server(), [json.dumps(message).encode() + b"\n"])
    assert answer["error"]["code"] == INVALID_PARAMS


async def test_a_transcript_records_a_lone_surrogate_as_its_escape(tmp_path: Path) -> None:
    """presa-defined (E-23): the transcript line stays JSON and reads back the same."""
    target = tmp_path / "t.jsonl"
    app = build_app()
    message = request(
        "tools/call", {"name": "test_prompt", "arguments": {"x": LONE}}, request_id=LONE
    )
    async with running(app):
        recording = McpClient(app, asgi=TranscriptRecorder(app, target, lambda: 0.0))
        response = await recording.post(message, headers_for(message))
    assert response.status in (200, 400)
    (line,) = target.read_text().splitlines()
    assert json.loads(line)["request"]["body"]["id"] == LONE
