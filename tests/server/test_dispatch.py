"""The dispatcher's promises: faults become -32603, the detail stays in the log.

A handler that raises anything but an :class:`McpError` (or a tool's
:class:`ToolError`) is a server fault: the client gets -32603 with a generic
message and no detail, the log gets the traceback, and the server keeps
serving (tools §Error Handling; basic/index §Error Codes; spec-notes §1).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from trio.testing import MockClock

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server, ToolError
from presa_trio.testing import McpClient, meta, request, running
from presa_trio.wire import models
from presa_trio.wire.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
)
from presa_trio.wire.meta import META_SERVER_INFO
from tests.expect import assert_still_serving, error_of, incident_of, result_of
from tests.returning import server_returning

SECRET = "secret-detail-7f3a"


class Unserialisable:
    """A value no JSON encoder knows."""


def faulty_server(cancelled: trio.Event) -> Server:
    server = Server("faulty", "1.0.0")

    @server.tool(description="Fails with an unexpected exception.")
    async def explode(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        raise RuntimeError(SECRET)

    @server.tool(description="Reports progress, then fails with an unexpected exception.")
    async def explode_after_progress(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.report_progress(1, total=2)
        raise RuntimeError(SECRET)

    @server.tool(description="Reports progress, then needs sampling the client may lack.")
    async def sample_after_progress(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.report_progress(1, total=2)
        ctx.require_capability("sampling")
        return "sampled"

    @server.tool(description="Fails in a way it anticipated.")
    async def refuse(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        raise ToolError("The flight is full.")

    @server.tool(description="Returns a structured value JSON cannot hold.")
    async def opaque(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        return models.CallToolResult(
            [models.TextContent("x")], structured_content={SECRET: Unserialisable()}
        )

    @server.tool(description="Returns NaN, which JSON cannot hold.")
    async def not_a_number(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        return models.CallToolResult(
            [models.TextContent("x")], structured_content={"ratio": float("nan")}
        )

    @server.tool(description="Sends a progress message JSON cannot hold.")
    async def opaque_progress(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.report_progress(1, message=Unserialisable())  # type: ignore[arg-type]
        return "unreachable"

    @server.tool(description="Reports progress, then waits until cancelled.")
    async def wait_forever(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.report_progress(1)
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()

    @server.tool(description="Exits, as sys.exit() or argparse's exit inside it would.")
    async def exits(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        raise SystemExit(SECRET)

    @server.tool(description="Exits in a nursery of its own.", nursery=True)
    async def exits_supervising(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        raise SystemExit(SECRET)

    @server.prompt(description="Fails with an unexpected exception.")
    async def broken_prompt(ctx: RequestContext, arguments: dict[str, str]) -> Any:
        raise KeyError(SECRET)

    @server.resource("test://broken", name="broken", description="Fails to read.")
    async def broken_resource(ctx: RequestContext) -> str:
        raise OSError(SECRET)

    return server


@pytest.fixture
def cancelled() -> trio.Event:
    return trio.Event()


@pytest.fixture
async def faulty(cancelled: trio.Event) -> AsyncIterator[McpClient]:
    async with running(McpApp.for_server(faulty_server(cancelled))) as client:
        yield client


FAULTS = [
    ("tools/call", {"name": "explode"}),
    ("tools/call", {"name": "exits"}),
    ("tools/call", {"name": "exits_supervising"}),
    ("prompts/get", {"name": "broken_prompt"}),
    ("resources/read", {"uri": "test://broken"}),
]


@pytest.mark.parametrize(("method", "params"), FAULTS, ids=[str(p) for _, p in FAULTS])
async def test_an_unexpected_exception_is_a_generic_internal_error(
    faulty: McpClient, caplog: pytest.LogCaptureFixture, method: str, params: dict[str, Any]
) -> None:
    """Spec-mandated (tools §Error Handling, resources §Error Handling: any other
    exception is -32603 with a generic message, detail to the log only; E-05), a
    ``SystemExit`` too, which ends the request and never the server. HTTP
    500 is presa's choice (spec-notes §1), and so is ``data.incident``: the same id
    is in the log record of the cause."""
    with caplog.at_level(logging.ERROR):
        response = await faulty.call(method, params)
    error = error_of(response, 500, INTERNAL_ERROR)
    incident_of(error, caplog.text)
    assert SECRET.encode() not in response.body
    assert SECRET in caplog.text
    await assert_still_serving(faulty)


async def test_a_fault_after_the_stream_started_is_the_final_event(
    faulty: McpClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Spec-mandated (streamable-http §Receiving Messages: once SSE has started the
    status is 200 and the error is the final event; E-11)."""
    params = {"name": "explode_after_progress", "_meta": meta(progressToken="p")}
    with caplog.at_level(logging.ERROR):
        response = await faulty.call("tools/call", params)
    assert response.status == 200
    assert response.headers["content-type"] == "text/event-stream"
    progress, final = response.events()
    assert progress["method"] == "notifications/progress"
    assert final["id"] == 1
    assert final["error"]["code"] == INTERNAL_ERROR
    assert SECRET.encode() not in response.body
    assert SECRET in caplog.text


