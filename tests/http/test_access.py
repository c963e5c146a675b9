"""The access line: one record per exchange on ``presa_trio.access``, its fields on the record.

Rules: the access log is ASGI middleware around the real app; each record
goes through the logging module's filters and handlers like any other, its
message is the text line and its fields are attributes (``extra``), which
the JSON-lines format writes by name. While the logging configuration is
still serve's own, the same line is written without a record, and held with
others until the access log's writer writes them; anything a user adds to it
gets records again, at once.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, cast

import pytest
import trio
from hypercorn.typing import HTTPScope

from presa_trio import logs
from presa_trio.http.access import AccessLog, _Exchange, batched_lines, log_exchange
from presa_trio.http.app import McpApp
from presa_trio.logs import JsonLines, TextLines
from presa_trio.server import RequestContext, Server
from presa_trio.testing import McpClient, headers_for, meta, request, running
from presa_trio.testing.driver import http_scope

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


def greet_result(size: int) -> dict[str, object]:
    """The fields but ``ms`` of a ``tools/call greet`` answered with a result of ``size`` bytes."""
    return {
        "status": 200,
        "bytes": size,
        "mcp_method": "tools/call",
        "mcp_name": "greet",
        "jsonrpc_error": None,
        "incident": None,
    }


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
    assert fields == greet_result(len(response.body))
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


async def test_a_head_request_logs_no_body_bytes(logged: McpClient, kept: Kept) -> None:
    """presa-defined (http/access.py; RFC 9110 §9.3.2: a HEAD response has no body, the
    server leaves out the one the app gives it): a HEAD is logged with ``bytes=0``,
    where its GET logs the body it was sent."""
    got = await logged.post(b"", {"host": "localhost"}, method="GET", path="/healthz")
    await logged.post(b"", {"host": "localhost"}, method="HEAD", path="/healthz")
    by_get, by_head = kept.records
    assert (by_get.status, by_get.bytes) == (200, len(got.body))  # type: ignore[attr-defined]
    assert got.body
    assert (by_head.status, by_head.bytes) == (200, 0)  # type: ignore[attr-defined]
    assert by_head.getMessage().startswith("HEAD /healthz status=200 bytes=0 ms=")


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


async def test_a_value_a_terminal_would_obey_is_escaped(logged: McpClient, kept: Kept) -> None:
    """presa-defined (logs): a path or header value holding a control character (ESC,
    NUL), a line separator or a right-to-left override is written escaped, so a
    client cannot write escape sequences into an operator's terminal; a printable
    name stays as it is sent."""
    message = request("tools/call", {"name": "greet", "arguments": {}})
    hostile = {**headers_for(message), "mcp-name": "\x1b[2J\x85greet"}
    await logged.post(message, hostile, path="/mcp\x00\u2028\u202ex")
    await logged.post(message, {**headers_for(message), "mcp-name": "grüße"})
    # With no space in it, a value is still written escaped if it is not printable.
    await logged.post(message, {**headers_for(message), "mcp-name": "\x1b[2J"}, path="/\u202emcp")
    hostile_line, printable_line, unspaced_line = (record.getMessage() for record in kept.records)
    assert hostile_line.isprintable()
    assert ' "/mcp\\u0000\\u2028\\u202ex" ' in hostile_line
    assert ' mcp-name="\\u001b[2J\\u0085greet"' in hostile_line
    assert " mcp-name=grüße" in printable_line
    assert unspaced_line.isprintable()
    assert ' "/\\u202emcp" ' in unspaced_line
    assert ' mcp-name="\\u001b[2J"' in unspaced_line


async def test_a_json_line_a_terminal_would_obey_is_written_in_ascii(
    logged: McpClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """presa-defined (docs/deployment.md, "The access log"): in JSON lines too, a line
    whose path or header holds a character that is not printable (a line separator,
    NEL, a right-to-left override) is written in ASCII, so it is one line wherever it
    is split into lines and cannot reorder a terminal; read back, each field is what
    was sent. A printable name stays as it is sent."""
    message = request("tools/call", {"name": "greet", "arguments": {}})
    with configured("json", monkeypatch) as stderr:
        hostile = {**headers_for(message), "mcp-name": "\x85greet\x9b2J"}
        await logged.post(message, hostile, path="/mcp\u2028\u202ex")
        await logged.post(message, {**headers_for(message), "mcp-name": "grüße"})
    hostile_line, printable_line = stderr.getvalue().splitlines()
    assert hostile_line.isascii()
    entry = json.loads(hostile_line)
    assert (entry["path"], entry["mcp_name"]) == ("/mcp\u2028\u202ex", "\x85greet\x9b2J")
    assert json.loads(printable_line)["mcp_name"] == "grüße"
    assert '"mcp_name": "grüße"' in printable_line


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


async def test_an_exchange_that_ends_before_its_response_has_no_status(kept: Kept) -> None:
    """presa-defined (docs/deployment.md, "The access log"): a client that goes away
    before any response began still leaves its line, with ``status=None bytes=0``."""
    began = trio.Event()
    served = Server("access", "1.0.0")

    @served.tool(description="Waits until its call is cancelled.")
    async def wait(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        began.set()
        await trio.sleep_forever()

    app = McpApp.for_server(served)
    message = request("tools/call", {"name": "wait", "arguments": {}})
    pending = [json.dumps(message).encode()]

    async def receive() -> dict[str, Any]:
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        await began.wait()
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        raise AssertionError(f"nothing is sent to a client that went away: {event}")

    async with running(app):
        await AccessLog(app)(http_scope(headers_for(message)), receive, send)  # type: ignore[arg-type]
    (record,) = kept.records
    assert (record.status, record.bytes) == (None, 0)  # type: ignore[attr-defined]
    assert "POST /mcp status=None bytes=0 ms=" in record.getMessage()


#: A clock reading whose milliseconds are exact in binary: both routes read ``time.time``.
NOW = 1_764_640_000.25
ANSWERS = {
    "a result": (200, b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}', None),
    "an error with an incident": (
        200,
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error",'
        b'"data":{"incident":"7f3a"}}}',
        " jsonrpc-error=-32603 incident=7f3a",
    ),
}


@contextlib.contextmanager
def configured(form: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """``presa-trio serve``'s logging (``logs.configure``) with stderr in memory; undone after,
    the logging module's record switches (``logs.skip_unused_record_fields``) too."""
    root, hypercorn = logging.getLogger(), logging.getLogger("hypercorn.error")
    handlers, levels = root.handlers[:], (root.level, hypercorn.level)
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    for switch in ("_srcfile", "logThreads", "logProcesses", "logMultiprocessing"):
        monkeypatch.setattr(logging, switch, getattr(logging, switch))
    logs.configure("INFO", form)
    try:
        yield stderr
    finally:
        root.handlers[:] = handlers
        root.setLevel(levels[0])
        hypercorn.setLevel(levels[1])


