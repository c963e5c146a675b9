"""``presa_trio.testing`` used exactly as a user would, on a server of their own.

presa-defined: this file imports only the public API (``presa_trio.server``,
``presa_trio.tasks``, ``presa_trio.testing``, ``presa_trio.wire``) and nothing
from ``tests``, so it shows what a user's own test file looks like.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

import presa_trio.testing
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TasksExtension, ask
from presa_trio.testing import (
    TASKS_CAPABILITIES,
    NoAnswer,
    RequestFailed,
    accept,
    connect,
    consent,
    decline,
    header_value,
    meta,
    open_client,
    roots,
    sampled,
)
from presa_trio.wire.errors import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from presa_trio.wire.models import TextContent
from presa_trio.wire.mrtr import Elicitation, InputRequired, ListRoots, Sampling, UrlElicitation

NAME = {"type": "object", "properties": {"name": {"type": "string"}}}
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def my_server() -> Server:
    """A small server as a user writes one: a plain tool, an asking tool, a task tool."""
    server = Server("mine", "1.0.0")
    tasks = TasksExtension()
    server.add_extension(tasks)

    @server.tool(description="Counts to three, reporting progress")
    async def count(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        for step in (1, 2, 3):
            await ctx.report_progress(step, total=3)
        return "three"

    @server.tool(description="Greets whoever the user names")
    async def greet(ctx: RequestContext, arguments: dict[str, Any]) -> str | InputRequired:
        answer = ctx.elicitation("who")
        if answer is None:
            return InputRequired({"who": Elicitation("Whom shall I greet?", NAME)})
        assert answer.content is not None
        return f"Hello, {answer.content['name']}!"

    @tasks.tool(Policy.OPTIONAL, description="Asks before deleting")
    async def delete(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        answers = await ask(ctx, {"ok": Elicitation("Delete it?", CONFIRM)})
        return "deleted" if answers.elicitation("ok").action == "accept" else "kept"

    @server.tool(description="Adds a tool to the server")
    async def grow(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        ctx.server.notify_tools_list_changed()
        return "grown"

    return server


async def test_a_plain_call_returns_the_result_and_its_progress_notifications() -> None:
    """presa-defined: ``send_request`` keeps what the tool sent before its result."""
    async with connect(my_server()) as client:
        params = {"name": "count", "_meta": meta(progressToken="p")}
        reply = await client.send_request("tools/call", params)
    assert reply.result["content"] == [{"type": "text", "text": "three"}]
    progress = [n["params"]["progress"] for n in reply.notifications]
    assert progress == [1, 2, 3]


async def test_a_multi_round_trip_call_is_answered_by_calling_again() -> None:
    """Spec-mandated (basic/patterns/mrtr): the retry carries ``inputResponses``."""
    async with connect(my_server()) as client:
        first = await client.call_tool("greet")
        assert first["resultType"] == "input_required"
        assert first["inputRequests"]["who"]["method"] == "elicitation/create"
        who = {"action": "accept", "content": {"name": "Ada"}}
        done = await client.call_tool("greet", input_responses={"who": who})
    assert done["content"] == [{"type": "text", "text": "Hello, Ada!"}]


async def test_an_error_answer_raises_request_failed_with_its_code() -> None:
    """Spec-mandated (server/tools: an unknown tool is -32602)."""
    async with connect(my_server()) as client:
        with pytest.raises(RequestFailed) as failed:
            await client.call_tool("nobody")
    assert failed.value.code == INVALID_PARAMS


async def test_a_listen_stream_delivers_list_changed_notifications() -> None:
    """Spec-mandated (basic/patterns/subscriptions): acknowledged, then the change."""
    async with connect(my_server()) as client, client.listen({"toolsListChanged": True}) as stream:
        acknowledged = await stream.next_message()
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
        assert await client.call_tool("grow")
        changed = await stream.next_message()
    assert changed["method"] == "notifications/tools/list_changed"


async def test_a_task_asks_is_answered_and_completes() -> None:
    """Spec-mandated (SEP-2663 §Task Creation, §Task Update Requests, §Task Status
    Notifications): a declaring call makes a task; the client answers its question
    and hears it complete."""
    async with connect(my_server()) as client:
        created = await client.call_tool("delete", capabilities=TASKS_CAPABILITIES)
        assert created["resultType"] == "task"
        task_id = created["taskId"]
        with trio.fail_after(5):
            while (task := await client.get_task(task_id))["status"] != "input_required":
                await wait_all_tasks_blocked()
        assert set(task["inputRequests"]) == {"ok"}
        async with client.listen({"taskIds": [task_id]}, capabilities=TASKS_CAPABILITIES) as stream:
            await stream.next_message()  # acknowledged
            await client.update_task(task_id, {"ok": {"action": "accept", "content": {"ok": True}}})
            while (note := await stream.next_message())["params"]["status"] != "completed":
                pass
    assert note["params"]["result"]["content"] == [{"type": "text", "text": "deleted"}]


async def test_a_cancelled_task_is_cancelled_at_once() -> None:
    """Spec-mandated (SEP-2663 §Task Cancellation; presa writes ``cancelled`` at once)."""
    async with connect(my_server()) as client:
        task_id = (await client.call_tool("delete", capabilities=TASKS_CAPABILITIES))["taskId"]
        await client.cancel_task(task_id)
        assert (await client.get_task(task_id))["status"] == "cancelled"


async def test_the_tasks_methods_need_the_declaration() -> None:
    """Spec-mandated (SEP-2663 §Capability Negotiation): a request that does not
    declare Tasks is refused by ``tasks/get`` with -32021."""
    async with connect(my_server()) as client:
        with pytest.raises(RequestFailed) as failed:
            await client.send_request("tasks/get", {"taskId": "x"})
    assert failed.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY


async def test_the_usage_example_of_the_module_docstring_runs() -> None:
    """presa-defined: the example a user reads first is run as written."""
    doc = presa_trio.testing.__doc__
    assert doc is not None
    example = textwrap.dedent(doc[doc.index("::\n") + 3 : doc.index("What else it does")])
    namespace: dict[str, Any] = {}
    exec(compile(example, "presa_trio.testing example", "exec"), namespace)
    await namespace["test_greet"]()


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ],
)
def test_header_values_are_written_as_the_spec_examples(value: str, written: str) -> None:
    """Spec-mandated (streamable-http §Value Encoding, the table of examples)."""
    assert header_value(value) == written


async def test_a_tool_with_mirrored_arguments_is_called_with_its_headers() -> None:
    """Spec-mandated (streamable-http §Custom Headers from Tool Parameters, §Client
    Behavior): the client adds ``Mcp-Param-*`` for the marked arguments, encoded."""
    server = Server("headers", "1.0.0")
    schema = {"type": "object", "properties": {"city": {"type": "string", "x-mcp-header": "City"}}}

    @server.tool(description="Echoes the city", input_schema=schema)
    async def where(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return str(arguments["city"])

    async with connect(server) as client:
        result = await client.call_tool("where", {"city": "Zürich"})
    assert result["content"] == [{"type": "text", "text": "Zürich"}]


# --- the typed client ------------------------------------------------------------


def typed_server() -> Server:
    """A typed server as a user writes one: a plain tool, an asking one, a task tool."""
    server = Server("typed", "1.0.0")
    tasks = TasksExtension()
    server.add_extension(tasks)

    @server.tool()
    async def add(ctx: RequestContext, a: int, b: int = 1) -> int:
        """Adds two numbers."""
        return a + b

    @server.tool(needs=["elicitation", "sampling", "roots"])
    async def survey(ctx: RequestContext) -> str:
        """Asks three kinds of question, one round each."""
        name = await ask(ctx, {"name": Elicitation("Name?", NAME)})
        fact = await ask(ctx, {"fact": Sampling("A fact?", max_tokens=5)})
        where = await ask(ctx, {"where": ListRoots()})
        content = name.elicitation("name").content or {}
        uris = [root["uri"] for root in where.roots("where")]
        return f"{content.get('name')}: {fact.sampling('fact').text} {uris}"

    @tasks.tool(Policy.REQUIRED, needs=["elicitation"])
    async def slow_delete(ctx: RequestContext, path: str) -> str:
        """Reports, asks, then works."""
        await ctx.set_status_message(f"looking at {path}")
        answers = await ask(ctx, {"ok": Elicitation(f"Delete {path}?", CONFIRM)})
        if answers.elicitation("ok").action != "accept":
            return "kept"
        await trio.sleep(3600)  # the long work, until cancelled
        return "deleted"

    return server


async def test_the_typed_client_returns_typed_results() -> None:
    """presa-defined (docs/api.md, testing): a ToolResult with its text and content."""
    async with open_client(typed_server()) as client:
        result = await client.call_tool("add", {"a": 2})
        tools = await client.list_tools()
    assert (result.text, result.is_error, result.structured) == ("3", False, None)
    assert result.content == [TextContent("3")]
    assert [tool.name for tool in tools] == ["add", "survey", "slow_delete"]


async def test_the_typed_client_answers_every_round_from_a_script_or_a_function() -> None:
    """Spec-mandated (basic/patterns/mrtr §Basic Workflow): each round is answered
    and retried with its requestState, by a scripted list or an async function."""
    script = [accept({"name": "Ada"}), sampled("Sun."), roots("file:///w")]
    asked: list[str] = []

    async def answer(key: str, request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request["method"])
        return script[len(asked) - 1]

    async with open_client(typed_server(), answer=script) as client:
        scripted = await client.call_tool("survey")
        by_function = await client.call_tool("survey", answer=answer)
        with pytest.raises(NoAnswer, match="ran out"):
            await client.call_tool("survey", answer=script[:1])
    assert scripted.text == by_function.text == "Ada: Sun. ['file:///w']"
    assert asked == ["elicitation/create", "sampling/createMessage", "roots/list"]


def url_server() -> Server:
    """A tool that sends the user to a page to set an API key."""
    server = Server("url", "1.0.0")

    @server.tool(needs=["elicitation.url"])
    async def set_key(ctx: RequestContext) -> str:
        """Asks the user to set their API key on the server's page; says what they answered."""
        page = UrlElicitation("Set your API key", "https://mcp.example.com/set_key")
        answers = await ctx.ask({"key": page})
        return answers.elicitation("key").action

    return server


