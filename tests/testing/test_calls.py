"""Every call of the typed testing client, on the wire of a server written as a user writes one.

presa-defined unless a test says otherwise: this file imports only the
public API (``presa_trio.server``, ``presa_trio.tasks``,
``presa_trio.testing``, ``presa_trio.wire``), and each test checks what the
client returns against what the server was written to send.
"""

from __future__ import annotations

import pytest
import trio
from trio.testing import MockClock, wait_all_tasks_blocked

from presa_trio.server import RequestContext, Server
from presa_trio.tasks import Policy, TaskEventLog, TasksExtension, ask
from presa_trio.testing import RequestFailed, accept, connect, meta, open_client, request
from presa_trio.testing.answers import MAX_ROUNDS
from presa_trio.testing.streams import WAIT
from presa_trio.wire.errors import INVALID_PARAMS, METHOD_NOT_FOUND
from presa_trio.wire.models import (
    BlobResourceContents,
    Completion,
    GetPromptResult,
    ImageContent,
    JSONObject,
    LogMessage,
    PromptMessage,
    Resource,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
)
from presa_trio.wire.mrtr import Elicitation, InputRequired
from presa_trio.wire.tasks import STATUS_EVENT

CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def notes_server(*, task_events: bool = False) -> Server:
    """Tools that log and announce, resources (one asks), a template, a prompt, a task."""
    server = Server("notes", "1.0.0")
    tasks = server.add_extension(TasksExtension())
    if task_events:
        tasks.enable_events(TaskEventLog())

    @server.tool()
    async def tidy(ctx: RequestContext, times: int = 1) -> str:
        """Logs at three levels, then answers."""
        await ctx.log("debug", {"times": times})
        await ctx.log("info", "tidying", logger="notes")
        await ctx.log("warning", "nothing to tidy")
        await ctx.report_progress(1, total=1)
        return "tidy"

    @server.tool()
    async def picture(ctx: RequestContext) -> list[TextContent | ImageContent]:
        """Answers a text block and an image."""
        return [TextContent("a dot"), ImageContent("iVBORw0KGgo=", "image/png")]

    @server.tool()
    async def touch(ctx: RequestContext, uri: str) -> str:
        """Announces that another note changed, then that ``uri`` did."""
        ctx.server.notify_resource_updated("notes://elsewhere")
        ctx.server.notify_resource_updated(uri)
        return "touched"

    @server.resource("notes://today", mime_type="text/plain")
    async def today(ctx: RequestContext) -> str:
        """Today's notes."""
        return "Nothing planned."

    @server.resource("notes://dot.png", mime_type="image/png")
    async def dot(ctx: RequestContext) -> bytes:
        """A one-pixel picture."""
        return b"\x89PNG"

    @server.resource("notes://secret")
    async def secret(ctx: RequestContext) -> str | InputRequired:
        """Asks before it is read."""
        answer = ctx.elicitation("ok")
        if answer is None:
            return InputRequired({"ok": Elicitation("Show the secret?", CONFIRM)})
        return "shown" if answer.action == "accept" else "hidden"

    @server.resource_template("notes://day/{day}", name="day", description="A day's notes.")
    async def day(ctx: RequestContext, variables: dict[str, str]) -> str:
        return f"Notes of {variables['day']}."

    @server.prompt()
    async def summarise(ctx: RequestContext, text: str, tone: str = "plain") -> str:
        """Asks the model to summarise a text."""
        return f"Summarise this, {tone}: {text}"

    @server.completion("ref/prompt", "summarise")
    async def tones(
        ctx: RequestContext, argument: str, value: str, chosen: dict[str, str]
    ) -> Completion:
        names = [tone for tone in ("plain", "playful", "formal") if tone.startswith(value)]
        return Completion(names, total=len(names), has_more=False)

    @server.completion("ref/resource", "notes://day/{day}")
    async def days(
        ctx: RequestContext, argument: str, value: str, chosen: dict[str, str]
    ) -> Completion:
        return Completion([f"{value}-{chosen.get('year', 'any')}"])

    @tasks.tool(Policy.REQUIRED, needs=["elicitation"])
    async def archive(ctx: RequestContext, path: str) -> str:
        """Reports two steps, asks, then archives."""
        await ctx.emit("com.example.step", {"n": 1})
        answers = await ask(ctx, {"ok": Elicitation(f"Archive {path}?", CONFIRM)})
        await ctx.emit("com.example.step", {"n": 2})
        return "archived" if answers.elicitation("ok").action == "accept" else "kept"

    return server


