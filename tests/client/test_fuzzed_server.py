"""Whatever a server answers, the client ends in one line and a documented exit status.

docs/client.md, Exit codes: every failure is one line on stderr and one of
the documented statuses, never a traceback. Hypothesis generates the
server's answers (results of the wrong shape for each method, odd event
streams, HTTP statuses and headers, bytes that are no JSON); the client runs
in this process, its HTTP client answered by :class:`httpx.MockTransport`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presa_trio.cli.main import main

#: The statuses docs/client.md documents (Exit codes).
DOCUMENTED = {0, 1, 2, 3, 130}
URL = "http://127.0.0.1:9/mcp"
#: Requests answered as drawn; those after are answered with an error, which ends the run.
MOST_REQUESTS = 6

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def keyed(
    keys: list[str], values: st.SearchStrategy[Any] = json_values
) -> st.SearchStrategy[dict[str, Any]]:
    """Objects whose keys are some of ``keys`` (and perhaps others), with odd values."""
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=3), values, max_size=len(keys))


tool = keyed(
    ["name", "inputSchema", "outputSchema", "title", "description", "annotations", "execution"]
)
content_block = keyed(
    ["type", "text", "data", "mimeType", "resource", "uri", "name"]
) | st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image", "audio", "resource", "resource_link", "x"])},
    optional={
        "text": json_values,
        "data": json_values,
        "mimeType": json_values,
        "resource": json_values,
        "uri": json_values,
    },
)
call_result = st.fixed_dictionaries(
    {},
    optional={
        "resultType": st.sampled_from(["complete", "task", "input_required"]) | json_values,
        "content": st.lists(content_block, max_size=3) | json_values,
        "structuredContent": json_values,
        "isError": json_values,
        "inputRequests": st.dictionaries(
            st.text(max_size=3), keyed(["method", "params"]), max_size=2
        )
        | json_values,
        "requestState": st.text(max_size=3) | json_values,
        "taskId": st.text(max_size=3) | json_values,
        "status": st.sampled_from(["working", "input_required", "completed", "failed", "cancelled"])
        | json_values,
        "pollIntervalMs": st.integers(min_value=-5, max_value=5) | json_values,
        "result": json_values,
        "error": json_values,
        "_meta": json_values,
    },
)
list_result = st.fixed_dictionaries(
    {
        "tools": st.lists(
            st.just({"name": "t", "inputSchema": {"type": "object"}}) | tool, max_size=3
        )
        | json_values
    },
    optional={"nextCursor": json_values},
)
discover_result = st.fixed_dictionaries(
    {},
    optional={
        "supportedVersions": st.just(["2026-07-28"]) | json_values,
        "capabilities": keyed(["tools", "prompts", "resources", "extensions", "tasks"])
        | json_values,
        "serverInfo": keyed(["name", "version", "title"]) | json_values,
        "instructions": json_values,
    },
)
error_object = keyed(["code", "message", "data"]) | st.fixed_dictionaries(
    {"code": st.integers() | json_values, "message": json_values}, optional={"data": json_values}
)


def message(request_id: Any, body: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A response to ``request_id`` (or an error, or no JSON-RPC at all)."""
    return st.one_of(
        body.map(lambda result: {"jsonrpc": "2.0", "id": request_id, "result": result}),
        error_object.map(lambda error: {"jsonrpc": "2.0", "id": request_id, "error": error}),
        keyed(["jsonrpc", "id", "result", "error", "method", "params"]),
    )


notification = st.fixed_dictionaries(
    {
        "jsonrpc": st.just("2.0"),
        "method": st.sampled_from(
            [
                "notifications/progress",
                "notifications/message",
                "notifications/tasks",
                "notifications/subscriptions/acknowledged",
                "x",
            ]
        ),
    },
    optional={"params": json_values},
)
sse_field = st.sampled_from(["id", "event", "retry", "data", ""]) | st.text(max_size=3)


