"""The access line: one record per exchange on ``presa_trio.access``, its fields on the record.

Rules: the access log is ASGI middleware around the real app; each record
goes through the logging module's filters and handlers like any other, its
message is the text line and its fields are attributes (``extra``), which
the JSON-lines format writes by name.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from presa_trio.http.access import AccessLog
from presa_trio.http.app import McpApp
from presa_trio.logs import JsonLines, TextLines
from presa_trio.server import RequestContext, Server
from presa_trio.testing import McpClient, headers_for, meta, request, running

FIELDS = ("status", "bytes", "ms", "mcp_method", "mcp_name", "jsonrpc_error", "incident")


def server() -> Server:
    served = Server("access", "1.0.0")

    @served.tool(description="Answers with a fixed text.")
    async def greet(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        return "hello"

    @served.tool(description="Reports progress, then fails with an unexpected exception.")
    async def explode_after_progress(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await ctx.report_progress(1, total=2)
        raise RuntimeError("a defect")

    return served


class Kept(logging.Handler):
    """Every record that reaches it, as the logging module hands it over."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept() -> Iterator[Kept]:
    handler = Kept()
    logger = logging.getLogger("presa_trio.access")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.fixture
async def logged() -> AsyncIterator[McpClient]:
    app = McpApp.for_server(server())
    async with running(app):
        yield McpClient(app, asgi=AccessLog(app))


async def test_a_result_is_one_record_with_its_fields(logged: McpClient, kept: Kept) -> None:
    """presa-defined (logs): a result's line names the request and the answer; every
    field is on the record; both formats write it."""
    response = await logged.post(request("tools/call", {"name": "greet", "arguments": {}}))
    assert response.status == 200
    (record,) = kept.records
    assert (record.name, record.levelno, record.method, record.path) == (  # type: ignore[attr-defined]
        "presa_trio.access",
        logging.INFO,
        "POST",
        "/mcp",
    )
    fields = {name: getattr(record, name) for name in FIELDS}
    assert isinstance(fields.pop("ms"), float)
    assert fields == {
        "status": 200,
        "bytes": len(response.body),
        "mcp_method": "tools/call",
        "mcp_name": "greet",
        "jsonrpc_error": None,
        "incident": None,
    }
    line = f"POST /mcp status=200 bytes={len(response.body)} ms={record.ms} "  # type: ignore[attr-defined]
    assert record.getMessage() == line + "mcp-method=tools/call mcp-name=greet"
    assert (
        TextLines()
        .format(record)
        .endswith(" INFO presa_trio.access: " + line + "mcp-method=tools/call mcp-name=greet")
    )
    written = json.loads(JsonLines().format(record))
    assert {name: written[name] for name in FIELDS} == {
        name: getattr(record, name) for name in FIELDS
    }
    assert (written["logger"], written["message"]) == ("presa_trio.access", record.getMessage())


async def test_an_error_in_an_event_stream_gives_its_code_and_incident(
    logged: McpClient, kept: Kept
) -> None:
    """presa-defined (logs): the final event of a stream that ends in a -32603 gives the
    line its code and ``data.incident``, the id the fault's own log record carries."""
    params = {"name": "explode_after_progress", "arguments": {}, "_meta": meta(progressToken="p")}
    response = await logged.post(request("tools/call", params))
    assert response.headers["content-type"] == "text/event-stream"
    error = response.events()[-1]["error"]
    (record,) = kept.records
    assert (record.status, record.bytes) == (200, len(response.body))  # type: ignore[attr-defined]
    assert (record.jsonrpc_error, record.incident) == (-32603, error["data"]["incident"])  # type: ignore[attr-defined]
    assert record.getMessage().endswith(
        f" jsonrpc-error=-32603 incident={error['data']['incident']}"
    )


async def test_a_value_that_is_not_bare_is_a_json_string(logged: McpClient, kept: Kept) -> None:
    """presa-defined (logs): a header value with a space or a quote is written as a JSON
    string, so a line always splits into its fields; a rejection is logged too."""
    message = request("tools/call", {"name": 'a "b"', "arguments": {}})
    response = await logged.post(message, {**headers_for(message), "mcp-name": 'a "b"'})
    (record,) = kept.records
    assert record.mcp_name == 'a "b"'  # type: ignore[attr-defined]
    assert f' mcp-name="a \\"b\\"" jsonrpc-error={record.jsonrpc_error}' in record.getMessage()  # type: ignore[attr-defined]
    assert record.status == response.status  # type: ignore[attr-defined]


async def test_a_filter_on_the_logger_sees_every_record(logged: McpClient, kept: Kept) -> None:
    """presa-defined (logs): the access records pass the logger's filters, as any
    record does: a filter that drops them leaves no line."""
    dropping = logging.Filter("nobody")
    logger = logging.getLogger("presa_trio.access")
    logger.addFilter(dropping)
    try:
        await logged.post(request("tools/call", {"name": "greet", "arguments": {}}))
    finally:
        logger.removeFilter(dropping)
    assert kept.records == []