async def test_a_stream_the_test_reads_late_is_whole_however_far_the_server_ran_ahead() -> None:
    """A response the test reads only once the handler has sent a thousand chunks and
    more has every one of them, and the handler never fails for being read late."""
    server = Server("chatty", "1.0.0")

    @server.tool(description="Reports progress many times, then answers.")
    async def chatty(ctx: RequestContext) -> str:
        for step in range(1, 1201):
            await ctx.report_progress(step)
        return "done"

    message = request("tools/call", {"name": "chatty", "_meta": meta(progressToken="p")})
    async with connect(server) as client, client.stream(message) as opened:
        await wait_all_tasks_blocked()  # the handler runs to its end; nothing read yet
        response = await opened.read_to_end()
    assert response.body.count(b'"notifications/progress"') == 1200
    assert b'"text":"done"' in response.body


async def test_the_list_calls_return_the_wire_models() -> None:
    """Spec-mandated (server/tools §Listing Tools, server/resources §Listing Resources,
    §Resource Templates, server/prompts §Listing Prompts): each list, typed."""
    async with open_client(notes_server()) as client:
        tools = await client.list_tools()
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
        prompts = await client.list_prompts()
    assert all(isinstance(tool, Tool) for tool in tools)
    assert [tool.name for tool in tools] == ["tidy", "picture", "touch", "archive"]
    assert tools[0].input_schema["properties"]["times"] == {"type": "integer", "default": 1}
    assert resources[0] == Resource(
        "notes://today", "today", description="Today's notes.", mime_type="text/plain"
    )
    assert templates == [ResourceTemplate("notes://day/{day}", "day", description="A day's notes.")]
    assert [(p.name, [a.name for a in p.arguments or ()]) for p in prompts] == [
        ("summarise", ["text", "tone"])
    ]


async def test_a_tool_result_is_typed_content_with_the_log_messages_sent_before_it() -> None:
    """Spec-mandated (server/utilities/logging §Per-request log level, §Log Message
    Notifications): the client asks for ``debug`` and up unless told a level, and
    records each message; with no level asked, the tool sends none."""
    async with open_client(notes_server()) as client:
        logged = await client.call_tool("tidy", {"times": 2})
        picture = await client.call_tool("picture")
    async with open_client(notes_server(), log_level="info") as client:
        from_info = await client.call_tool("tidy")
    async with open_client(notes_server(), log_level=None) as client:
        silent = await client.call_tool("tidy")
    assert logged.content == [TextContent("tidy")]
    assert logged.logs == [
        LogMessage("debug", {"times": 2}),
        LogMessage("info", "tidying", "notes"),
        LogMessage("warning", "nothing to tidy"),
    ]
    assert [log.level for log in from_info.logs] == ["info", "warning"]
    assert silent.logs == []
    assert picture.content == [TextContent("a dot"), ImageContent("iVBORw0KGgo=", "image/png")]
    assert picture.text == "a dot"


async def test_any_request_goes_through_send_request_with_its_own_meta() -> None:
    """Spec-mandated (basic/patterns/progress §Progress Flow: progress only with a
    ``progressToken``): a ``_meta`` the caller builds is the one sent, and the reply
    keeps what the server sent before the result."""
    async with open_client(notes_server()) as client:
        plain = await client.send_request("tools/call", {"name": "tidy"})
        params = {"name": "tidy", "_meta": {**client.meta(), "progressToken": "p"}}
        with_token = await client.send_request("tools/call", params)
    progress = [n for n in with_token.notifications if n["method"] == "notifications/progress"]
    assert [n["params"]["progressToken"] for n in progress] == ["p"]
    assert all(n["method"] != "notifications/progress" for n in plain.notifications)


async def test_resources_read_as_text_blobs_and_template_matches() -> None:
    """Spec-mandated (server/resources §Reading Resources, §Resource Templates; SEP-2164:
    an unknown URI is -32602): contents typed by kind."""
    async with open_client(notes_server()) as client:
        today = await client.read_resource("notes://today")
        dot = await client.read_resource("notes://dot.png")
        monday = await client.read_resource("notes://day/monday")
        with pytest.raises(RequestFailed) as unknown:
            await client.read_resource("notes://nowhere")
    assert today == [TextResourceContents("notes://today", "Nothing planned.", "text/plain")]
    assert dot == [BlobResourceContents("notes://dot.png", "iVBORw==", "image/png")]
    assert monday == [TextResourceContents("notes://day/monday", "Notes of monday.")]
    assert unknown.value.code == INVALID_PARAMS