@st.composite
def answer(draw: st.DrawFn, request_id: Any, body: st.SearchStrategy[Any]) -> httpx.Response:
    """One HTTP answer: JSON, an event stream, an odd status, or bytes that are no JSON."""
    kind = draw(st.sampled_from(["json", "sse", "status", "bytes"]))
    response = draw(message(request_id, body))
    if kind == "json":
        raw = json.dumps(response).encode()
        if draw(st.booleans()):
            raw = raw[: draw(st.integers(0, len(raw)))]
        return httpx.Response(
            200,
            headers={
                "content-type": draw(
                    st.sampled_from(
                        ["application/json", "text/html", "application/json; charset=latin-1", ""]
                    )
                )
            },
            content=raw,
        )
    if kind == "sse":
        lines = []
        for extra in draw(st.lists(notification | json_values, max_size=3)):
            field = draw(sse_field)
            lines.append(f"{field}: {json.dumps(extra)}\n" if field else ": c\n")
            lines.append("\n")
        if draw(st.booleans()):
            lines.append(f"id: {draw(st.text(max_size=3))}\nretry: {draw(st.text(max_size=3))}\n")
        if draw(st.booleans()):
            lines.append(f"data: {json.dumps(response)}\n\n")
        return httpx.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content="".join(lines).encode("utf-8", "surrogatepass"),
        )
    if kind == "status":
        status = draw(
            st.sampled_from(
                [202, 204, 301, 400, 401, 403, 404, 405, 406, 409, 413, 429, 500, 502, 503]
            )
        )
        headers = draw(
            st.dictionaries(
                st.sampled_from(
                    [
                        "content-type",
                        "www-authenticate",
                        "retry-after",
                        "location",
                        "mcp-session-id",
                    ]
                ),
                st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=20),
                max_size=3,
            )
        )
        content = (
            json.dumps(response).encode() if draw(st.booleans()) else draw(st.binary(max_size=10))
        )
        return httpx.Response(status, headers=headers, content=content)
    return httpx.Response(
        200, headers={"content-type": "application/json"}, content=draw(st.binary(max_size=20))
    )


def run_client(
    argv: list[str],
    answering: Callable[[str, Any, dict[str, Any]], httpx.Response],
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str, list[dict[str, Any]]]:
    """``presa-trio ARGV`` in this process, each request answered by ``answering``."""
    sent: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method != "POST":
            return httpx.Response(405)
        body = json.loads(request.content)
        sent.append(body)
        if len(sent) > MOST_REQUESTS:  # a task that works on is polled on: end it
            error = {"code": -32603, "message": "enough"}
            return httpx.Response(
                200, json={"jsonrpc": "2.0", "id": body.get("id"), "error": error}
            )
        return answering(body.get("method", ""), body.get("id"), body)

    real = httpx.AsyncClient

    class Mocked(real):  # type: ignore[misc,valid-type]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(transport=httpx.MockTransport(handler), **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(httpx, "AsyncClient", Mocked)
        patch.setenv("PRESA_TOKEN", "t")
        capsys.readouterr()
        try:
            main(argv)
            status = 0
        except SystemExit as exit:
            status = exit.code if isinstance(exit.code, int) else 1
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    assert status in DOCUMENTED, (status, err)
    if status in (2, 3):  # 130 is also a task that ended cancelled, said as such
        assert err.strip().splitlines()[-1].startswith("presa-trio: error: "), err
    for message in sent:  # what it sends stays a request the spec allows
        params = message.get("params", {})
        assert isinstance(message["id"], int), message
        assert isinstance(params.get("cursor", ""), str), message  # server/utilities/pagination
        assert isinstance(params.get("requestState", ""), str), message  # mrtr §InputRequiredResult
    return status, err, sent


TOOLS = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}


