"""The official Python SDK's ``Client`` (``mcp``) against presa over real Streamable HTTP.

tests/auth/test_python_sdk.py signs the SDK in and calls a tool; here the
SDK is used as its users use it, against the demo (or a small server of the
test's own) served by a real hypercorn: the revision it settles on, every
list and read, the multi round-trip callbacks (URL-mode elicitation among
them), progress, logs and a listen stream, errors as the SDK raises them, a
task driven through the SDK's extension API, a call it abandons, large and
non-ASCII values, and what its ``initialize`` handshake is told.

The SDK has no Tasks client of its own; :class:`Tasks` is one written with
its public extension API (``ClientExtension`` with a ``ResultClaim`` for
``resultType: "task"``), as a user of the SDK would write it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import pytest
import trio
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import (
    BlobResourceContents,
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    PromptReference,
    Request,
    RequestParams,
    Result,
    Root,
    TextContent,
    TextResourceContents,
)
from pydantic import ConfigDict, Field

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TasksExtension
from presa_trio.wire.errors import (
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
)
from presa_trio.wire.mrtr import UrlElicitation
from presa_trio.wire.tasks import TASKS_EXTENSION
from tests.e2e.harness import ServeApp, Served


def text_of(result: CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def answer_elicitation(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    """Fills every field the form asks for: ``true`` for a boolean, else a non-ASCII name."""
    schema = getattr(params, "requested_schema", {})
    fields = schema.get("properties", {})
    content: dict[str, str | int | float | bool | list[str] | None] = {
        key: True if field.get("type") == "boolean" else "Zoë" for key, field in fields.items()
    }
    return ElicitResult(action="accept", content=content)


async def answer_sampling(
    context: ClientRequestContext, params: CreateMessageRequestParams
) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="Bonjour"), model="test"
    )


async def answer_roots(context: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root.model_validate({"uri": "file:///tmp/project"})])


async def test_the_sdk_settles_on_2026_07_28_and_reads_every_list(served: Served) -> None:
    """Spec-mandated (versioning §Protocol Version Negotiation; discover; resources;
    prompts; completion): the SDK's default ``mode="auto"`` probes ``server/discover``
    and stays on 2026-07-28; it lists and reads resources (text, binary, a template's
    match), lists and gets prompts and asks for a completion, each answered."""
    async with Client(served.url) as client:
        assert client.protocol_version == "2026-07-28"
        assert client.server_info is not None
        assert client.server_info.name == "presa-trio"
        assert "test_simple_text" in {tool.name for tool in (await client.list_tools()).tools}
        listed = await client.list_resources()
        assert [r.uri for r in listed.resources] == ["test://static-text", "test://static-binary"]
        (text,) = (await client.read_resource("test://static-text")).contents
        (blob,) = (await client.read_resource("test://static-binary")).contents
        (data,) = (await client.read_resource("test://template/42/data")).contents
        templates = (await client.list_resource_templates()).resource_templates
        prompts = {prompt.name for prompt in (await client.list_prompts()).prompts}
        prompt = await client.get_prompt(
            "test_prompt_with_arguments", {"arg1": "ä", "arg2": "日本"}
        )
        reference = PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
        completion = await client.complete(reference, {"name": "arg1", "value": "a"})
    assert isinstance(text, TextResourceContents)
    assert text.text == "This is the content of the static text resource."
    assert isinstance(blob, BlobResourceContents)
    assert blob.mime_type == "image/png"
    assert isinstance(data, TextResourceContents)
    assert '"id":"42"' in data.text
    assert [t.uri_template for t in templates] == ["test://template/{id}/data"]
    assert "test_simple_prompt" in prompts
    assert isinstance(prompt.messages[0].content, TextContent)
    assert prompt.messages[0].content.text == "Prompt with arguments: arg1='ä', arg2='日本'"
    assert completion.completion.values == []


async def test_the_sdk_answers_every_kind_of_input_request(served: Served) -> None:
    """Spec-mandated (mrtr §Client Requirements; elicitation, sampling, roots): the
    SDK's callbacks answer the ``inputRequests`` of an ``input_required`` result, over
    one round and over two (the ``requestState`` echoed), for a tool and a prompt."""
    async with Client(
        served.url,
        elicitation_callback=answer_elicitation,
        sampling_callback=answer_sampling,
        list_roots_callback=answer_roots,
    ) as client:
        all_at_once = await client.call_tool("test_input_required_result_multiple_inputs")
        two_rounds = await client.call_tool("test_input_required_result_multi_round")
        prompt = await client.get_prompt("test_input_required_result_prompt")
    assert text_of(all_at_once) == "Bonjour Zoë; 1 root(s)."
    assert text_of(two_rounds) == "Zoë likes Zoë."
    assert isinstance(prompt.messages[0].content, TextContent)
    assert prompt.messages[0].content.text == "Use this context: Zoë"


async def test_progress_logs_and_a_listen_stream_reach_the_sdk(served: Served) -> None:
    """Spec-mandated (progress §Progress Flow; logging §Per-request log level;
    subscriptions §Listen): the SDK's progress callback sees 0, 50 and 100 of 100; with
    ``log_level="warning"`` its logging callback sees the warning alone; its listen
    stream is acknowledged and delivers a tools/list_changed."""
    logs: list[LoggingMessageNotificationParams] = []
    reported: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total, message))

    async with Client(served.url, logging_callback=on_log, log_level="warning") as client:
        await client.call_tool("test_tool_with_progress", progress_callback=on_progress)
        await client.call_tool("test_logging_tool")
        async with client.listen(tools_list_changed=True) as subscription:
            assert subscription.honored.tools_list_changed
            await client.call_tool("test_trigger_tool_change")
            with trio.fail_after(5):
                event = await anext(aiter(subscription))
    assert reported == [(0, 100, "0%"), (50, 100, "50%"), (100, 100, "100%")]
    assert [(log.level, log.data) for log in logs] == [("warning", "a warning for testing")]
    assert type(event).__name__ == "ToolsListChanged"


async def test_errors_reach_the_sdk_with_their_codes(served: Served) -> None:
    """Spec-mandated (tools §Error Handling; resources §Error Handling; prompts §Error
    Handling; basic/index §_meta): a tool's failure is an ``isError`` result; an unknown
    tool, resource or prompt, or a missing prompt argument, raises the SDK's ``MCPError``
    with -32602 (the resource's URI in ``data``); a task-only tool called by a client
    that did not declare Tasks raises -32021 naming the extension."""
    async with Client(served.url) as client:
        failed = await client.call_tool("test_error_handling")
        refusals = {}
        for name, call in [
            ("tool", client.call_tool("no_such_tool")),
            ("resource", client.read_resource("test://missing")),
            ("prompt", client.get_prompt("no_such_prompt")),
            ("argument", client.get_prompt("test_prompt_with_arguments")),
            ("tasks", client.call_tool("failing_job")),
        ]:
            with pytest.raises(MCPError) as refused:
                await call
            refusals[name] = refused.value.error
    assert failed.is_error
    assert {name: error.code for name, error in refusals.items()} == {
        "tool": INVALID_PARAMS,
        "resource": INVALID_PARAMS,
        "prompt": INVALID_PARAMS,
        "argument": INVALID_PARAMS,
        "tasks": MISSING_REQUIRED_CLIENT_CAPABILITY,
    }
    assert refusals["resource"].data == {"uri": "test://missing"}
    required: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}
    assert refusals["tasks"].data == {"requiredCapabilities": required}


class CreatedTask(Result):
    """SEP-2663's flat ``CreateTaskResult``, the fields this client reads."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field("task", alias="resultType")
    task_id: str = Field(alias="taskId")
    poll_interval_ms: int = Field(alias="pollIntervalMs")


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] | None = Field(None, alias="inputResponses")


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    name_param: ClassVar[str | None] = "taskId"


