"""URL-mode elicitation on the wire: consent to open a URL, on both paths.

A tool that needs what must not pass through the client (an API key) asks
the user to open a URL; the answer is consent, not completion, so the tool
looks in its own state (here :data:`vault`) for what happened out of band.
On a plain call the request goes out in an ``input_required`` round and the
retry answers it; in a task ``tasks/update`` does. Only a client declaring
``elicitation.url`` is asked.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from trio.testing import wait_all_tasks_blocked

from presa_trio.server import RequestContext, Server
from presa_trio.tasks import TASKS_EXTENSION, Policy, TasksExtension
from presa_trio.testing import McpClient, RequestFailed, connect
from presa_trio.wire.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
)
from presa_trio.wire.mrtr import InputRequired, UrlElicitation
from tests import wire_schema
from tests.expect import error_of

SET_KEY = "https://mcp.example.com/ui/set_api_key"
URL_MODE: dict[str, Any] = {"elicitation": {"url": {}}}
IN_A_TASK: dict[str, Any] = {**URL_MODE, "extensions": {TASKS_EXTENSION: {}}}
ASKED = {
    "method": "elicitation/create",
    "params": {"mode": "url", "message": "Set your API key", "url": SET_KEY},
}
#: The API keys set out of band, on the page at :data:`SET_KEY`.
vault: set[str] = set()


def build() -> Server:
    server = Server("url-elicitation", "1.0.0")
    tasks = TasksExtension()
    server.add_extension(tasks)

    @tasks.tool(Policy.OPTIONAL, needs=["elicitation.url"])
    async def report(ctx: RequestContext) -> str:
        """Fetches a report with the user's API key, sending them to set it first."""
        if "key" not in vault:
            answers = await ctx.ask({"key": UrlElicitation("Set your API key", SET_KEY)})
            action = answers.elicitation("key").action
            if action != "accept":
                return f"no key: {action}"
            if "key" not in vault:
                return "consented, the key is not set yet"
        return "the report"

    @tasks.tool(Policy.OPTIONAL)
    async def undeclared(ctx: RequestContext) -> str:
        """Asks for URL mode without saying so in needs=."""
        answers = await ctx.ask({"key": UrlElicitation("Set your API key", SET_KEY)})
        return answers.elicitation("key").action

    @server.tool(needs=["elicitation.url"])
    async def by_hand(ctx: RequestContext) -> str | InputRequired:
        """Asks with a returned round, and reads the answer from the retry."""
        answer = ctx.elicitation("key", mode="url")
        if answer is None:
            return InputRequired({"key": UrlElicitation("Set your API key", SET_KEY)})
        return answer.action

    @server.tool(needs=["elicitation.url"])
    async def bad_url(ctx: RequestContext) -> str:
        """Asks the user to open what is no URL."""
        await ctx.ask({"key": UrlElicitation("Set your API key", "/ui/set_api_key")})
        return "unreachable"

    return server


@pytest.fixture
async def client() -> AsyncIterator[McpClient]:
    vault.clear()
    async with connect(build()) as opened:
        yield opened


async def test_the_plain_path_asks_for_consent_and_the_tool_checks_its_own_state(
    client: McpClient,
) -> None:
    """Spec-mandated (client/elicitation §URL Mode Elicitation Requests: ``accept``
    is consent, not completion; the server decides on the retry from its own state;
    basic/patterns/mrtr §InputRequests): the request goes out in URL mode, and an
    accept before the key is set does not pass for one."""
    first = await client.call_tool("report", capabilities=URL_MODE)
    assert first["resultType"] == "input_required"
    assert first["inputRequests"] == {"key": ASKED}
    schema = wire_schema.ref(f"{wire_schema.CORE}#/$defs/InputRequiredResult")
    assert wire_schema.problems(first, schema) == []
    accepted = {"key": {"action": "accept"}}
    early = await client.call_tool("report", input_responses=accepted, capabilities=URL_MODE)
    assert early["content"] == [{"type": "text", "text": "consented, the key is not set yet"}]
    vault.add("key")
    done = await client.call_tool("report", input_responses=accepted, capabilities=URL_MODE)
    assert done["content"] == [{"type": "text", "text": "the report"}]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_decline_or_a_cancel_reaches_the_tool(client: McpClient, action: str) -> None:
    """Spec-mandated (client/elicitation §Response Actions: they apply to URL mode too;
    §Error Handling: servers MUST handle a decline or a cancel)."""
    done = await client.call_tool(
        "report", input_responses={"key": {"action": action}}, capabilities=URL_MODE
    )
    assert done["content"] == [{"type": "text", "text": f"no key: {action}"}]