def one_exchange(body: bytes) -> None:
    """The access line of a ``tools/call greet`` answered with ``body``, after 1.25 ms."""
    scope = cast(
        HTTPScope,
        {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "headers": [(b"mcp-method", b"tools/call"), (b"mcp-name", b"greet")],
        },
    )
    exchange = _Exchange(downstream=None, status=200, sent=len(body), last=body)  # type: ignore[arg-type]
    log_exchange(scope, exchange, 0.00126)


@pytest.mark.parametrize(
    ("seconds", "written"),
    [
        (0.0, "0.0"),
        (0.00126, "1.3"),
        (0.09991, "99.9"),
        (0.09996, "100.0"),
        (0.1, "100.0"),
        (12.34567, "12345.7"),
        (3600.0, "3600000.0"),
    ],
)
def test_the_duration_is_in_milliseconds_to_a_tenth_however_long(
    seconds: float, written: str, kept: Kept
) -> None:
    """presa-defined (docs/deployment.md, "The access log"): ``ms`` is the exchange's
    duration in milliseconds to a tenth, looked up under a tenth of a second and
    written out above it, the same in the line and in the record's field."""
    scope = cast(HTTPScope, {"type": "http", "method": "POST", "path": "/mcp", "headers": []})
    exchange = _Exchange(downstream=None, status=200, sent=0, last=b"")  # type: ignore[arg-type]
    log_exchange(scope, exchange, seconds)
    (record,) = kept.records
    assert f" ms={written}" in record.getMessage()
    assert record.ms == float(written)  # type: ignore[attr-defined]


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("form", logs.FORMATS)
def test_the_direct_line_is_the_records_line(
    form: str, answer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """presa-defined (logs): while the logging configuration is serve's own, the line is
    written without a record, byte for byte what the record's way through the logger
    and its handler writes: every field, the error code and incident, the timestamp."""
    status, body, error = ANSWERS[answer]
    monkeypatch.setattr(time, "time", lambda: NOW)
    monkeypatch.setattr(time, "time_ns", lambda: int(NOW * 1e9))
    access = logging.getLogger("presa_trio.access")
    with configured(form, monkeypatch) as stderr:
        assert logs.direct_handler(access, logging.INFO) is not None
        one_exchange(body)
        direct = stderr.getvalue()
        stderr.seek(0)
        stderr.truncate()
        everything = logging.Filter()  # lets every record through, so the record is made
        access.addFilter(everything)
        try:
            assert logs.direct_handler(access, logging.INFO) is None
            one_exchange(body)
        finally:
            access.removeFilter(everything)
        assert stderr.getvalue() == direct
    line = (
        f"POST /mcp status={status} bytes={len(body)} ms=1.3 mcp-method=tools/call mcp-name=greet"
    )
    line += error or ""
    if form == "text":
        second = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(NOW))
        assert direct == f"{second},250 INFO presa_trio.access: {line}\n"
    else:
        code, incident = (-32603, "7f3a") if error else (None, None)
        assert direct.endswith("\n")
        assert json.loads(direct) == {
            "time": "2025-12-02T01:46:40.250+00:00",
            "level": "INFO",
            "logger": "presa_trio.access",
            "message": line,
            "status": status,
            "bytes": len(body),
            "ms": 1.3,
            "mcp_method": "tools/call",
            "mcp_name": "greet",
            "jsonrpc_error": code,
            "incident": incident,
            "method": "POST",
            "path": "/mcp",
        }