async def test_a_resource_that_asks_is_answered_and_read_again() -> None:
    """Spec-mandated (basic/patterns/mrtr §Supported Requests: resources/read may
    answer input_required): the round is answered by the client's answerer."""
    async with open_client(notes_server(), answer=[accept({"ok": True})]) as client:
        shown = await client.read_resource("notes://secret")
        hidden = await client.read_resource("notes://secret", answer=[{"action": "decline"}])
    assert shown == [TextResourceContents("notes://secret", "shown")]
    assert hidden == [TextResourceContents("notes://secret", "hidden")]


async def test_a_prompt_is_got_as_typed_messages() -> None:
    """Spec-mandated (server/prompts §Getting a Prompt; a missing required argument
    is -32602)."""
    async with open_client(notes_server()) as client:
        prompt = await client.get_prompt("summarise", {"text": "x", "tone": "short"})
        with pytest.raises(RequestFailed) as missing:
            await client.get_prompt("summarise")
    message = PromptMessage("user", TextContent("Summarise this, short: x"))
    assert prompt == GetPromptResult([message])
    assert missing.value.code == INVALID_PARAMS


async def test_completions_for_a_prompt_and_a_template_with_context() -> None:
    """Spec-mandated (server/utilities/completion §Requesting Completions, §Reference
    Types, §Completion Results): by prompt name or template URI, with the arguments
    already chosen."""
    async with open_client(notes_server()) as client:
        tones = await client.complete("ref/prompt", "summarise", "tone", "p")
        days = await client.complete(
            "ref/resource", "notes://day/{day}", "day", "mon", context={"year": "2026"}
        )
        with pytest.raises(RequestFailed) as unknown:
            await client.complete("ref/prompt", "nobody", "x", "")
    assert tones == Completion(["plain", "playful"], total=2, has_more=False)
    assert days == Completion(["mon-2026"])
    assert unknown.value.code == INVALID_PARAMS


async def test_a_resource_subscription_hears_only_its_uri() -> None:
    """Spec-mandated (server/resources §Subscriptions; basic/patterns/subscriptions
    §Acknowledgment, §Receiving Notifications): the acknowledgement names the honoured
    filter; an update of another URI is not delivered."""
    async with (
        open_client(notes_server()) as client,
        client.listen(resource_subscriptions=["notes://today"]) as changes,
    ):
        await client.call_tool("touch", {"uri": "notes://today"})
        updated = await changes.next()
    assert changes.honoured == {"resourceSubscriptions": ["notes://today"]}
    assert (updated.method, updated.params) == (
        "notifications/resources/updated",
        {"uri": "notes://today"},
    )
    assert "io.modelcontextprotocol/subscriptionId" in updated.meta


async def test_a_task_is_created_answered_and_streamed_in_seq_order() -> None:
    """Spec-mandated (SEP-2694 §tasks/stream, §Task Event, §Resume and Replay Semantics):
    the whole log from seq 0 without a gap, the tool's events among presa's, the
    stream ending after the terminal status; ``after`` resumes past a cursor."""
    async with open_client(notes_server(task_events=True)) as client:
        task = await client.start_task("archive", {"path": "a"})
        await task.wait_for("input_required")
        await task.respond({"ok": accept()})
        done = await task.result()
        async with task.stream() as events:
            streamed = [event async for event in events]
        async with task.stream(after=streamed[1].seq) as events:
            resumed = [event async for event in events]
    assert done.text == "archived"
    assert [event.seq for event in streamed] == list(range(len(streamed)))
    assert {event.task_id for event in streamed} == {task.task_id}
    steps = [event.payload for event in streamed if event.type == "com.example.step"]
    assert steps == [{"n": 1}, {"n": 2}]
    assert (streamed[-1].type, streamed[-1].payload["status"]) == (STATUS_EVENT, "completed")
    assert resumed == streamed[2:]


async def test_a_task_stream_is_method_not_found_without_task_events() -> None:
    """Spec-mandated (SEP-2694 §Specification: a receiver without task event streams
    answers -32601); the task is cancelled at once all the same (SEP-2663 §Task
    Cancellation)."""
    async with open_client(notes_server()) as client:
        task = await client.start_task("archive", {"path": "a"})
        with pytest.raises(RequestFailed) as refused:
            async with task.stream():
                pass
        cancelled = await task.cancel()
    assert refused.value.code == METHOD_NOT_FOUND
    assert cancelled.status == "cancelled"