@pytest.mark.parametrize("action", ["accept", "decline", "cancel"])
async def test_a_round_returned_by_hand_reads_its_answer_by_its_mode(
    client: McpClient, action: str
) -> None:
    """Spec-mandated (client/elicitation §Response Actions: for URL mode the content
    is omitted): ``ctx.elicitation(key, mode="url")`` reads an accept without content."""
    first = await client.call_tool("by_hand", capabilities=URL_MODE)
    assert first["inputRequests"] == {"key": ASKED}
    done = await client.call_tool(
        "by_hand", input_responses={"key": {"action": action}}, capabilities=URL_MODE
    )
    assert done["content"] == [{"type": "text", "text": action}]


@pytest.mark.parametrize("tool", ["report", "by_hand"])
async def test_an_accept_carrying_content_is_invalid_params(client: McpClient, tool: str) -> None:
    """Spec-mandated (client/elicitation §Response Actions: for URL mode the content
    field is omitted; schema.ts ``ElicitResult.content``: only for form mode;
    basic/patterns/mrtr §Error Handling; spec-notes §64)."""
    params = {
        "name": tool,
        "arguments": {},
        "inputResponses": {"key": {"action": "accept", "content": {"apiKey": "s3cret"}}},
    }
    response = await client.call("tools/call", params, capabilities=URL_MODE)
    error = error_of(response, 400, INVALID_PARAMS)
    assert error["message"] == (
        "inputResponses['key']: An accepted ElicitResult to a URL-mode request carries no content"
    )


