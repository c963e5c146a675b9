"""Every message presa sends validates against the schema, whatever the client sends.

Rules of this file: hypothesis draws a short conversation, requests of
every method with valid and near-valid params (a key dropped, a value
swapped for any JSON value, an unknown key, a ``_meta`` field spoilt, a bad
envelope), and plays it against a fresh server on an autojump clock: the
demo server, or a server built here with the public API. Each answer is
held to the wire's rules (:func:`check_answer`): the HTTP status the error
code calls for, the content type, one JSON-RPC response echoing the id it
could read, notifications only of the kinds the request asked for, and
every message valid against its definition in the 2026-07-28 schema or
SEP-2663 (:mod:`tests.wire_schema`). A task created in a conversation can
be polled, answered, cancelled and listened to later in it (a listen
stream is read for a minute of the virtual clock, every notification on it
checked), and an MRTR retry echoes the last ``requestState`` it was given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypedDict

import attrs
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trio.testing import MockClock

from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.server import CacheHints, RequestContext, Server
from presa_trio.testing import (
    DEFAULT_CAPABILITIES,
    TASKS_CAPABILITIES,
    McpClient,
    Response,
    running,
)
from presa_trio.wire import models
from presa_trio.wire.envelope import readable_id
from presa_trio.wire.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from presa_trio.wire.meta import (
    LOG_LEVELS,
    META_CLIENT_CAPABILITIES,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
)
from tests import wire_schema

#: Each error code presa may answer bad input with, and its HTTP status
#: (basic/index §Error Codes; streamable-http §Protocol Version Header).
#: -32603 is absent: bad input is never an internal error.
STATUS_OF_CODE = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    METHOD_NOT_FOUND: 404,
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}
#: What a request's own event stream may carry before its response
#: (streamable-http §Receiving Messages).
REQUEST_NOTIFICATIONS = frozenset({"notifications/progress", "notifications/message"})
#: Virtual seconds any one answer may take (the clock jumps; nothing waits).
ANSWER_LIMIT_S = 100_000.0
#: Virtual seconds a listen stream is read before the client closes it.
LISTEN_S = 60.0


# --- the servers ------------------------------------------------------------------


class Weather(TypedDict):
    city: str
    celsius: float


@attrs.frozen
class Report:
    summary: str
    score: int


def build_api_server() -> Server:
    """A server of the public API with what the demo lacks: structured output, a
    resource link, annotations, blobs, private cache hints, typed prompts, completions."""
    server = Server("sweep", "1.0.0", cache=CacheHints(ttl_ms=60_000, scope="private"))

    @server.tool()
    async def weather(ctx: RequestContext, city: str) -> Weather:
        """Today's weather in a city."""
        return {"city": city, "celsius": 21.5}

    @server.tool(title="Report", annotations={"readOnlyHint": True})
    async def report(ctx: RequestContext, score: int = 3) -> Report:
        """A report with a score."""
        return Report("fine", score)

    @server.tool()
    async def nothing(ctx: RequestContext) -> None:
        """Returns nothing at all."""

    @server.tool(description="Links a resource and annotates a text")
    async def link(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        await ctx.log("notice", {"arguments": arguments}, logger="link")
        await ctx.report_progress(0.5, total=1.0, message="half")
        return [
            models.ResourceLink("test://a", "a", title="A", mime_type="text/plain"),
            models.TextContent("see above", annotations={"audience": ["user"], "priority": 0.5}),
        ]

    @server.resource("test://a", name="a", title="A", description="Text", mime_type="text/plain")
    async def text(ctx: RequestContext) -> str:
        return "a"

    @server.resource("test://b", name="b")
    async def blob(ctx: RequestContext) -> bytes:
        return b"\x00\xff"

    @server.resource_template("test://t/{x}", name="t", description="By x")
    async def by_x(ctx: RequestContext, variables: dict[str, str]) -> str:
        return variables["x"]

    @server.prompt()
    async def summarise(ctx: RequestContext, text: str, tone: str = "plain") -> str:
        """Summarise a text."""
        return f"Summarise in a {tone} tone: {text}"

    @server.completion("ref/prompt", "summarise")
    async def tones(
        ctx: RequestContext, argument: str, value: str, context_arguments: dict[str, str]
    ) -> models.Completion:
        matches = [tone for tone in ("plain", "playful") if tone.startswith(value)]
        return models.Completion(matches, total=len(matches), has_more=False)

    return server


BUILDERS: dict[str, Callable[[], Server]] = {"demo": build_server, "api": build_api_server}


# --- what a conversation is made of ---------------------------------------------------


@attrs.frozen
class TaskRef:
    """The n-th task created so far in the conversation (any text if none yet)."""

    n: int


@attrs.frozen
class LastState:
    """The last ``requestState`` the conversation was given (any text if none yet)."""


@attrs.frozen
class Step:
    """One request: its message (``raw`` bytes instead, for a body that is no JSON)."""

    message: Any
    raw: bytes | None = None


@attrs.define
class Conversation:
    """What the steps so far left behind, for the later steps to use."""

    tasks: list[str] = attrs.field(factory=list)
    request_state: str | None = None

    def resolve(self, value: Any) -> Any:
        """``value`` with its references filled in; ``requestState`` left out if none yet."""
        if isinstance(value, TaskRef):
            return self.tasks[value.n % len(self.tasks)] if self.tasks else "no-task-yet"
        if isinstance(value, LastState):
            return self.request_state
        if isinstance(value, dict):
            return {
                key: self.resolve(item)
                for key, item in value.items()
                if not (isinstance(item, LastState) and self.request_state is None)
            }
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        return value


# --- strategies -----------------------------------------------------------------------

keys = st.text(st.characters(codec="utf-8"), max_size=6)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=6,
)
small_text = st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=8)