async def test_consent_answers_a_url_mode_elicitation() -> None:
    """Spec-mandated (client/elicitation §Response Actions: a URL-mode accept has no
    content; §Capabilities: ``elicitation: {}`` is form mode only): ``consent()``
    answers it, for a client that declares URL mode; ``accept()`` carries content and
    is refused."""
    url_mode: dict[str, Any] = {"elicitation": {"url": {}}}
    async with open_client(url_server(), capabilities=url_mode) as client:
        with pytest.raises(RequestFailed) as refused:
            await client.call_tool("set_key", answer=[accept()])
        declined = await client.call_tool("set_key", answer=[decline()])
        consented = await client.call_tool("set_key", answer=[consent()])
    assert refused.value.code == INVALID_PARAMS
    assert (declined.text, consented.text) == ("decline", "accept")
    async with open_client(url_server()) as client:
        with pytest.raises(RequestFailed) as form_only:
            await client.call_tool("set_key", answer=[consent()])
    assert form_only.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY


async def test_the_task_helpers_wait_answer_and_cancel() -> None:
    """SEP-2663 §Task Polling, §Task Update Requests, §Task Cancellation (T-40, T-46):
    wait for a status, answer, read the result, cancel."""
    async with open_client(typed_server()) as client:
        declined = await client.start_task("slow_delete", {"path": "a"}, answer=[decline()])
        kept = await declined.result()
        task = await client.start_task("slow_delete", {"path": "b"})
        parked = await task.wait_for("input_required")
        await task.respond({"ok": accept()})
        working = await task.wait_for("working")
        cancelled = await task.cancel()
    assert kept.text == "kept"
    assert (parked.status, list(parked.input_requests)) == ("input_required", ["ok"])
    assert working.input_requests == {}
    assert (cancelled.status, cancelled.result) == ("cancelled", None)
