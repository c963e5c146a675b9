"""What one request knows: its own capabilities, log level and progress token.

Spec: basic/index §_meta; progress; logging §Per-request log level.

Nothing carries over between requests: each test that shows a capability,
a log level or a progress token working also shows the next request
without it gets nothing of it.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from trio.testing import MockClock

from presa_trio.server import RequestContext, Server
from presa_trio.testing import McpClient, connect, meta, request
from presa_trio.wire.errors import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from presa_trio.wire.meta import META_LOG_LEVEL
from tests.expect import assert_handler_fault, error_of, incident_of, result_of


async def test_an_undeclared_capability_is_refused_with_the_required_capabilities(
    client: McpClient,
) -> None:
    """Runner-scored (server-stateless/sep-2575-server-rejects-undeclared-capability,
    sep-2575-missing-capability-http-400; E-07): -32021, 400, ``data.requiredCapabilities``
    an object shaped like ClientCapabilities (schema
    $defs.MissingRequiredClientCapabilityError)."""
    response = await client.call(
        "tools/call", {"name": "test_missing_capability"}, capabilities={}, request_id=401
    )
    error = error_of(response, 400, MISSING_REQUIRED_CLIENT_CAPABILITY, 401)
    assert error["data"] == {"requiredCapabilities": {"sampling": {}}}


async def test_capabilities_are_never_carried_over_between_requests(client: McpClient) -> None:
    """Spec-mandated (basic/index §_meta, §Statelessness: capabilities come from this request
    only, never from an earlier request or a server/discover; T-70)."""
    params = {"name": "test_missing_capability"}
    result_of(await client.call("server/discover", capabilities={"sampling": {}}))
    result_of(await client.call("tools/call", params, capabilities={"sampling": {}}))
    response = await client.call("tools/call", params, capabilities={})
    error_of(response, 400, MISSING_REQUIRED_CLIENT_CAPABILITY)
    result_of(await client.call("tools/call", params, capabilities={"sampling": {}}))


async def test_progress_is_sent_only_with_a_progress_token(
    client: McpClient, autojump_clock: MockClock
) -> None:
    """Runner-scored (tools-call-with-progress/tools-call-with-progress): with a token,
    at least three progress notifications echoing it, increasing, before the result
    on the same SSE stream; without one, a plain JSON answer (basic/patterns/progress)."""
    params = {"name": "test_tool_with_progress", "arguments": {}}
    with_token = await client.call(
        "tools/call", {**params, "_meta": meta(progressToken="progress-test-1")}
    )
    assert with_token.headers["content-type"] == "text/event-stream"
    *progress, final = with_token.events()
    assert len(progress) >= 3
    assert {p["method"] for p in progress} == {"notifications/progress"}
    assert {p["params"]["progressToken"] for p in progress} == {"progress-test-1"}
    values = [p["params"]["progress"] for p in progress]
    assert values == sorted(set(values))
    assert final["result"]["resultType"] == "complete"

    without = await client.call("tools/call", params)
    assert without.headers["content-type"] == "application/json"
    assert "result" in without.json()


async def test_an_integer_progress_token_keeps_its_type(
    client: McpClient, autojump_clock: MockClock
) -> None:
    """Spec-mandated (basic/patterns/progress: the notification echoes the token)."""
    params = {"name": "test_tool_with_progress", "_meta": meta(progressToken=7)}
    events = (await client.call("tools/call", params)).events()
    assert events[0]["params"]["progressToken"] == 7


async def test_without_a_log_level_no_log_message_is_sent(client: McpClient) -> None:
    """Runner-scored (server-stateless/sep-2575-server-no-log-without-loglevel)."""
    response = await client.call("tools/call", {"name": "test_logging_tool", "arguments": {}})
    assert response.headers["content-type"] == "application/json"
    assert "result" in response.json()


#: Each logLevel and what the fixture's debug, info and warning send at it (RFC 5424 order).
SENT_AT: dict[str, list[str]] = {
    "debug": ["debug", "info", "warning"],
    "info": ["info", "warning"],
    "notice": ["warning"],
    "warning": ["warning"],
    "error": [],
    "critical": [],
    "alert": [],
    "emergency": [],
}


@pytest.mark.parametrize(("level", "expected"), list(SENT_AT.items()), ids=list(SENT_AT))
async def test_log_messages_are_sent_at_and_above_the_requested_level(
    client: McpClient, level: str, expected: list[str]
) -> None:
    """Spec-mandated (server/utilities/logging §Per-request log level: only with logLevel, at or
    above it, on that request's stream; §Log Levels: the RFC 5424 order). The fixture logs
    debug, info and warning; above warning nothing of it is sent."""
    params = {"name": "test_logging_tool", "_meta": {**meta(), META_LOG_LEVEL: level}}
    response = await client.call("tools/call", params)
    *messages, _ = response.messages()
    assert [m["params"]["level"] for m in messages] == expected
    assert {m["method"] for m in messages} <= {"notifications/message"}
    assert result_of(response)["content"]


async def test_an_unknown_log_level_is_invalid_params(client: McpClient) -> None:
    """Spec-mandated (logging §Error Handling: an unknown logLevel SHOULD be -32602)."""
    params = {"name": "test_logging_tool", "_meta": {**meta(), META_LOG_LEVEL: "verbose"}}
    error_of(await client.call("tools/call", params), 400, INVALID_PARAMS)


async def test_no_request_is_ever_sent_on_a_response_stream(client: McpClient) -> None:
    """Runner-scored (server-stateless/sep-2575-http-server-no-independent-requests-on-stream):
    the elicitation tool asks through an InputRequiredResult, not an
    ``elicitation/create`` request (streamable-http §Receiving Messages: MUST NOT)."""
    message = request(
        "tools/call",
        {"name": "test_streaming_elicitation", "_meta": meta({"elicitation": {}}, progressToken=1)},
    )
    response = await client.post(message)
    result = result_of(response)
    assert result["resultType"] == "input_required"
    sent = (
        response.events()
        if response.headers["content-type"] == "text/event-stream"
        else [response.json()]
    )
    assert all("method" not in m or "id" not in m for m in sent)


@pytest.mark.parametrize("asked", [True, False], ids=["token", "no-token"])
@pytest.mark.parametrize(
    "reported",
    [
        ("half", None, None),
        (True, None, None),
        (float("nan"), None, None),
        (0.5, "one", None),
        (0.5, float("inf"), None),
        (0.5, 1.0, 5),
    ],
    ids=[
        "progress-text",
        "progress-boolean",
        "progress-nan",
        "total-text",
        "total-infinite",
        "message-number",
    ],
)
async def test_progress_the_schema_refuses_is_the_tools_bug_and_never_sent(
    caplog: pytest.LogCaptureFixture, reported: tuple[Any, Any, Any], asked: bool
) -> None:
    """Spec-mandated (schema $defs.ProgressNotificationParams: ``progress`` and
    ``total`` numbers, ``message`` a string; RFC 8259 §6: no NaN or infinity; tools
    §Error Handling; E-26): a tool reporting anything else fails, -32603, before any
    notification is sent, whether the request asked for progress or not, so that a
    tool tried without a token fails the same way."""
    server = Server("progress", "1.0.0")

    @server.tool(description="Reports the progress it is told to")
    async def report(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.report_progress(*reported)
        return "done"

    params = {"name": "report", "_meta": meta(progressToken="p") if asked else meta()}
    async with connect(server) as client:
        await assert_handler_fault(client, caplog, "tools/call", params, "handler failed")


@pytest.mark.parametrize("again", [1, 0.5], ids=["same", "lower"])
async def test_progress_that_does_not_increase_is_the_tools_bug_and_never_sent(
    caplog: pytest.LogCaptureFixture, again: float
) -> None:
    """Spec-mandated (basic/patterns/progress §Progress Flow: the ``progress`` value MUST
    increase with each notification; schema $defs.ProgressNotificationParams: ``total``
    is optional, a number when present; E-26): a first report without a total is sent
    without one; reporting the same value again, or a lower one, is the tool's bug,
    -32603, and that report is never sent."""
    server = Server("progress", "1.0.0")

    @server.tool(description="Reports 1, then the value it is told to")
    async def report(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.report_progress(1)
        await ctx.report_progress(again)
        return "done"

    params = {"name": "report", "_meta": meta(progressToken="p")}
    async with connect(server) as client:
        with caplog.at_level(logging.ERROR):
            response = await client.call("tools/call", params)
    progress, final = response.events()
    assert progress["params"] == {"progressToken": "p", "progress": 1}
    incident_of(final["error"], caplog.text)


@pytest.mark.parametrize("level", ["debug", None], ids=["log-level", "no-log-level"])
async def test_a_log_level_the_spec_does_not_name_is_the_tools_bug(
    caplog: pytest.LogCaptureFixture, level: str | None
) -> None:
    """Spec-mandated (server/utilities/logging §Log Levels: the eight syslog levels;
    schema $defs.LoggingLevel; E-26): a tool logging at another level fails, -32603,
    whether the request set ``logLevel`` or not, so that a tool tried without one
    fails the same way."""
    server = Server("logs", "1.0.0")

    @server.tool(description="Logs at a level that does not exist")
    async def verbose(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.log("verbose", "hello")
        return "done"

    params = {
        "name": "verbose",
        "_meta": {**meta(), META_LOG_LEVEL: level} if level else meta(),
    }
    async with connect(server) as client:
        await assert_handler_fault(client, caplog, "tools/call", params, "handler failed")


async def test_a_logger_that_is_no_string_is_the_tools_bug_and_never_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Spec-mandated (schema $defs.LoggingMessageNotificationParams: ``logger`` a string;
    E-26): a tool naming its logger otherwise fails, -32603, and nothing is sent."""
    server = Server("logs", "1.0.0")

    @server.tool(description="Logs under a logger that is a number")
    async def numbered(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.log("info", "hello", logger=5)  # type: ignore[arg-type]
        return "done"

    params = {"name": "numbered", "_meta": {**meta(), META_LOG_LEVEL: "debug"}}
    async with connect(server) as client:
        await assert_handler_fault(client, caplog, "tools/call", params, "handler failed")


async def test_a_context_kept_past_its_response_sends_nothing_on_another_request() -> None:
    """Spec-mandated (logging §Per-request log level: only on the stream carrying the
    response to the request that set the level, before it; basic/patterns/progress
    §Behavior Requirements): a tool that keeps its context and logs or reports progress
    through it while another request runs sends nothing on either request's stream."""
    server = Server("kept", "1.0.0")
    kept: list[RequestContext] = []

    @server.tool(description="Keeps its context and answers")
    async def keep(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        kept.append(ctx)
        return "kept"

    @server.tool(description="Logs and reports through the kept context")
    async def late(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await kept[0].log("error", "answered already")
        await kept[0].report_progress(arguments["progress"])
        return "late"

    asks = {**meta(progressToken="p"), META_LOG_LEVEL: "debug"}
    async with connect(server) as client:
        first = await client.call("tools/call", {"name": "keep", "_meta": asks})
        assert first.headers["content-type"] == "application/json"
        for progress, params in enumerate(({}, {"_meta": asks}), start=1):
            late_call = {"name": "late", "arguments": {"progress": progress}, **params}
            response = await client.call("tools/call", late_call)
            assert response.headers["content-type"] == "application/json"
            assert result_of(response)["content"][0]["text"] == "late"