async def test_a_missing_capability_found_after_the_stream_started_is_its_final_event(
    faulty: McpClient,
) -> None:
    """Spec-mandated (streamable-http §Receiving Messages; E-11) where basic/index §_meta
    asks 400 for -32021 (spec-notes §71a): once a notification has opened the stream, its
    200 is sent, so the -32021 the handler finds afterwards is the stream's last event,
    code and ``data.requiredCapabilities`` as a 400 would carry them; without the
    notification the same refusal is a plain 400."""
    streamed = {"name": "sample_after_progress", "_meta": meta({}, progressToken="p")}
    response = await faulty.call("tools/call", streamed)
    assert (response.status, response.headers["content-type"]) == (200, "text/event-stream")
    progress, final = response.events()
    assert progress["method"] == "notifications/progress"
    assert final["error"]["code"] == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert final["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    quiet = {"name": "sample_after_progress", "_meta": meta({})}
    error = error_of(
        await faulty.call("tools/call", quiet), 400, MISSING_REQUIRED_CLIENT_CAPABILITY
    )
    assert error == final["error"]


@pytest.mark.parametrize("tool", ["opaque", "not_a_number", "opaque_progress"])
async def test_a_result_json_cannot_hold_is_an_internal_error(
    faulty: McpClient, caplog: pytest.LogCaptureFixture, tool: str
) -> None:
    """Spec-mandated (tools §Error Handling: a server fault is -32603; RFC 8259 §6: NaN is not
    JSON; E-05): a value the encoder refuses is a fault of the handler, answered like any
    other, never a broken response."""
    params = {"name": tool, "_meta": meta(progressToken="p")}
    with caplog.at_level(logging.ERROR):
        response = await faulty.call("tools/call", params)
    error_of(response, 500, INTERNAL_ERROR)
    assert SECRET.encode() not in response.body
    assert b"NaN" not in response.body
    assert caplog.records
    await assert_still_serving(faulty)


@pytest.mark.parametrize(
    ("returned", "logged"),
    [
        (None, "returned NoneType None, not a result object"),
        ({"_meta": 5}, "returned a result whose _meta is int 5, not an object"),
        ({"_meta": ["x"]}, "returned a result whose _meta is list ['x'], not an object"),
    ],
    ids=["none", "meta-number", "meta-list"],
)
async def test_a_handler_returning_no_result_object_is_an_internal_error(
    caplog: pytest.LogCaptureFixture, returned: Any, logged: str
) -> None:
    """Spec-mandated (basic/index §Result Responses: the ``result`` is an object with
    ``resultType``; §Error Codes: -32603; schema ``$defs.Result``: its ``_meta`` an
    object; E-05): a method handler of an extension that returns something else is a
    server fault, answered -32603 with a JSON-RPC body, never a broken exchange."""

    server = server_returning("hollow", returned)
    async with running(McpApp.for_server(server)) as client:
        with caplog.at_level(logging.ERROR):
            response = await client.call("hollow/get")
        incident_of(error_of(response, 500, INTERNAL_ERROR), caplog.text)
        assert f"handler for hollow/get {logged}" in caplog.text
        await assert_still_serving(client)


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), Unserialisable()], ids=["nan", "infinity", "object"]
)
async def test_a_method_result_json_cannot_hold_is_an_internal_error(
    caplog: pytest.LogCaptureFixture, value: Any
) -> None:
    """Spec-mandated (basic/index §Error Codes: -32603 Internal error; RFC 8259 §6: NaN
    and Infinity are not JSON numbers; E-05): a method handler of an extension whose
    result the encoder refuses is answered -32603 with a JSON-RPC body, never a
    broken response; the log says which method's result it was."""

    server = server_returning("odd", {"value": value})
    async with running(McpApp.for_server(server)) as client:
        with caplog.at_level(logging.ERROR):
            response = await client.call("odd/get")
        incident_of(error_of(response, 500, INTERNAL_ERROR), caplog.text)
        assert b"NaN" not in response.body
        assert b"Infinity" not in response.body
        assert "the result of odd/get cannot be written as JSON" in caplog.text
        await assert_still_serving(client)