ELICIT_RESULTS = st.one_of(
    st.fixed_dictionaries(
        {
            "action": st.just("accept"),
            "content": st.fixed_dictionaries(
                {},
                optional={
                    "name": small_text,
                    "color": small_text,
                    "confirm": st.booleans(),
                    "ok": st.booleans(),
                },
            ),
        }
    ),
    st.builds(lambda action: {"action": action}, st.sampled_from(["decline", "cancel"])),
)
SAMPLING_RESULTS = st.builds(
    lambda text: {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"},
    small_text,
)
ROOTS_RESULTS = st.just({"roots": [{"uri": "file:///home", "name": "home"}]})
#: The input keys the demo asks under, each with the answers its request takes.
INPUT_KEYS = {
    "user_name": ELICIT_RESULTS,
    "confirmation": ELICIT_RESULTS,
    "confirm": ELICIT_RESULTS,
    "step1": ELICIT_RESULTS,
    "step2": ELICIT_RESULTS,
    "confirm-delete": ELICIT_RESULTS,
    "first-input": ELICIT_RESULTS,
    "second-input": ELICIT_RESULTS,
    "capital_question": SAMPLING_RESULTS,
    "greeting": SAMPLING_RESULTS,
    "client_roots": ROOTS_RESULTS,
}
input_responses = st.sampled_from(sorted(INPUT_KEYS)).flatmap(
    lambda key: st.dictionaries(st.just(key), INPUT_KEYS[key], min_size=1)
)

#: Arguments the tools take, where ``{}`` would not do.
TOOL_ARGUMENTS: Mapping[str, st.SearchStrategy[Any]] = {
    "greet": st.fixed_dictionaries({}, optional={"name": small_text}),
    "slow_compute": st.fixed_dictionaries(
        {}, optional={"seconds": st.integers(0, 30), "label": small_text}
    ),
    "fan_out": st.fixed_dictionaries(
        {}, optional={"parts": st.integers(1, 5), "seconds": st.integers(0, 5)}
    ),
    "confirm_delete": st.fixed_dictionaries({}, optional={"filename": small_text}),
    "test_x_mcp_header": st.fixed_dictionaries({"region": small_text}),
    "json_schema_2020_12_tool": st.fixed_dictionaries({"name": small_text, "email": small_text}),
    "weather": st.fixed_dictionaries({"city": small_text}),
    "report": st.fixed_dictionaries({}, optional={"score": st.integers()}),
}


def tools_call(server: Server) -> st.SearchStrategy[dict[str, Any]]:
    def arguments(name: str) -> st.SearchStrategy[Any]:
        return TOOL_ARGUMENTS.get(name, st.just({}))

    return st.sampled_from(sorted(server.tools)).flatmap(
        lambda name: st.fixed_dictionaries(
            {"name": st.just(name), "arguments": arguments(name)},
            optional={"inputResponses": input_responses, "requestState": st.just(LastState())},
        )
    )


def resources_read(server: Server) -> st.SearchStrategy[dict[str, Any]]:
    filled = [t.template.uri_template.replace("{", "").replace("}", "") for t in server.templates]
    uris = st.sampled_from(sorted(server.resources) + filled) | small_text
    return st.fixed_dictionaries({"uri": uris})


def prompts_get(server: Server) -> st.SearchStrategy[dict[str, Any]]:
    names = st.sampled_from(sorted(server.prompts)) | small_text
    arguments = st.dictionaries(
        st.sampled_from(["arg1", "arg2", "resourceUri", "text", "tone"]), small_text
    )
    return st.fixed_dictionaries({"name": names}, optional={"arguments": arguments})


def completion_complete(server: Server) -> st.SearchStrategy[dict[str, Any]]:
    prompts = [{"type": "ref/prompt", "name": name} for name in sorted(server.prompts)]
    templates = [{"type": "ref/resource", "uri": t.template.uri_template} for t in server.templates]
    return st.fixed_dictionaries(
        {
            "ref": st.sampled_from([*prompts, *templates, {"type": "ref/prompt", "name": "none"}]),
            "argument": st.fixed_dictionaries(
                {"name": st.sampled_from(["arg1", "tone", "id", "x"]), "value": small_text}
            ),
        },
        optional={"context": st.fixed_dictionaries({"arguments": st.dictionaries(keys, keys)})},
    )


def listen_filter() -> st.SearchStrategy[dict[str, Any]]:
    flag = st.booleans()
    return st.fixed_dictionaries(
        {
            "notifications": st.fixed_dictionaries(
                {},
                optional={
                    "toolsListChanged": flag,
                    "promptsListChanged": flag,
                    "resourcesListChanged": flag,
                    "resourceSubscriptions": st.lists(small_text, max_size=2),
                    "taskIds": st.lists(st.builds(TaskRef, st.integers(0, 3)), max_size=2),
                },
            )
        }
    )


task_ids = st.builds(TaskRef, st.integers(0, 3)) | small_text
#: Mostly no cursor: presa issues none, so any cursor is -32602 (spec-notes §14).
paginated: st.SearchStrategy[dict[str, Any]] = st.sampled_from(
    [{}, {}, {}]
) | st.fixed_dictionaries({"cursor": small_text})


def method_params(server: Server) -> dict[str, st.SearchStrategy[dict[str, Any]]]:
    """Valid params for every method presa serves, and some it does not."""
    return {
        "server/discover": st.just({}),
        "tools/list": paginated,
        "tools/call": tools_call(server),
        "resources/list": paginated,
        "resources/templates/list": paginated,
        "resources/read": resources_read(server),
        "prompts/list": paginated,
        "prompts/get": prompts_get(server),
        "completion/complete": completion_complete(server),
        "subscriptions/listen": listen_filter(),
        "tasks/get": st.fixed_dictionaries({"taskId": task_ids}),
        "tasks/update": st.fixed_dictionaries(
            {"taskId": task_ids, "inputResponses": input_responses}
        ),
        "tasks/cancel": st.fixed_dictionaries({"taskId": task_ids}),
        "tasks/list": paginated,
        "logging/setLevel": st.fixed_dictionaries({"level": st.sampled_from(LOG_LEVELS)}),
        "ping": st.just({}),
    }


@st.composite
def request_meta(draw: st.DrawFn) -> dict[str, Any]:
    capabilities = draw(
        st.sampled_from([DEFAULT_CAPABILITIES, TASKS_CAPABILITIES, TASKS_CAPABILITIES, {}])
    )
    meta: dict[str, Any] = {
        META_PROTOCOL_VERSION: PROTOCOL_VERSION,
        META_CLIENT_CAPABILITIES: capabilities,
    }
    if draw(st.booleans()):
        meta[META_LOG_LEVEL] = draw(st.sampled_from(LOG_LEVELS))
    if draw(st.booleans()):
        meta["progressToken"] = draw(st.integers() | small_text)
    return meta


@st.composite
def spoilt(draw: st.DrawFn, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` near-valid: one key dropped, swapped for any JSON value, or added."""
    changed = dict(params)
    target = draw(st.sampled_from([changed, changed["_meta"]]))
    how = draw(st.sampled_from(["drop", "swap", "add"]))
    if how == "add" or not target:
        target[draw(keys)] = draw(json_values)
    else:
        key = draw(st.sampled_from(sorted(target)))
        if how == "drop":
            del target[key]
        else:
            target[key] = draw(json_values)
    return changed


#: How often each method is drawn, beside the others' once: the methods with
#: the most shapes of answer, more often.
WEIGHTS = {"tools/call": 8, "tasks/get": 3, "tasks/update": 2, "subscriptions/listen": 2}


@st.composite
def steps(draw: st.DrawFn, server: Server) -> Step:
    table = method_params(server)
    method = draw(st.sampled_from([m for m in sorted(table) for _ in range(WEIGHTS.get(m, 1))]))
    params = {**draw(table[method]), "_meta": draw(request_meta())}
    params["_meta"] = dict(params["_meta"])
    if draw(st.integers(0, 4)) == 0:
        params = draw(spoilt(params))
    message: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": draw(st.integers(0, 2**31) | small_text),
        "method": method,
        "params": params,
    }
    if draw(st.integers(0, 9)) == 0:  # a bad envelope
        member = draw(st.sampled_from(["id", "jsonrpc", "method", "params"]))
        message[member] = draw(json_values)
    if draw(st.integers(0, 19)) == 0:
        return Step(message, raw=draw(st.sampled_from([b"", b"{", b"[]", b"null", b"\xff"])))
    return Step(message)


@st.composite
def conversations(draw: st.DrawFn) -> tuple[str, list[Step]]:
    target = draw(st.sampled_from(["demo", "demo", "api"]))  # the demo has tasks
    server = BUILDERS[target]()
    return target, draw(st.lists(steps(server), min_size=1, max_size=8))


# --- the oracle --------------------------------------------------------------------------


def declared_tasks(message: Any) -> bool:
    """Whether the request declared the Tasks extension in its capabilities."""
    try:
        extensions = message["params"]["_meta"][META_CLIENT_CAPABILITIES]["extensions"]
        return "io.modelcontextprotocol/tasks" in extensions
    except (KeyError, TypeError):
        return False


def asked(message: Any, key: str) -> Any:
    try:
        return message["params"]["_meta"][key]
    except (KeyError, TypeError):
        return None


def check_answer(message: Any, response: Response, final: dict[str, Any] | None) -> None:
    """Hold one answer to the wire's rules; ``final`` is its response message, if any."""
    body = response.body
    if response.status == 202:
        assert isinstance(message, dict), body
        assert "id" not in message, body
        assert body == b""
        assert "content-type" not in response.headers
        return
    assert final is not None, (response.status, body)
    problems = wire_schema.envelope_problems(final)
    request_id = readable_id(message)
    if request_id is None:
        assert "id" not in final, final
    else:
        assert final.get("id") == request_id, final
    if "error" in final:
        code = final["error"]["code"]
        assert code in STATUS_OF_CODE, final
        assert response.status == STATUS_OF_CODE[code], (response.status, final)
        problems += wire_schema.error_problems(final)
    else:
        assert response.status == 200, (response.status, final)
        method = message["method"]
        result = final["result"]
        problems += wire_schema.result_problems(
            method, result, tasks_declared=declared_tasks(message)
        )
        if method == "tasks/get":
            problems += inlined_problems(result)
    assert problems == [], (message, final, problems)


def inlined_problems(task: dict[str, Any]) -> list[str]:
    """A task's inlined outcome is what ``tools/call`` would have answered (SEP-2663
    §Task Execution Errors): a ``CallToolResult``, or a JSON-RPC error."""
    if task.get("status") == "completed":
        return wire_schema.result_problems("tools/call", task["result"])
    if task.get("status") == "failed":
        return wire_schema.problems(task["error"], wire_schema.ref(wire_schema.ERROR))
    return []


def check_notifications(message: Any, notifications: list[dict[str, Any]]) -> None:
    """What came before the response: only what the request asked for, each valid."""
    for notification in notifications:
        assert notification.get("method") in REQUEST_NOTIFICATIONS, notification
        assert wire_schema.notification_problems(notification) == [], notification
        params = notification["params"]
        if notification["method"] == "notifications/progress":
            assert params["progressToken"] == asked(message, "progressToken")
        else:
            level = asked(message, META_LOG_LEVEL)
            assert level in LOG_LEVELS, notification
            assert LOG_LEVELS.index(params["level"]) >= LOG_LEVELS.index(level)


async def play(client: McpClient, step: Step, conversation: Conversation) -> None:
    """Send one step, check its answer, and note what later steps may use."""
    message = conversation.resolve(step.message)
    try:
        headers = client.headers_for(message)
    except (AttributeError, TypeError):  # params that are no object: mirror nothing
        headers = client.headers_for({})
    # A method no header can carry (a client would encode a name, not a method).
    headers = {name: value for name, value in headers.items() if value.isascii()}
    if step.raw is not None:
        response = await client.post(step.raw, headers)
        check_content_type(response)
        check_answer(None, response, response.json())
        return
    body = json.dumps(message).encode()
    if isinstance(message, dict) and message.get("method") == "subscriptions/listen":
        await play_listen(client, message, body, headers)
        return
    response = await client.post(body, headers, limit_s=ANSWER_LIMIT_S)
    messages = response.messages() if response.body else []
    notifications, final = messages[:-1], (messages[-1] if messages else None)
    check_content_type(response)
    check_answer(message, response, final)
    check_notifications(message, notifications)
    result = (final or {}).get("result", {})
    if result.get("resultType") == "task":
        conversation.tasks.append(result["taskId"])
    if isinstance(result.get("requestState"), str):
        conversation.request_state = result["requestState"]


async def play_listen(
    client: McpClient, message: dict[str, Any], body: bytes, headers: dict[str, str]
) -> None:
    """A listen stream: refused whole, or acknowledged first, each message valid."""
    with trio.fail_after(ANSWER_LIMIT_S):
        async with client.stream(body, headers) as stream:
            first = await stream.next_message()
            check_content_type(stream.response)
            if "method" not in first:
                check_answer(message, await stream.read_to_end(), first)
                return
            assert first["method"] == "notifications/subscriptions/acknowledged", first
            assert wire_schema.notification_problems(first) == [], first
            subscription = first["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
            assert subscription == message["id"]
            if "taskIds" in first["params"]["notifications"]:
                assert declared_tasks(message)
            with trio.move_on_after(LISTEN_S):  # what the tasks it follows say meanwhile
                while True:
                    delivered = await stream.next_message()
                    assert "id" not in delivered, delivered  # the stream is not ended
                    assert wire_schema.notification_problems(delivered) == [], delivered
                    tag = delivered["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"]
                    assert tag == subscription


def check_content_type(response: Response) -> None:
    """streamable-http §Sending Messages item 6, §Receiving Messages."""
    if response.status == 202:
        return
    if response.is_event_stream:
        assert response.status == 200
        assert response.headers["cache-control"] == "no-cache"
        assert response.headers["x-accel-buffering"] == "no"
    else:
        assert response.headers["content-type"] == "application/json", response.headers


async def converse(target: str, conversation_steps: list[Step]) -> None:
    app = McpApp.for_server(BUILDERS[target]())
    conversation = Conversation()
    async with running(app) as client:
        for step in conversation_steps:
            await play(client, step, conversation)


# --- the tests ------------------------------------------------------------------------------


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(conversations())
def test_every_answer_to_any_conversation_validates_against_the_schema(
    conversation: tuple[str, list[Step]],
) -> None:
    """Spec-mandated (schema $defs.*ResultResponse, $defs.JSONRPCErrorResponse,
    $defs.ServerNotification; SEP-2663 §Tasks, §Task Polling, §Task Status
    Notifications; basic/index §Error Codes; streamable-http §Sending Messages,
    §Receiving Messages; E-26): whatever a client sends, each message presa
    answers with is valid for its method, with the HTTP status its code calls for."""
    target, conversation_steps = conversation
    trio.run(converse, target, conversation_steps, clock=MockClock(autojump_threshold=0))