def fixed(method: str, request_id: Any, result: Any) -> httpx.Response:
    return httpx.Response(200, json={"jsonrpc": "2.0", "id": request_id, "result": result})


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@FUZZ
@given(st.data())
def test_a_fuzzed_tools_call(capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        if method == "tools/list":
            return fixed(method, request_id, TOOLS)
        return data.draw(answer(request_id, call_result), label=method)

    run_client(["call", URL, "t", "--no-listen", "--timeout", "5"], answering, capsys)


@FUZZ
@given(st.data())
def test_a_fuzzed_tools_list(capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        return data.draw(answer(request_id, list_result), label=method)

    run_client(["list", URL, "--timeout", "5"], answering, capsys)


@FUZZ
@given(st.data())
def test_a_fuzzed_discover(capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        return data.draw(answer(request_id, discover_result), label=method)

    run_client(["discover", URL, "--timeout", "5"], answering, capsys)


task_result = st.fixed_dictionaries(
    {
        "taskId": st.just("T") | json_values,
        "status": st.sampled_from(["working", "input_required", "completed", "failed", "cancelled"])
        | json_values,
    },
    optional={
        "result": call_result | json_values,
        "error": error_object | json_values,
        "inputRequests": st.dictionaries(
            st.text(max_size=3), keyed(["method", "params"]), max_size=2
        )
        | json_values,
        "requestState": json_values,
        "statusMessage": json_values,
        "pollIntervalMs": st.integers(min_value=-5, max_value=5),
        "ttlMs": json_values,
        "createdAt": json_values,
    },
)


@FUZZ
@given(st.data())
def test_a_fuzzed_task(capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        if method == "tools/list":
            return fixed(method, request_id, TOOLS)
        if method == "tools/call":
            return fixed(
                method,
                request_id,
                {"resultType": "task", "taskId": "T", "status": "working", "pollIntervalMs": 0},
            )
        return data.draw(answer(request_id, task_result), label=method)

    run_client(["call", URL, "t", "--no-listen", "--timeout", "5"], answering, capsys)


@FUZZ
@given(st.data())
def test_a_fuzzed_listen(capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        return data.draw(answer(request_id, json_values), label=method)

    run_client(["listen", URL, "--task", "T", "--timeout", "5"], answering, capsys)


@FUZZ
@given(st.data())
def test_a_fuzzed_describe_and_complete(
    capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        return data.draw(
            answer(request_id, json_values | list_result | discover_result), label=method
        )

    command = data.draw(
        st.sampled_from(
            [
                ["describe", URL],
                ["complete", URL, "prompt", "p", "a="],
                ["list", URL, "prompts"],
                ["read", URL, "a://b"],
                ["list", URL, "resources"],
            ]
        )
    )
    run_client([*command, "--timeout", "5"], answering, capsys)


def answered(response: httpx.Response) -> Callable[[str, Any, dict[str, Any]], httpx.Response]:
    """Lists the tool ``t``; answers every other request with ``response``."""

    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        return fixed(method, request_id, TOOLS) if method == "tools/list" else response

    return answering


def test_a_redirect_with_no_location_that_is_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    """presa-defined (docs/client.md, Exit codes: a non-MCP server is 3): a 3xx with no
    ``Location``, or one that is no URL (RFC 9110 §10.2.2), is one line and exit 3."""
    for headers in ({}, {"location": "http://["}):
        status, err, _ = run_client(
            ["call", URL, "t", "--no-listen"],
            answered(httpx.Response(302, headers=headers)),
            capsys,
        )
        assert status == 3
        assert err.splitlines()[-1] == (
            f"presa-trio: error: {URL} answered HTTP 302 with no Location that is a URL; "
            "this client follows no redirect"
        )


def test_a_listen_whose_first_message_is_no_acknowledgement(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Spec-mandated (basic/patterns/subscriptions §Acknowledgment: the server MUST send
    the acknowledgement before any notification on the stream): a listen whose first
    message is a notification is the server's mistake, one line and exit 3, and that
    notification is not printed as one agreed to."""
    notified = {
        "jsonrpc": "2.0",
        "method": "notifications/tasks",
        "params": {"taskId": "T", "status": "working"},
    }
    ack = {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": {"taskIds": ["T"]}},
    }
    stream = "".join(f"data: {json.dumps(message)}\n\n" for message in [notified, ack])
    response = httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=stream.encode()
    )
    status, err, _ = run_client(["listen", URL, "--task", "T"], answered(response), capsys)
    assert status == 3
    assert err.splitlines()[-1].startswith(
        f"presa-trio: error: {URL} did not acknowledge the listen first"
    )


def test_a_listen_refused_with_an_error_says_the_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Spec-mandated (basic/patterns/subscriptions: a refused listen is a JSON-RPC error
    response): the line is the server's error, exit 3, not a missing acknowledgement."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "no such task"}}
    status, err, _ = run_client(
        ["listen", URL, "--task", "T"], answered(httpx.Response(200, json=error)), capsys
    )
    assert status == 3
    assert err.splitlines()[-1] == (
        "presa-trio: error: subscriptions/listen: JSON-RPC error -32602: no such task"
    )


def test_list_leaves_out_a_tool_whose_x_mcp_header_is_invalid(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Spec-mandated (server/tools §x-mcp-header: clients over Streamable HTTP MUST exclude
    a tool whose ``x-mcp-header`` is invalid from the result of ``tools/list``): ``list
    tools`` shows the others, and names the one left out on stderr."""
    bad = {"type": "string", "x-mcp-header": "Has Space"}
    tools = {
        "tools": [
            {"name": "good", "inputSchema": {"type": "object"}},
            {"name": "bad", "inputSchema": {"type": "object", "properties": {"r": bad}}},
        ]
    }
    listed = httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": tools})
    status, err, _ = run_client(
        ["list", URL, "tools", "--json"], lambda method, request_id, body: listed, capsys
    )
    assert status == 0, err
    assert "left out the tool 'bad'" in err


def test_each_round_echoes_only_its_own_request_state(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Spec-mandated (basic/patterns/mrtr §Client Behavior: the retry carries the
    ``requestState`` of the InputRequiredResult it answers, unchanged): a round that
    gives none after one that gave ``s1`` is retried without any, not with ``s1``."""
    ask = {"method": "roots/list"}
    rounds = [
        {"resultType": "input_required", "inputRequests": {"a": ask}, "requestState": "s1"},
        {"resultType": "input_required", "inputRequests": {"b": ask}},
        {"content": []},
    ]

    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        return fixed(method, request_id, TOOLS if method == "tools/list" else rounds.pop(0))

    status, err, sent = run_client(["call", URL, "t", "--no-listen"], answering, capsys)
    assert status == 0, err
    calls = [message["params"] for message in sent if message["method"] == "tools/call"]
    assert [call.get("requestState") for call in calls] == [None, "s1", None]
    assert [sorted(call.get("inputResponses", {})) for call in calls] == [[], ["a"], ["b"]]


def test_an_error_to_discover_whose_code_is_a_list(capsys: pytest.CaptureFixture[str]) -> None:
    """basic/index §Error Responses (an error's code is an integer): one that is a list
    is the server's mistake, one line and exit 3 (docs/client.md, Exit codes)."""
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": [1], "message": "m"}}
    status, err, _ = run_client(
        ["discover", URL], answered(httpx.Response(200, json=error)), capsys
    )
    assert status == 3
    assert err.splitlines()[-1].startswith(
        "presa-trio: error: server/discover: an error that is no JSON-RPC error object"
    )


def test_input_requests_that_are_an_empty_list(capsys: pytest.CaptureFixture[str]) -> None:
    """basic/patterns/mrtr §Input Requests (``inputRequests`` is an object of requests):
    an empty list is no such object, so the server's mistake, exit 3 at once, not
    retries without answers until the rounds run out (docs/client.md, Exit codes)."""
    asking = {"resultType": "input_required", "inputRequests": []}
    status, err, sent = run_client(
        ["call", URL, "t", "--no-listen"],
        answered(httpx.Response(200, json={"jsonrpc": "2.0", "id": 2, "result": asking})),
        capsys,
    )
    assert status == 3
    assert err.splitlines()[-1] == (
        f"presa-trio: error: {URL} sent inputRequests that are no object of requests"
    )
    assert [message["method"] for message in sent] == ["tools/list", "tools/call"]


schema = st.recursive(
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["string", "number", "integer", "boolean", "array", "object"])
            | json_values,
            "enum": json_values,
            "oneOf": json_values,
            "items": json_values,
            "default": json_values,
            "format": json_values,
            "minimum": json_values,
            "required": json_values,
        },
    ),
    lambda inner: st.fixed_dictionaries(
        {"type": st.just("object")},
        optional={
            "properties": st.dictionaries(st.sampled_from(["a", "b"]), inner | json_values),
            "required": json_values,
        },
    ),
    max_leaves=4,
)


@FUZZ
@given(st.data())
def test_a_fuzzed_input_schema(capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    listed = {"tools": [{"name": "t", "inputSchema": data.draw(schema | json_values)}]}

    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        if method == "tools/list":
            return fixed(method, request_id, listed)
        return fixed(method, request_id, {"content": []})

    run_client(["call", URL, "t", "a=1", "b=x", "--no-listen"], answering, capsys)
    run_client(["describe", URL, "t"], answering, capsys)


@FUZZ
@given(st.data())
def test_a_fuzzed_elicitation(capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    params = data.draw(
        st.fixed_dictionaries(
            {"message": st.just("m") | json_values, "requestedSchema": schema | json_values},
            optional={"mode": json_values},
        )
        | json_values
    )
    method = data.draw(st.sampled_from(["elicitation/create", "sampling/createMessage"]))
    asking = {
        "resultType": "input_required",
        "inputRequests": {"k": {"method": method, "params": params}},
    }
    reply = data.draw(
        st.sampled_from(
            ['{"action": "accept", "content": {"a": "x", "b": 1}}', '{"action": "decline"}', "{}"]
        )
    )

    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        if method == "tools/list":
            return fixed(method, request_id, TOOLS)
        return fixed(method, request_id, asking)

    run_client(["call", URL, "t", "--no-listen", "--answer", f"k={reply}"], answering, capsys)


def test_a_tools_required_list_that_holds_a_list(capsys: pytest.CaptureFixture[str]) -> None:
    """server/tools §Tool (``inputSchema`` is a JSON Schema: ``required`` lists names):
    a list in it names no parameter; the tool is described all the same, exit 0."""
    listed = {"tools": [{"name": "t", "inputSchema": {"type": "object", "required": [[]]}}]}
    status, err, _ = run_client(
        ["describe", URL, "t"],
        lambda method, request_id, body: fixed(method, request_id, listed),
        capsys,
    )
    assert status == 0, err


def test_an_elicitation_whose_mode_is_a_list(capsys: pytest.CaptureFixture[str]) -> None:
    """client/elicitation §Capabilities (no mode the client does not declare): a mode
    that is a list is none it declares, the server's mistake, one line and exit 3."""
    request = {"method": "elicitation/create", "params": {"mode": [], "message": "m"}}
    asking = {"resultType": "input_required", "inputRequests": {"k": request}}
    status, err, _ = run_client(
        ["call", URL, "t", "--no-listen", "--answer", 'k={"action": "decline"}'],
        answered(httpx.Response(200, json={"jsonrpc": "2.0", "id": 2, "result": asking})),
        capsys,
    )
    assert status == 3
    assert err.splitlines()[-1] == (
        f"presa-trio: error: {URL} asks 'k' for elicitation in [] mode, "
        "which this client does not declare"
    )


def test_a_property_whose_types_are_no_strings(capsys: pytest.CaptureFixture[str]) -> None:
    """JSON Schema validation §6.1.1 (``type`` is a string or an array of strings): a
    ``null`` in it names no type, so the argument is sent as if untyped, exit 0."""
    listed = {"tools": [{"name": "t", "inputSchema": {"properties": {"a": {"type": [None, []]}}}}]}

    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        return fixed(method, request_id, listed if method == "tools/list" else {"content": []})

    status, err, sent = run_client(["call", URL, "t", "a=1", "--no-listen"], answering, capsys)
    assert status == 0, err
    assert sent[-1]["params"]["arguments"] == {"a": "1"}


@settings(FUZZ, max_examples=20)  # a task's stream cut short is resumed: slower
@given(st.data())
def test_a_fuzzed_listen_after_its_acknowledgment(
    capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    ack = {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": {"taskIds": ["T"]}},
    }
    events = data.draw(
        st.lists(
            st.fixed_dictionaries(
                {"jsonrpc": st.just("2.0"), "method": st.just("notifications/tasks")},
                optional={"params": task_result | json_values},
            )
            | notification
            | keyed(["jsonrpc", "id", "result", "error"]),
            max_size=4,
        )
    )
    stream = "".join(f"data: {json.dumps(event)}\n\n" for event in [ack, *events])

    def answering(method: str, request_id: Any, body: dict[str, Any]) -> httpx.Response:
        if method == "subscriptions/listen":
            headers = {"content-type": "text/event-stream"}
            return httpx.Response(200, headers=headers, content=stream.encode())
        return data.draw(answer(request_id, task_result), label=method)

    run_client(["listen", URL, "--task", "T"], answering, capsys)
    run_client(["task", "stream", URL, "T"], answering, capsys)