class UpdateTask(Request[TaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    name_param: ClassVar[str | None] = "taskId"


class AnyResult(Result):
    model_config = ConfigDict(extra="allow")


class Tasks(ClientExtension):
    """Declares Tasks and follows a task to its end: polls ``tasks/get``, and answers
    what the task asks through ``tasks/update`` with the client's own callbacks, as
    its multi round-trip driver answers an ``input_required`` result."""

    identifier = TASKS_EXTENSION

    def __init__(self) -> None:
        self.statuses: list[str] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.follow)]

    async def follow(self, created: CreatedTask, context: ClaimContext) -> CallToolResult:
        get = GetTask(params=TaskParams(taskId=created.task_id, inputResponses=None))
        while True:
            task = (await context.session.send_request(get, AnyResult)).model_dump(by_alias=True)
            self.statuses.append(task["status"])
            if task["status"] == "completed":
                return CallToolResult.model_validate(task["result"])
            if task["status"] == "input_required":
                answers = await self.answer(context, task["inputRequests"])
                update = TaskParams(taskId=created.task_id, inputResponses=answers)
                await context.session.send_request(UpdateTask(params=update), AnyResult)
            elif task["status"] != "working":
                raise AssertionError(f"the task ended {task['status']}: {task.get('error')}")
            await trio.sleep(created.poll_interval_ms / 1000)

    async def answer(self, context: ClaimContext, asked: dict[str, Any]) -> dict[str, Any]:
        """Each input request's answer, from the callback the SDK routes it to."""
        session = context.session
        requests = InputRequiredResult.model_validate(
            {"resultType": "input_required", "inputRequests": asked}
        ).input_requests
        answers = {}
        for key, request in (requests or {}).items():
            asking = ClientRequestContext(session=session, request_id=key, meta=None)
            answer = await session.dispatch_input_request(asking, request)
            assert not isinstance(answer, ErrorData), answer
            answers[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        return answers


async def test_the_sdk_runs_a_task_through_its_extension_api(served: Served) -> None:
    """Spec-mandated (SEP-2663 §Task Creation, §Task Polling, §Task Update Requests;
    SEP-2133): a client that declares Tasks through the SDK's extension API gets a
    ``CreateTaskResult`` it claims, and follows it: ``confirm_delete`` asks its question
    in ``inputRequests``, takes the answer from ``tasks/update`` and completes;
    ``failing_job`` completes with the tool's ``isError`` result."""
    tasks = Tasks()
    async with Client(served.url, extensions=[tasks], elicitation_callback=answer_elicitation) as c:
        with trio.fail_after(10):
            confirmed = await c.call_tool("confirm_delete", {"filename": "notes.txt"})
            failed = await c.call_tool("failing_job")
    assert text_of(confirmed) == "Delete confirmed: true"
    assert "input_required" in tasks.statuses
    assert failed.is_error
    assert text_of(failed) == "The task job failed"


SET_KEY = "https://mcp.example.com/ui/set_api_key"


def url_mode_server() -> Server:
    server = Server("url-mode", "1.0.0")
    tasks = TasksExtension()
    server.add_extension(tasks)

    @tasks.tool(Policy.OPTIONAL, needs=["elicitation.url"])
    async def report(ctx: RequestContext) -> str:
        """Sends the user to a page to set an API key; answers what they chose."""
        answers = await ctx.ask({"key": UrlElicitation("Set your API key", SET_KEY)})
        return answers.elicitation("key").action

    return server


async def test_the_sdk_consents_to_a_url_mode_elicitation_without_content(
    serve_app: ServeApp,
) -> None:
    """Spec-mandated (client/elicitation §Capabilities, §URL Mode Elicitation Requests,
    §Response Actions: for URL mode the content is omitted; SEP-2663 §Task Update
    Requests): the SDK declares ``elicitation: {form: {}, url: {}}`` with any elicitation
    callback, so a URL-mode request reaches that callback as ``ElicitRequestURLParams``;
    its ``accept``, which the SDK sends without content, completes the plain call's
    retry and, through ``tasks/update``, the task."""
    served, _ = await serve_app(McpApp.for_server(url_mode_server()))
    asked: list[ElicitRequestParams] = []

    async def consent(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept")

    async with Client(served.url, elicitation_callback=consent) as client:
        plain = await client.call_tool("report")
    async with Client(served.url, elicitation_callback=consent, extensions=[Tasks()]) as c:
        with trio.fail_after(10):
            in_a_task = await c.call_tool("report")
    assert (text_of(plain), text_of(in_a_task)) == ("accept", "accept")
    assert len(asked) == 2
    for params in asked:
        assert isinstance(params, ElicitRequestURLParams)
        assert (params.url, params.message) == (SET_KEY, "Set your API key")


#: Text with a character of each UTF-8 length, repeated to about 3 MB.
LARGE = "aé日🚀" * 300_000


def unicode_server(cancelled: trio.Event) -> Server:
    server = Server("unicode", "1.0.0")

    @server.tool()
    async def large(ctx: RequestContext) -> str:
        """Returns about 3 MB of text."""
        return LARGE

    @server.tool()
    async def echo(ctx: RequestContext, text: str) -> str:
        """Answers the text it is given."""
        return text

    @server.tool()
    async def wait(ctx: RequestContext) -> str:
        """Reports that it started, then waits until it is cancelled."""
        await ctx.report_progress(1)
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    @server.resource("file:///tmp/café 日本.txt", name="café", mime_type="text/plain")
    async def cafe(ctx: RequestContext) -> str:
        return "crème brûlée"

    @server.prompt("grüße")
    async def greetings(ctx: RequestContext, who: str) -> str:
        """Greets in German."""
        return f"Grüße, {who}!"

    return server


async def test_large_and_non_ascii_values_cross_the_sdk_intact(serve_app: ServeApp) -> None:
    """Spec-mandated (streamable-http §Value Encoding: a non-ASCII ``Mcp-Name`` is sent
    base64 and compared decoded; basic/index §JSON-RPC messages are UTF-8): about 3 MB
    of text of every UTF-8 length, a string with control and separator characters, a
    resource whose URI and a prompt whose name are not ASCII, all as they were."""
    served, _ = await serve_app(McpApp.for_server(unicode_server(trio.Event())))
    awkward = "tab\tnul\x00line\u2028end"
    async with Client(served.url) as client:
        large = await client.call_tool("large")
        echoed = await client.call_tool("echo", {"text": awkward})
        (contents,) = (await client.read_resource("file:///tmp/café 日本.txt")).contents
        prompt = await client.get_prompt("grüße", {"who": "Zoë"})
    assert text_of(large) == LARGE
    assert text_of(echoed) == awkward
    assert isinstance(contents, TextResourceContents)
    assert contents.text == "crème brûlée"
    assert isinstance(prompt.messages[0].content, TextContent)
    assert prompt.messages[0].content.text == "Grüße, Zoë!"


async def test_a_call_the_sdk_abandons_is_cancelled_on_the_server(serve_app: ServeApp) -> None:
    """Spec-mandated (streamable-http §Cancellation: closing the response stream MUST be
    treated as cancellation): the SDK's call, cancelled by its caller once the tool has
    started, closes the stream; the tool's handler is cancelled, and the same client
    goes on."""
    cancelled = trio.Event()
    served, _ = await serve_app(McpApp.for_server(unicode_server(cancelled)))
    async with Client(served.url) as client:
        with trio.CancelScope() as scope:

            async def started(progress: float, total: float | None, message: str | None) -> None:
                scope.cancel()

            await client.call_tool("wait", progress_callback=started)
        with trio.fail_after(5):
            await cancelled.wait()
        assert text_of(await client.call_tool("echo", {"text": "after"})) == "after"


async def test_the_sdks_initialize_handshake_is_told_the_supported_versions(
    served: Served,
) -> None:
    """Spec-mandated (versioning §Backward Compatibility with Initialization-Based
    Versions: a modern-only server SHOULD name its versions in any error to an
    initialize request; H-14): the SDK forced to ``mode="legacy"`` sends ``initialize``
    and raises the -32602 whose message names 2026-07-28, the version it could retry
    with."""

    def told_the_versions(error: MCPError) -> bool:
        return error.error.code == INVALID_PARAMS and error.error.message.endswith(
            "supported protocol versions: 2026-07-28"
        )

    refusal = pytest.RaisesExc(MCPError, check=told_the_versions)
    with pytest.RaisesGroup(refusal, flatten_subgroups=True):
        async with Client(served.url, mode="legacy"):
            pass