async def test_an_anticipated_tool_failure_is_an_error_result(faulty: McpClient) -> None:
    """Runner-scored (tools-call-error/tools-call-error; E-12): a ToolError is a result with
    ``isError: true`` and the text, not a JSON-RPC error (tools §Error Handling)."""
    result = result_of(await faulty.call("tools/call", {"name": "refuse"}))
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "The flight is full."}]
    assert result["resultType"] == "complete"


async def test_closing_the_response_stream_cancels_the_handler(
    faulty: McpClient, cancelled: trio.Event
) -> None:
    """Spec-mandated (streamable-http §Cancellation: closing the SSE response stream
    MUST be treated as cancellation; the server SHOULD stop work): the handler is
    cancelled and the app call returns."""
    message = request("tools/call", {"name": "wait_forever", "_meta": meta(progressToken=1)})
    with trio.fail_after(5):
        async with faulty.stream(message) as stream:
            assert (await stream.next_message())["method"] == "notifications/progress"
            assert not cancelled.is_set()
        await cancelled.wait()
    await assert_still_serving(faulty)


@pytest.mark.parametrize("leave_after", [0.0, 60.0])
async def test_a_client_that_leaves_is_noticed_at_once(
    faulty: McpClient, cancelled: trio.Event, autojump_clock: MockClock, leave_after: float
) -> None:
    """presa-defined (spec-notes §48; http/exchange.py): the cancellation above comes at
    the moment the client leaves, whether at once or after a minute, since every
    exchange's watcher runs from the start of its handler."""
    message = request("tools/call", {"name": "wait_forever", "_meta": meta(progressToken=1)})
    async with faulty.stream(message) as stream:
        assert (await stream.next_message())["method"] == "notifications/progress"
        await trio.sleep(leave_after)
        left = trio.current_time()
    with trio.fail_after(1):
        await cancelled.wait()
    assert trio.current_time() == left
    await assert_still_serving(faulty)


async def test_every_result_carries_result_type_and_server_info(faulty: McpClient) -> None:
    """Spec-mandated (schema $defs.Result: resultType required; $defs.ResultMetaObject:
    serverInfo SHOULD be present; basic/index §ResultType, §_meta; T-67, T-80)."""
    for method in ("server/discover", "tools/list", "prompts/list", "resources/list"):
        result = result_of(await faulty.call(method))
        assert result["resultType"] == "complete"
        assert result["_meta"][META_SERVER_INFO] == {"name": "faulty", "version": "1.0.0"}


@pytest.mark.parametrize(
    "method",
    [
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "completion/complete",
    ],
)
async def test_methods_of_a_capability_not_offered_are_not_found(method: str) -> None:
    """Runner-scored (server-stateless/sep-2575-discover-capabilities-match-handlers; H-28, E-03):
    a server with nothing registered answers these 404 -32601 (discover §Response;
    streamable-http §Protocol Version Header)."""
    async with running(McpApp.for_server(Server("bare", "1.0.0"))) as client:
        message = request(method, {"name": "x", "uri": "test://x"})
        error_of(await client.post(message), 404, METHOD_NOT_FOUND)
        await assert_still_serving(client)