@pytest.mark.parametrize(
    "declared",
    [{}, {"elicitation": {}}, {"elicitation": {"form": {}}}, {"sampling": {}}],
    ids=["none", "empty-is-form-only", "form-only", "no-elicitation"],
)
@pytest.mark.parametrize("as_task", [False, True], ids=["plain", "task"])
async def test_a_client_without_url_mode_is_refused_before_the_tool_runs(
    client: McpClient, declared: dict[str, Any], as_task: bool
) -> None:
    """Spec-mandated (client/elicitation §Capabilities: ``elicitation: {}`` is form
    mode only, and servers MUST NOT send a mode the client does not support;
    basic/patterns/mrtr §Server Requirements 7): ``needs=["elicitation.url"]`` is
    -32021 naming ``elicitation.url``, on a plain call and before any task."""
    capabilities = {**declared, "extensions": {TASKS_EXTENSION: {}}} if as_task else declared
    response = await client.call("tools/call", {"name": "report"}, capabilities=capabilities)
    error = error_of(response, 400, MISSING_REQUIRED_CLIENT_CAPABILITY)
    assert error["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}
    assert b"inputRequests" not in response.body


async def test_a_question_in_url_mode_is_checked_when_it_is_asked(client: McpClient) -> None:
    """Spec-mandated (client/elicitation §Capabilities; mrtr §Server Requirements 7):
    a tool that did not declare the need is refused at the question, -32021 naming
    ``elicitation.url``, and the request is never sent; URL mode alone is enough."""
    response = await client.call(
        "tools/call", {"name": "undeclared"}, capabilities={"elicitation": {"form": {}}}
    )
    error = error_of(response, 400, MISSING_REQUIRED_CLIENT_CAPABILITY)
    assert error == {
        "code": MISSING_REQUIRED_CLIENT_CAPABILITY,
        "message": "This request requires the client 'elicitation.url' capability",
        "data": {"requiredCapabilities": {"elicitation": {"url": {}}}},
    }
    assert b"inputRequests" not in response.body
    both: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
    asked = await client.call_tool("undeclared", capabilities=both)
    assert asked["inputRequests"] == {"key": ASKED}


async def test_in_a_task_a_question_in_url_mode_is_checked_when_it_is_asked(
    client: McpClient,
) -> None:
    """Spec-mandated (client/elicitation §Capabilities; mrtr §Server Requirements 7;
    SEP-2663 §Task Update Requests): the task never shows the request, and fails
    with the -32021 naming ``elicitation.url``."""
    form_only: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
    created = await client.call_tool("undeclared", capabilities=form_only)
    await wait_all_tasks_blocked()
    failed = await client.get_task(created["taskId"])
    assert failed["status"] == "failed"
    assert "inputRequests" not in failed
    assert failed["error"]["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}


async def test_a_url_that_is_no_url_fails_the_call_as_the_servers_bug(
    client: McpClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Spec-mandated (client/elicitation §URL Mode Elicitation Requests: the ``url``
    MUST contain a valid URL; server/tools §Error Handling): refused when it is
    built, -32603, one log line naming it; never sent."""
    with caplog.at_level(logging.ERROR):
        response = await client.call("tools/call", {"name": "bad_url"}, capabilities=URL_MODE)
    error_of(response, 500, INTERNAL_ERROR)
    assert b"inputRequests" not in response.body
    assert "elicitation/create: not a URL to open, '/ui/set_api_key'" in caplog.text


async def test_in_a_task_the_request_waits_on_the_task_and_tasks_update_answers_it(
    client: McpClient,
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests; client/elicitation §URL Mode
    Elicitation Requests): the task shows the URL-mode request while
    ``input_required``; an accept without content resumes the tool, which finds
    the key set out of band in the meantime."""
    created = await client.call_tool("report", capabilities=IN_A_TASK)
    task_id = created["taskId"]
    await wait_all_tasks_blocked()
    waiting = await client.get_task(task_id)
    assert (waiting["status"], waiting["inputRequests"]) == ("input_required", {"key": ASKED})
    vault.add("key")
    await client.update_task(task_id, {"key": {"action": "accept"}})
    await wait_all_tasks_blocked()
    done = await client.get_task(task_id)
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "the report"}]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_in_a_task_a_decline_or_a_cancel_reaches_the_tool(
    client: McpClient, action: str
) -> None:
    """Spec-mandated (client/elicitation §Response Actions; SEP-2663 §Task Update Requests)."""
    created = await client.call_tool("report", capabilities=IN_A_TASK)
    await wait_all_tasks_blocked()
    await client.update_task(created["taskId"], {"key": {"action": action}})
    await wait_all_tasks_blocked()
    done = await client.get_task(created["taskId"])
    assert done["result"]["content"] == [{"type": "text", "text": f"no key: {action}"}]


async def test_in_a_task_an_accept_carrying_content_is_refused_by_the_update(
    client: McpClient,
) -> None:
    """Spec-mandated (client/elicitation §Response Actions; basic/patterns/mrtr §Error
    Handling; spec-notes §29, §64): -32602 from ``tasks/update``, the key stays
    outstanding, and an answer without content then resumes the tool."""
    created = await client.call_tool("report", capabilities=IN_A_TASK)
    task_id = created["taskId"]
    await wait_all_tasks_blocked()
    with pytest.raises(RequestFailed) as refused:
        await client.update_task(task_id, {"key": {"action": "accept", "content": {}}})
    assert (refused.value.status, refused.value.code) == (400, INVALID_PARAMS)
    await wait_all_tasks_blocked()
    waiting = await client.get_task(task_id)
    assert (waiting["status"], list(waiting["inputRequests"])) == ("input_required", ["key"])
    await client.update_task(task_id, {"key": {"action": "accept"}})
    await wait_all_tasks_blocked()
    done = await client.get_task(task_id)
    assert done["result"]["content"] == [
        {"type": "text", "text": "consented, the key is not set yet"}
    ]