async def test_a_failed_assert_inside_open_client_comes_out_as_itself() -> None:
    """presa-defined (presa_trio.testing.background): ``pytest.raises`` matches an
    exception of the block, in ``open_client`` and in a listen stream inside it."""
    with pytest.raises(AssertionError, match="in the block"):
        async with open_client(notes_server()):
            raise AssertionError("in the block")
    with pytest.raises(KeyError):
        async with (
            open_client(notes_server()) as client,
            client.listen(tools_list_changed=True),
        ):
            raise KeyError("in the stream's block")


async def test_a_wait_that_never_ends_fails_the_test_instead_of_hanging(
    autojump_clock: MockClock,
) -> None:
    """presa-defined: a change that never comes fails the wait after the client's
    limit (on the test's clock), before anything around the wait gives up."""
    async with (
        open_client(notes_server()) as client,
        client.listen(prompts_list_changed=True) as changes,
    ):
        with trio.move_on_after(2 * WAIT) as around, pytest.raises(trio.TooSlowError):
            await changes.next()
    assert not around.cancelled_caught


async def test_an_answer_that_is_no_json_rpc_message_fails_naming_what_came() -> None:
    """presa-defined (presa_trio.testing.driver): a body over the app's limit is answered
    413 in plain text (streamable-http §Sending Messages leaves a
    non-JSON-RPC HTTP error to the server); the call fails the test saying so, the
    method, status and body named, instead of a JSONDecodeError of the client's own."""
    server = Server("sizes", "1.0.0")

    @server.tool()
    async def size(ctx: RequestContext, data: str) -> str:
        """Counts the characters given."""
        return str(len(data))

    async with open_client(server) as client:
        with pytest.raises(AssertionError) as failed:
            await client.call_tool("size", {"data": "x" * 5_000_000})
    assert str(failed.value).startswith("tools/call was answered HTTP 413 text/plain")
    assert "Request body too large" in str(failed.value)


async def test_a_tool_that_never_stops_asking_fails_the_call_instead_of_hanging() -> None:
    """presa-defined (presa_trio.testing.answers): a tool that asks again whatever it is
    answered fails the test after MAX_ROUNDS rounds, plain or in a task, naming what it
    asked last, where the test would hang."""
    server = Server("asks", "1.0.0")
    tasks = server.add_extension(TasksExtension())

    @server.tool(needs=["elicitation"])
    async def again(ctx: RequestContext) -> InputRequired:
        """Asks under one key, and never reads the answer."""
        return InputRequired({"ok": Elicitation("Sure?", CONFIRM)})

    @tasks.tool(Policy.REQUIRED, needs=["elicitation"])
    async def forever(ctx: RequestContext) -> str:
        """Asks one question after another."""
        for number in range(1, 10_000):
            await ask(ctx, {f"ok-{number}": Elicitation("Sure?", CONFIRM)})
        return "done"

    def always(key: str, request: JSONObject) -> JSONObject:
        return accept({"ok": True})

    async with open_client(server, answer=always) as client:
        expected = f"still asks for input after {MAX_ROUNDS} rounds"
        with pytest.raises(AssertionError, match=f"tools/call {expected}: 'ok'"):
            await client.call_tool("again")
        task = await client.start_task("forever")
        with pytest.raises(AssertionError, match=f"task {task.task_id} {expected}: 'ok-"):
            await task.result()
        await task.cancel()


async def test_waiting_for_a_status_a_task_ended_without_fails_at_once_naming_its_end(
    autojump_clock: MockClock,
) -> None:
    """presa-defined (presa_trio.testing.tasks): a terminal task never changes again
    (SEP-2663 §Task Polling: a client polls until one), so waiting for another status fails the test
    when the end is seen, naming it, rather than after the client's wait."""
    server = Server("quick", "1.0.0")
    tasks = server.add_extension(TasksExtension())

    @tasks.tool(Policy.REQUIRED)
    async def quick(ctx: RequestContext) -> str:
        """Ends without asking."""
        return "done"

    async with open_client(server) as client:
        task = await client.start_task("quick")
        with pytest.raises(AssertionError, match=f"task {task.task_id} ended completed"):
            await task.wait_for("input_required")
        assert (await task.wait_for("completed")).status == "completed"