def on_the_access_logger(kept: Kept) -> Callable[[], None]:
    access = logging.getLogger("presa_trio.access")
    access.addHandler(kept)
    return lambda: access.removeHandler(kept)


def on_the_root(kept: Kept) -> Callable[[], None]:
    root = logging.getLogger()
    root.addHandler(kept)
    return lambda: root.removeHandler(kept)


def through_a_filter_on_the_access_logger(kept: Kept) -> Callable[[], None]:
    """A filter that keeps what it sees, as a user's filter that enriches records might."""
    access = logging.getLogger("presa_trio.access")

    def keep(record: logging.LogRecord) -> bool:
        kept.records.append(record)
        return True

    access.addFilter(keep)
    return lambda: access.removeFilter(keep)


def through_a_filter_on_the_stderr_handler(kept: Kept) -> Callable[[], None]:
    (handler,) = logging.getLogger().handlers

    def keep(record: logging.LogRecord) -> bool:
        kept.records.append(record)
        return True

    handler.addFilter(keep)
    return lambda: handler.removeFilter(keep)


@pytest.mark.parametrize(
    "added",
    [
        on_the_access_logger,
        on_the_root,
        through_a_filter_on_the_access_logger,
        through_a_filter_on_the_stderr_handler,
    ],
)
async def test_what_a_user_adds_at_run_time_gets_every_record(
    added: Callable[[Kept], Callable[[], None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """presa-defined (logs): a handler or filter added to serve's logging while it serves
    sees the next exchange's record with every field, and stderr still gets its line."""
    app = McpApp.for_server(server())
    call = request("tools/call", {"name": "greet", "arguments": {}})
    kept = Kept()
    with configured("text", monkeypatch) as stderr:
        async with running(app):
            client = McpClient(app, asgi=AccessLog(app))
            await client.post(call)
            assert stderr.getvalue().count(" INFO presa_trio.access: POST /mcp ") == 1
            remove = added(kept)
            try:
                response = await client.post(call)
            finally:
                remove()
    (record,) = kept.records
    fields = {name: getattr(record, name) for name in FIELDS if name != "ms"}
    assert fields == greet_result(len(response.body))
    assert stderr.getvalue().count(" INFO presa_trio.access: POST /mcp ") == 2
    assert stderr.getvalue().splitlines()[-1].endswith(record.getMessage())


def access_lines(stderr: io.StringIO) -> int:
    return stderr.getvalue().count(" INFO presa_trio.access: POST /mcp ")


async def test_under_serve_s_configuration_lines_are_held_and_all_written_by_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """presa-defined (docs/deployment.md, "The access log"): while serving, the lines wait
    in memory, not on stderr; when serving ends, every one is written, in order."""
    with configured("text", monkeypatch) as stderr:
        async with batched_lines(interval=3600):
            for body in ANSWERS.values():
                one_exchange(body[1])
            assert access_lines(stderr) == 0
        written = stderr.getvalue().splitlines()
    assert len(written) == 2
    assert " incident=7f3a" not in written[0]
    assert written[1].endswith(" incident=7f3a")


@pytest.mark.parametrize("form", logs.FORMATS)
async def test_a_held_line_is_timed_at_its_exchange_s_end_not_at_its_write(
    form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """presa-defined (docs/deployment.md, "The access log"): a held line's time is its
    request's end, though its text is made when its batch is written."""
    now = [NOW]
    monkeypatch.setattr(time, "time", lambda: now[0])
    with configured(form, monkeypatch) as stderr:
        async with batched_lines(interval=3600):
            one_exchange(b"{}")
            now[0] = NOW + 61
        (written,) = stderr.getvalue().splitlines()
    if form == "json":
        assert json.loads(written)["time"] == "2025-12-02T01:46:40.250+00:00"
    else:
        assert written.startswith(f"{TextLines().stamp(NOW)} INFO presa_trio.access: ")


async def test_held_lines_are_written_every_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """presa-defined (docs/deployment.md, "The access log"): the writer writes what is
    held each interval, while serving goes on."""
    with configured("text", monkeypatch) as stderr:
        async with batched_lines(interval=0.01):
            one_exchange(b"{}")
            with trio.fail_after(5):
                while True:  # polled: the writer writes from a worker thread
                    if access_lines(stderr) == 1:
                        break
                    await trio.sleep(0.01)


async def test_a_full_batch_is_written_before_its_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """presa-defined (docs/deployment.md, "The access log"): once BATCH_LINES lines are
    held, the writer writes them without waiting for its interval."""
    with configured("text", monkeypatch) as stderr:
        async with batched_lines(interval=3600):
            for _ in range(logs.BATCH_LINES):
                one_exchange(b"{}")
            with trio.fail_after(5):
                while True:  # polled: the writer writes from a worker thread
                    if access_lines(stderr) == logs.BATCH_LINES:
                        break
                    await trio.sleep(0.01)


async def test_a_configuration_of_the_user_s_own_gets_each_record_at_once(kept: Kept) -> None:
    """presa-defined (docs/deployment.md, "The access log"): with handlers of the user's
    own, nothing is held: the record reaches them as its exchange ends."""
    async with batched_lines(interval=3600):
        one_exchange(b"{}")
        assert len(kept.records) == 1
