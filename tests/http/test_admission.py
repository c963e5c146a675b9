"""The admission ladder (spec-notes §10), rung by rung, through the real ASGI app.

Rules of this file: every request goes through ``McpApp`` in-process; each
rejection asserts the HTTP status and, once a JSON-RPC id could be read, the
JSON-RPC code and the echoed id; and each test ends by showing the server
still answers a good request.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
import trio
from trio.testing import MockClock, wait_all_tasks_blocked

from presa_trio.demo import build_server
from presa_trio.http.admission import AdmissionPolicy
from presa_trio.http.app import McpApp
from presa_trio.server.open_streams import MAX_LONG_LIVED_BODY
from presa_trio.testing import McpClient, headers_for, request, running
from presa_trio.testing.driver import http_scope
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
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
)
from tests.expect import assert_still_serving, error_of, rejection_of, result_of

DISCOVER = request("server/discover")


def with_headers(message: dict[str, Any], **changes: str | None) -> dict[str, str]:
    """The correct headers for ``message``, with some replaced (None removes one)."""
    headers = headers_for(message)
    for name, value in changes.items():
        key = name.replace("_", "-")
        if value is None:
            headers.pop(key, None)
        else:
            headers[key] = value
    return headers


# --- before rung 1: a server that is not running ----------------------------


async def test_an_app_whose_lifespan_has_not_started_answers_503() -> None:
    """presa-defined (http/app.py): requests are served only while the server-lifetime
    nursery runs (extensions, the token verifier); before the ASGI lifespan starts
    it, or after it ends, a request gets 503, never a 500; once it runs, it is served."""
    app = McpApp.for_server(build_server())
    rejection_of(await McpClient(app).post(DISCOVER), 503)
    async with running(app) as client:
        await assert_still_serving(client)
    rejection_of(await McpClient(app).post(DISCOVER), 503)


async def test_a_lifetime_that_ends_while_a_body_is_read_answers_503() -> None:
    """presa-defined (http/app.py): the server-lifetime nursery may end (the task runner
    fails) between a request's head, admitted while it ran, and the end of its body; the
    request is then answered 503, as one that came after, never a 500."""
    app = McpApp.for_server(build_server())
    body = json.dumps(DISCOVER).encode()
    head_read = trio.Event()
    body_sent = trio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        head_read.set()
        await body_sent.wait()
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    async with running(app):
        lifetime = app.lifetime
        assert lifetime is not None
        async with trio.open_nursery() as nursery:
            asgi: Any = app  # the scope, receive and send of an ASGI server, as plain dicts
            nursery.start_soon(asgi, http_scope(headers_for(DISCOVER)), receive, send)
            await head_read.wait()
            lifetime.cancel_scope.cancel()
            await wait_all_tasks_blocked()
            assert app.lifetime is None
            body_sent.set()
    assert sent[0]["status"] == 503


# --- rung 1: the endpoint ------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/mcp/", "/other", "/MCP"])
async def test_another_path_is_not_found(client: McpClient, path: str) -> None:
    """Spec-mandated (streamable-http §Sending Messages: one MCP endpoint; H-01):
    404."""
    rejection_of(await client.post(DISCOVER, path=path), 404)
    await assert_still_serving(client)


# --- rung 2: DNS rebinding -----------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "evil.example.com",
        "evil.example.com:3000",
        "localhost.evil.example.com",
        None,
        "[::1]evil.example",
        "[::1",
        "[evil]",
        "localhost:3000:3000",
        "localhost:3000@evil.example",
        "localhost/evil",
        "localhost\xa0",
        "\x85localhost",
    ],
)
async def test_a_host_not_allowed_is_misdirected(client: McpClient, host: str | None) -> None:
    """Runner-scored (dns-rebinding-protection/localhost-host-rebinding-rejected; H-03): a
    foreign or missing Host is refused; presa answers 421 (spec-notes §4). Only spaces
    and tabs around it are trimmed (RFC 9110 §5.6.3), so a Host ending in another byte
    is unreadable, not loopback."""
    rejection_of(await client.post(DISCOVER, with_headers(DISCOVER, host=host)), 421)
    await assert_still_serving(client)


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example.com",
        "http://localhost.evil.example.com",
        "http://localhost@evil.example.com",
        "null",
        "file://localhost",
        "localhost",
        "http://[::1",
        "http://[evil]",
        "http://localhost:3000@evil.example",
        "http://[::1]evil.example",
        "http://localhost:3000/path",
        "http://localhost http://evil.example",
        "ws://localhost",
        "ftp://localhost:3000",
    ],
)
async def test_an_origin_not_allowed_is_forbidden(client: McpClient, origin: str) -> None:
    """Spec-mandated (streamable-http §Security & Endpoint: an invalid Origin MUST get
    403; H-02)."""
    rejection_of(await client.post(DISCOVER, with_headers(DISCOVER, origin=origin)), 403)
    await assert_still_serving(client)


async def test_every_origin_and_host_header_counts(client: McpClient) -> None:
    """Spec-mandated (streamable-http §Security & Endpoint; H-02, H-03): a second Origin or
    Host header is not ignored — two of either are refused, even when the first is good."""
    good = list(with_headers(DISCOVER, origin="http://localhost:3000").items())
    two_origins = [*good, ("origin", "http://evil.example")]
    two_hosts = [*good, ("host", "localhost:3000")]
    rejection_of(await client.post(DISCOVER, two_origins), 403)
    rejection_of(await client.post(DISCOVER, two_hosts), 421)
    await assert_still_serving(client)


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("localhost:3000", "http://localhost:3000"),
        ("localhost:", "HTTP://LOCALHOST"),
        ("127.0.0.1:3000", "https://127.0.0.1"),
        ("[::1]:3000", "http://[::1]:3000"),
        ("LOCALHOST", None),
    ],
)
async def test_loopback_hosts_and_origins_are_accepted(
    client: McpClient, host: str, origin: str | None
) -> None:
    """Runner-scored (dns-rebinding-protection/localhost-host-valid-accepted; H-04): loopback
    names, with or without a port, as Host and as http(s) Origin."""
    headers = with_headers(DISCOVER, host=host, origin=origin)
    assert result_of(await client.post(DISCOVER, headers))["supportedVersions"]


async def test_the_allowlists_are_configurable() -> None:
    """presa-defined (spec-notes §4: both allowlists configurable; H-04): a deployment
    names its own host; loopback is then refused unless listed."""
    app = McpApp.for_server(
        build_server(),
        policy=AdmissionPolicy(
            allowed_hosts=frozenset({"mcp.example.com"}),
            allowed_origin_hosts=frozenset({"app.example.com"}),
        ),
    )
    async with running(app) as client:
        own = with_headers(DISCOVER, host="mcp.example.com", origin="https://app.example.com")
        result_of(await client.post(DISCOVER, own))
        rejection_of(await client.post(DISCOVER, with_headers(DISCOVER)), 421)
        foreign = with_headers(DISCOVER, host="mcp.example.com", origin="http://localhost")
        rejection_of(await client.post(DISCOVER, foreign), 403)


async def test_each_allowlist_is_turned_off_alone() -> None:
    """presa-defined (spec-notes §4: ``None`` turns one check off; H-04): without the Host
    list any Host is accepted and the Origin is still checked; without the Origin list
    any Origin is accepted and the Host is still checked."""
    hosts_off = AdmissionPolicy(allowed_hosts=None)
    origins_off = AdmissionPolicy(allowed_origin_hosts=None)
    async with running(McpApp.for_server(build_server(), policy=hosts_off)) as client:
        result_of(await client.post(DISCOVER, with_headers(DISCOVER, host="evil.example")))
        foreign = with_headers(DISCOVER, origin="http://evil.example")
        rejection_of(await client.post(DISCOVER, foreign), 403)
    async with running(McpApp.for_server(build_server(), policy=origins_off)) as client:
        result_of(await client.post(DISCOVER, with_headers(DISCOVER, origin="http://evil.example")))
        rejection_of(await client.post(DISCOVER, with_headers(DISCOVER, host="evil.example")), 421)


async def test_without_allowlists_any_host_is_accepted() -> None:
    """presa-defined (H-04): ``None`` turns the DNS-rebinding check off (a server
    behind a proxy that checks it)."""
    app = McpApp.for_server(
        build_server(), policy=AdmissionPolicy(allowed_hosts=None, allowed_origin_hosts=None)
    )
    async with running(app) as client:
        headers = with_headers(DISCOVER, host="evil.example.com", origin="http://evil.example.com")
        result_of(await client.post(DISCOVER, headers))


# --- rung 3: the HTTP method ---------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH", "OPTIONS"])
async def test_anything_but_post_is_method_not_allowed(client: McpClient, method: str) -> None:
    """Spec-mandated (streamable-http: no GET stream, no DELETE in 2026-07-28; wire
    §13.2 rung 3; H-05): 405 with ``Allow: POST``."""
    response = await client.post(DISCOVER, method=method)
    rejection_of(response, 405)
    assert response.headers["allow"] == "POST"
    await assert_still_serving(client)


async def test_a_bad_host_is_refused_before_the_method_is_looked_at(client: McpClient) -> None:
    """Spec-mandated (spec-notes §10: the first failing rung answers; rung 2 before 3; H-31)."""
    response = await client.post(DISCOVER, with_headers(DISCOVER, host="evil"), method="GET")
    rejection_of(response, 421)


# --- rung 4: Content-Type --------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/json-seq",
        "application/json\xa0",
    ],
)
async def test_a_body_that_is_not_declared_json_is_unsupported_media_type(
    client: McpClient, content_type: str | None
) -> None:
    """Spec-mandated (streamable-http §Sending Messages: the body is a JSON-RPC
    message; H-06); presa answers 415 (spec-notes §11). Only spaces and tabs around
    the type are trimmed (RFC 9110 §5.6.3)."""
    headers = with_headers(DISCOVER, content_type=content_type)
    rejection_of(await client.post(DISCOVER, headers), 415)
    await assert_still_serving(client)


@pytest.mark.parametrize(
    "content_types",
    [["application/json", "text/html"], ["text/html", "application/json"]],
    ids=["json-first", "json-second"],
)
async def test_a_second_content_type_naming_another_type_is_unsupported_media_type(
    client: McpClient, content_types: list[str]
) -> None:
    """presa-defined (spec-notes §11: a body not declared ``application/json`` is 415;
    RFC 9110 §5.3: repeated field lines read as one value; H-06): whichever line comes
    first, a body also declared as something else is refused, as a proxy that reads
    the other line would see another type."""
    others = list(with_headers(DISCOVER, content_type=None).items())
    refused = others + [("content-type", value) for value in content_types]
    rejection_of(await client.post(DISCOVER, refused), 415)
    repeated = others + [("content-type", "application/json")] * 2
    result_of(await client.post(DISCOVER, repeated))


@pytest.mark.parametrize("coding", ["gzip", "br", "identity, gzip", "x-custom"])
async def test_an_encoded_body_is_unsupported_media_type(client: McpClient, coding: str) -> None:
    """presa-defined (spec-notes §11; RFC 9110 §8.4: presa decodes no content coding,
    §12.5.3: the 415 names the one it reads; H-06): a body declared encoded is refused,
    not read as JSON, whether or not its bytes happen to be JSON."""
    for body in (json.dumps(DISCOVER).encode(), gzip.compress(json.dumps(DISCOVER).encode())):
        response = await client.post(body, with_headers(DISCOVER, content_encoding=coding))
        rejection_of(response, 415)
        assert response.headers["accept-encoding"] == "identity"
    await assert_still_serving(client)


@pytest.mark.parametrize("coding", ["identity", "IDENTITY", "identity, ", ", identity", ""])
async def test_a_body_declared_unencoded_is_read(client: McpClient, coding: str) -> None:
    """presa-defined (spec-notes §11; RFC 9110 §8.4.1: codings are case-insensitive,
    §5.6.1: a recipient MUST accept empty list elements; H-06): ``identity``, or no
    coding at all, is the body as it is."""
    result_of(await client.post(DISCOVER, with_headers(DISCOVER, content_encoding=coding)))


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json; charset=utf-8",
        "Application/JSON",
        'application/json; charset="utf-8"',
        'application/json; profile="a,b"',
        'application/json; profile="a\\",b"',
    ],
)
async def test_content_type_parameters_and_case_are_accepted(
    client: McpClient, content_type: str
) -> None:
    """Spec-mandated (RFC 9110 §8.3.1: media types are case-insensitive, parameters allowed;
    H-06). A parameter's value may be a quoted string (RFC 9110 §5.6.6), holding a comma
    or an escaped quote: it is no second Content-Type."""
    result_of(await client.post(DISCOVER, with_headers(DISCOVER, content_type=content_type)))


# --- rung 5: Accept ----------------------------------------------------------------


@pytest.mark.parametrize(
    "accept",
    [
        None,
        "application/json",
        "text/event-stream",
        "text/html",
        "application/*",
        "application/json, text/event-stream;q=0",
        "application/json;q=0.000, text/event-stream",
        "*/*, text/event-stream;q=0",
        "text/event-stream;q=0, text/*, application/json",
        "application/json, text/event-stream;q=2",
        "application/json, text/event-stream;q=1.5",
        "application/json, text/event-stream;Q=0",
        "application/json\xa0, text/event-stream",
    ],
)
async def test_an_accept_without_json_and_sse_is_not_acceptable(
    client: McpClient, accept: str | None
) -> None:
    """Spec-mandated (streamable-http §Sending Messages: the client MUST accept both
    application/json and text/event-stream; H-07); presa answers 406 (spec-notes §11).
    ``q=0`` refuses a type (RFC 9110 §12.5.1), the most specific range deciding, ``Q``
    as ``q`` (a parameter's name is case-insensitive, §5.6.6); a malformed weight (above
    1, §12.4.2) is no acceptance."""
    rejection_of(await client.post(DISCOVER, with_headers(DISCOVER, accept=accept)), 406)
    await assert_still_serving(client)


@pytest.mark.parametrize(
    "accept",
    [
        "*/*",
        "text/event-stream, application/json",
        "application/json;q=0.9, text/event-stream;q=1",
        "application/*, text/*",
        "application/json;q=0.001, text/event-stream;q=0.5",
        "text/*;q=0, text/event-stream, application/json",
        "*/*;q=0.1",
        'application/json;profile="a;q=0", text/event-stream',
        '*/*;profile="a, application/json;q=0;b=c"',
    ],
)
async def test_accept_wildcards_and_any_order_are_accepted(client: McpClient, accept: str) -> None:
    """Spec-mandated (RFC 9110 §12.5.1; spec-notes §11: ``*/*`` counts, any order, any
    weight above 0, and a more specific range overrides a refused wildcard; H-07). A
    quoted parameter value (RFC 9110 §5.6.6) is read whole: a comma or ``;q=0`` inside
    it neither ends the range nor weighs it."""
    result_of(await client.post(DISCOVER, with_headers(DISCOVER, accept=accept)))


async def test_accept_may_be_split_over_two_headers(client: McpClient) -> None:
    """Spec-mandated (RFC 9110 §5.3: repeated list headers combine; H-07)."""
    headers = [(k, v) for k, v in with_headers(DISCOVER, accept=None).items()] + [
        ("accept", "application/json"),
        ("accept", "text/event-stream"),
    ]
    result_of(await client.post(DISCOVER, headers))


async def test_a_bad_content_type_is_refused_before_accept(client: McpClient) -> None:
    """presa-defined (spec-notes §10: rung 4 before rung 5; H-31)."""
    headers = with_headers(DISCOVER, content_type="text/plain", accept="text/html")
    rejection_of(await client.post(DISCOVER, headers), 415)


# --- rung 6: the body --------------------------------------------------------------


async def small_limit_client_response(body: bytes, **options: Any) -> tuple[int, int]:
    app = McpApp.for_server(build_server(), max_body=1024)
    async with running(app) as client:
        response = await client.post(body, headers_for(DISCOVER), **options)
        await assert_still_serving(client)
    return response.status, response.body_events_read


async def test_a_declared_oversized_body_is_refused_unread() -> None:
    """Spec-mandated (RFC 9110 §15.5.14; spec-notes §11; H-08): a Content-Length above
    the configured limit is 413 before any of the body is read."""
    body = json.dumps(request("server/discover", {"pad": "x" * 2000})).encode()
    headers = {**headers_for(DISCOVER), "content-length": str(len(body))}
    app = McpApp.for_server(build_server(), max_body=1024)
    async with running(app) as client:
        response = await client.post(body, headers)
        rejection_of(response, 413)
        assert response.body_events_read == 0
        await assert_still_serving(client)


async def test_a_content_length_of_more_digits_than_int_reads_is_413_unread() -> None:
    """Spec-mandated (RFC 9110 §8.6: Content-Length is any number of digits; §15.5.14:
    413) and presa-defined (H-08): a size of thousands of digits, more than Python
    reads as a number from text, is over any limit: 413 unread, never a 500; leading
    zeros, however many, name the size they lead."""
    body = json.dumps(DISCOVER).encode()
    app = McpApp.for_server(build_server(), max_body=1024)
    async with running(app) as client:
        huge = {**headers_for(DISCOVER), "content-length": "9" * 5000}
        response = await client.post(body, huge)
        rejection_of(response, 413)
        assert response.body_events_read == 0
        padded = {**headers_for(DISCOVER), "content-length": "0" * 5000 + str(len(body))}
        result_of(await client.post(body, padded))
        await assert_still_serving(client)


@pytest.mark.parametrize("declared", ["abc", "\xb2", "\xb9\xb2", "1\xb3"])
async def test_a_content_length_that_is_no_number_is_not_a_crash(
    client: McpClient, declared: str
) -> None:
    """presa-defined (http/app.py; H-08): the HTTP server frames the body and refuses
    a malformed Content-Length itself (RFC 9112 §6.3), so the app reads only ASCII
    digits as a declared size. Latin-1's superscript digits, which Python calls
    digits but cannot read as a number, are no crash: the body is read as it comes."""
    headers = {**headers_for(DISCOVER), "content-length": declared}
    result_of(await client.post(DISCOVER, headers))
    await assert_still_serving(client)


async def test_an_oversized_chunked_body_is_refused_without_reading_it_whole() -> None:
    """Spec-mandated (spec-notes §11: more than the limit is 413, unread; H-08): with
    no Content-Length, reading stops at the chunk that crosses the limit."""
    chunks = [b"[" + b" " * 255] + [b" " * 256] * 99
    status, read = await small_limit_client_response(b"", body_chunks=chunks)
    assert status == 413
    assert read == 5  # 5 * 256 bytes is the first total above 1024
    assert read < len(chunks)


async def test_a_body_at_the_limit_is_read() -> None:
    """presa-defined (H-08): the limit is inclusive."""
    body = json.dumps(DISCOVER).encode()
    app = McpApp.for_server(build_server(), max_body=len(body))
    async with running(app) as client:
        chunks = [body[: len(body) // 2], body[len(body) // 2 :]]
        response = await client.post(body, headers_for(DISCOVER), body_chunks=chunks)
        result_of(response)
        assert response.body_events_read == 2
        declared = {**headers_for(DISCOVER), "content-length": str(len(body))}
        result_of(await client.post(body, declared))


def padded_listen(size: int) -> bytes:
    """A ``subscriptions/listen`` body of exactly ``size`` bytes: its filter names one
    resource, and an unknown params key (which a stream would hold while open) pads it."""
    message = request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    bare = len(json.dumps(message).encode())
    padded = request(
        "subscriptions/listen",
        {"notifications": {"toolsListChanged": True}, "pad": "x" * (size - bare - 11)},
    )
    body = json.dumps(padded).encode()
    assert len(body) == size
    return body


async def test_a_long_lived_request_has_a_smaller_body_limit(client: McpClient) -> None:
    """presa-defined (docs/deployment.md, "Request limits"): a listen holds its request
    for as long as its stream is open, so its body may be at most
    ``MAX_LONG_LIVED_BODY`` bytes, whatever ``--max-body`` allows: one byte more is 413,
    unread when declared; at the limit the stream opens; and a request that is no
    stream keeps the larger limit."""
    listen = request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    over = padded_listen(MAX_LONG_LIVED_BODY + 1)
    headers = {**headers_for(listen), "content-length": str(len(over))}
    response = await client.post(over, headers)
    rejection_of(response, 413)
    assert response.body_events_read == 0
    chunks = [over[:MAX_LONG_LIVED_BODY], over[MAX_LONG_LIVED_BODY:]]
    rejection_of(await client.post(over, headers_for(listen), body_chunks=chunks), 413)
    async with client.stream(padded_listen(MAX_LONG_LIVED_BODY), headers_for(listen)) as stream:
        acknowledged = await stream.next_message()
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
    # A task stream is long-lived too: refused at its declared size, whatever the body.
    task_stream = {**headers_for(request("tasks/stream", {"taskId": "t"})), "mcp-name": "t"}
    refused = await client.post(over, {**task_stream, "content-length": str(len(over))})
    rejection_of(refused, 413)
    assert refused.body_events_read == 0
    discover = request("server/discover", {"pad": "x" * 2 * MAX_LONG_LIVED_BODY})
    result_of(await client.post(discover, headers_for(DISCOVER)))
    await assert_still_serving(client)


async def test_a_body_not_complete_in_time_is_answered_408_at_the_timeout(
    autojump_clock: MockClock,
) -> None:
    """Spec-mandated (RFC 9110 §15.5.9: 408) and presa-defined (http/exchange.py): a body
    still incomplete ``read_timeout`` after the request began is answered 408, with
    ``Connection: close``, at that moment; the server keeps serving."""
    app = McpApp.for_server(build_server(), read_timeout=3.0)
    body = json.dumps(DISCOVER).encode()
    scope = http_scope(headers_for(DISCOVER))
    sent: list[dict[str, Any]] = []
    first_part = [{"type": "http.request", "body": body[:10], "more_body": True}]

    async def stalling_receive() -> dict[str, Any]:
        if first_part:
            return first_part.pop()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    async with running(app) as client:
        began = trio.current_time()
        with trio.fail_after(60):
            await app(scope, stalling_receive, send)  # type: ignore[arg-type]
        answered = trio.current_time()
        assert sent[0]["status"] == 408
        assert (b"connection", b"close") in sent[0]["headers"]
        assert answered - began == pytest.approx(3.0)
        await assert_still_serving(client)


@pytest.mark.parametrize("body", [b"", b"{", b"not json", b'{"a":NaN}', b"\xff"])
async def test_a_body_that_is_not_json_is_a_parse_error(client: McpClient, body: bytes) -> None:
    """Spec-mandated (basic/index §Error Codes, §Error Responses; spec-notes §52; H-09,
    E-01): 400, -32700, no ``id``."""
    error_of(await client.post(body, headers_for(DISCOVER)), 400, PARSE_ERROR, None)
    await assert_still_serving(client)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
async def test_a_body_that_is_not_utf8_is_a_parse_error(client: McpClient, encoding: str) -> None:
    """Spec-mandated (basic/transports §Messages: JSON-RPC messages MUST be UTF-8
    encoded; H-09, E-01): a well-formed request in another encoding is 400, -32700,
    no ``id`` (spec-notes §52), not a request served."""
    body = json.dumps(DISCOVER).encode(encoding)
    error_of(await client.post(body, headers_for(DISCOVER)), 400, PARSE_ERROR, None)
    await assert_still_serving(client)


# --- rung 7: one JSON-RPC message ----------------------------------------------------


async def test_a_batch_is_invalid_request(client: McpClient) -> None:
    """Spec-mandated (streamable-http §Sending Messages: a single request or
    notification; basic/index §Error Codes; H-10, E-02): 400, -32600, no ``id``
    (spec-notes §52)."""
    body = json.dumps([DISCOVER, request("tools/list", request_id=2)]).encode()
    error_of(await client.post(body, headers_for(DISCOVER)), 400, INVALID_REQUEST, None)
    await assert_still_serving(client)


async def test_a_response_object_is_invalid_request(client: McpClient) -> None:
    """Spec-mandated (streamable-http §Sending Messages: the client MUST NOT send
    responses; basic/index §Error Responses; H-10, E-02, E-10): 400, -32600, the id echoed."""
    body = {"jsonrpc": "2.0", "id": 9, "result": {"resultType": "complete"}}
    error_of(await client.post(body, headers_for(DISCOVER)), 400, INVALID_REQUEST, 9)
    await assert_still_serving(client)


@pytest.mark.parametrize("bad_id", [None, 1.5, True, {"n": 1}])
async def test_a_bad_id_is_invalid_request_without_an_id(client: McpClient, bad_id: Any) -> None:
    """Spec-mandated (basic/index §Requests: string or integer, not null; §Error Codes;
    §Error Responses, spec-notes §52; H-10, E-02): the answer has no id at all."""
    body = {**DISCOVER, "id": bad_id}
    error_of(await client.post(body, headers_for(DISCOVER)), 400, INVALID_REQUEST, None)
    await assert_still_serving(client)


@pytest.mark.parametrize(
    "change",
    [
        {"params": ["server/discover"]},
        {"params": None},
        {"params": "_meta"},
        {"method": 5},
        {"method": ["server/discover"]},
    ],
    ids=["params-array", "params-null", "params-string", "method-number", "method-array"],
)
async def test_params_or_a_method_of_the_wrong_type_is_invalid_request_with_its_id(
    client: McpClient, change: dict[str, Any]
) -> None:
    """Spec-mandated (basic/index §Requests: ``method: string``, ``params?: {…}``;
    JSON-RPC 2.0 §4, §5.1; spec-notes §57; H-10, E-02, E-10): not a request MCP
    defines, so 400 -32600, before any ``_meta`` or header is looked at, with the
    readable id echoed; as a notification, the same code without an id."""
    message = {**DISCOVER, **change}
    response = await client.post(message, headers_for(DISCOVER))
    error_of(response, 400, INVALID_REQUEST, 1)
    notification = {key: value for key, value in message.items() if key != "id"}
    response = await client.post(notification, headers_for(DISCOVER))
    error_of(response, 400, INVALID_REQUEST, None)
    await assert_still_serving(client)


@pytest.mark.parametrize("literal", [b"1.0", b"1e2", b"10E-1", b"-0.0"])
async def test_an_integral_id_written_as_a_fraction_or_exponent_is_refused(
    client: McpClient, literal: bytes
) -> None:
    """presa-defined (spec-notes §56; H-10, E-02): schema.json's ``integer`` would admit
    ``1.0`` and ``1e2`` (JSON Schema counts any number without a fractional part), but
    an id is a string or a JSON integer literal to presa: 400, -32600, no ``id``."""
    body = json.dumps(DISCOVER).encode().replace(b'"id": 1,', b'"id": ' + literal + b",")
    assert literal in body
    error_of(await client.post(body, headers_for(DISCOVER)), 400, INVALID_REQUEST, None)
    await assert_still_serving(client)


@pytest.mark.parametrize("request_id", [0, -5, "abc", "", 2**53])
async def test_string_and_integer_ids_are_echoed(client: McpClient, request_id: Any) -> None:
    """Spec-mandated (basic/index §Responses: the same id as the request; E-10)."""
    result_of(await client.call("server/discover", request_id=request_id), request_id)


@pytest.mark.parametrize(
    "notification",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "notifications/unknown", "params": {}},
    ],
)
async def test_a_notification_is_accepted_without_a_body(
    client: McpClient, notification: dict[str, Any]
) -> None:
    """Spec-mandated (streamable-http §Sending Messages: an accepted notification
    MUST get 202 with no body; H-11): no body, and no content type for one (RFC 9110
    §8.3 types content; there is none to type)."""
    response = await client.post(notification, headers_for(notification))
    assert response.status == 202
    assert response.body == b""
    assert response.headers["content-length"] == "0"
    assert "content-type" not in response.headers
    await assert_still_serving(client)


async def test_a_notification_with_an_unsupported_version_header_is_refused(
    client: McpClient,
) -> None:
    """Spec-mandated (streamable-http §Protocol Version Header; H-12): -32022, 400."""
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = with_headers(notification, mcp_protocol_version="2025-03-26")
    error = error_of(
        await client.post(notification, headers), 400, UNSUPPORTED_PROTOCOL_VERSION, None
    )
    assert error["data"]["requested"] == "2025-03-26"
    await assert_still_serving(client)


async def test_a_notification_with_a_repeated_version_header_is_header_mismatch(
    client: McpClient,
) -> None:
    """Spec-mandated (streamable-http §Server Validation: a malformed standard header is
    -32020; H-12, H-23): a second ``MCP-Protocol-Version`` line is refused whatever the
    first says, as it is on a request."""
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = [*with_headers(notification).items(), ("mcp-protocol-version", "2025-03-26")]
    error_of(await client.post(notification, headers), 400, HEADER_MISMATCH, None)
    await assert_still_serving(client)


# --- rung 8: params._meta --------------------------------------------------------


def discover_with_meta(request_id: int, meta: Any) -> dict[str, Any]:
    params = {} if meta is ... else {"_meta": meta}
    return {"jsonrpc": "2.0", "id": request_id, "method": "server/discover", "params": params}


@pytest.mark.parametrize(
    ("request_id", "meta"),
    [
        (101, ...),
        (102, {META_CLIENT_CAPABILITIES: {}}),
        (104, {META_PROTOCOL_VERSION: "2026-07-28"}),
    ],
    ids=["missing-meta", "missing-protocol-version", "missing-client-capabilities"],
)
async def test_incomplete_meta_is_invalid_params_400(
    client: McpClient, request_id: int, meta: Any
) -> None:
    """Runner-scored (server-stateless/sep-2575-request-meta-invalid-missing-meta,
    -missing-protocol-version, -missing-client-capabilities;
    sep-2575-http-server-meta-invalid-400; sep-2575-http-server-error-jsonrpc-id; H-13, H-31,
    E-04, E-10): -32602, 400, the id echoed. Probe 102 has a good version header but no _meta
    version: rung 8 answers before rung 9."""
    message = discover_with_meta(request_id, meta)
    headers = with_headers(message)
    error_of(await client.post(message, headers), 400, INVALID_PARAMS, request_id)
    await assert_still_serving(client)


@pytest.mark.parametrize(
    "client_info",
    [{}, {"name": "probe"}, {"name": "probe", "version": 2}, None],
    ids=["empty", "without-version", "version-not-string", "null"],
)
async def test_a_client_info_that_is_no_implementation_is_invalid_params_400(
    client: McpClient, client_info: Any
) -> None:
    """Spec-mandated (basic/index §_meta: ``clientInfo`` is an ``Implementation``; schema
    ``$defs.Implementation`` requires a string ``name`` and ``version``): an optional
    ``_meta`` field present is of its type, so -32602, 400, the id echoed, as for a
    malformed log level or progress token. An object without them was served as if it
    were one."""
    meta = {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}
    message = discover_with_meta(105, {**meta, META_CLIENT_INFO: client_info})
    error = error_of(await client.post(message, with_headers(message)), 400, INVALID_PARAMS, 105)
    assert "clientInfo" in error["message"]
    served = discover_with_meta(106, {**meta, META_CLIENT_INFO: {"name": "p", "version": "1"}})
    result_of(await client.post(served, with_headers(served)), 106)


#: What a client of the initialize era sends, beside the modern ``_meta`` it never sends.
LEGACY_INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "legacy", "version": "1.0.0"},
}
#: A W3C trace context, as instrumented clients put it in any request's ``_meta``.
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.mark.parametrize(
    ("params", "headers"),
    [
        ({}, {}),
        (LEGACY_INITIALIZE, {"mcp_protocol_version": None, "mcp_method": None}),
        ({**LEGACY_INITIALIZE, "_meta": {"progressToken": 1}}, {}),
        ({**LEGACY_INITIALIZE, "_meta": {"traceparent": TRACEPARENT}}, {}),
        ({**LEGACY_INITIALIZE, "_meta": None}, {"mcp_protocol_version": "2025-11-25"}),
    ],
    ids=["no-params", "2025-11-25-client", "progress-token", "trace-context", "meta-null"],
)
async def test_a_legacy_initialize_names_the_supported_versions(
    client: McpClient, params: dict[str, Any], headers: dict[str, str | None]
) -> None:
    """Spec-mandated (versioning §Backward Compatibility with Initialization-Based Versions:
    a modern-only server SHOULD name its versions in any error to an initialize request;
    basic/index §_meta; H-14): an initialize of the 2025 era fails at rung 8 of spec-notes
    §10 with 400, whatever ``_meta`` of its own era it carries, and the message names the
    supported versions."""
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    response = await client.post(message, with_headers(message, **headers))
    error = error_of(response, 400, INVALID_PARAMS)
    assert error["message"].endswith("supported protocol versions: 2026-07-28")


# --- rungs 9 and 11: the protocol version ------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {"mcp_protocol_version": None},
        {"mcp_protocol_version": "2025-11-25"},
        {"mcp_protocol_version": ""},
    ],
    ids=["missing", "different", "empty"],
)
async def test_a_version_header_unlike_the_body_is_header_mismatch(
    client: McpClient, headers: dict[str, str | None]
) -> None:
    """Spec-mandated (streamable-http §Protocol Version Header: MUST match, else 400
    HeaderMismatch; a server without pre-2025-06-18 support MUST reject a missing
    header; streamable-http §Server Validation; H-15, E-06)."""
    error_of(await client.post(DISCOVER, with_headers(DISCOVER, **headers)), 400, HEADER_MISMATCH)
    await assert_still_serving(client)


async def test_a_repeated_version_header_is_header_mismatch(client: McpClient) -> None:
    """Spec-mandated (streamable-http §Server Validation: a duplicated mirrored header is
    -32020; H-15, H-23)."""
    headers = [*with_headers(DISCOVER).items(), ("mcp-protocol-version", "2026-07-28")]
    error_of(await client.post(DISCOVER, headers), 400, HEADER_MISMATCH)


async def test_a_mismatch_is_reported_before_an_unsupported_version(client: McpClient) -> None:
    """Runner-scored (server-stateless/sep-2575-http-server-header-mismatch-400; H-31): probe
    302 sends header 2026-07-28 and _meta v999.0.0: -32020, not -32022."""
    message = request(
        "server/discover",
        {"_meta": {META_PROTOCOL_VERSION: "v999.0.0", META_CLIENT_CAPABILITIES: {}}},
        request_id=302,
    )
    # The header a client of this revision sends, against the body's own version.
    headers = with_headers(message, mcp_protocol_version="2026-07-28")
    error_of(await client.post(message, headers), 400, HEADER_MISMATCH, 302)


async def test_an_unsupported_version_is_refused_with_the_supported_list(
    client: McpClient,
) -> None:
    """Runner-scored (server-stateless/sep-2575-server-unsupported-version-error,
    sep-2575-http-server-unsupported-version-400; H-27, E-08): probe 301 sends v999.0.0 in header
    and body: -32022, 400, ``data.supported`` and ``data.requested``."""
    message = request(
        "server/discover",
        {"_meta": {META_PROTOCOL_VERSION: "v999.0.0", META_CLIENT_CAPABILITIES: {}}},
        request_id=301,
    )
    headers = with_headers(message, mcp_protocol_version="v999.0.0")
    error = error_of(await client.post(message, headers), 400, UNSUPPORTED_PROTOCOL_VERSION, 301)
    assert error["data"] == {"supported": ["2026-07-28"], "requested": "v999.0.0"}
    await assert_still_serving(client)


@pytest.mark.parametrize(
    ("extra", "valid_in_2026_07_28"),
    [
        ({META_LOG_LEVEL: "trace"}, False),
        ({"progressToken": 0.5}, False),
        ({META_CLIENT_INFO: "client/2.0"}, False),
        ({META_LOG_LEVEL: None}, False),
        ({"progressToken": None}, False),
        ({META_LOG_LEVEL: "debug"}, True),
    ],
    ids=[
        "log-level",
        "progress-token",
        "client-info",
        "log-level-null",
        "progress-token-null",
        "valid-log-level",
    ],
)
async def test_an_unsupported_version_is_refused_whatever_its_optional_meta(
    client: McpClient, extra: dict[str, Any], valid_in_2026_07_28: bool
) -> None:
    """Spec-mandated (streamable-http §Protocol Version Header, versioning §Protocol
    Version Negotiation: a version the server does not implement MUST get 400
    UnsupportedProtocolVersionError; H-27): what the optional ``_meta`` fields of
    another version may hold is that version's to say, so a value 2026-07-28 refuses
    (a log level it lacks, a fractional progress token) does not turn -32022 into
    -32602; under 2026-07-28 the same value is still -32602."""
    meta = {META_PROTOCOL_VERSION: "2027-01-01", META_CLIENT_CAPABILITIES: {}, **extra}
    message = request("server/discover", {"_meta": meta}, request_id=303)
    headers = with_headers(message, mcp_protocol_version="2027-01-01")
    error = error_of(await client.post(message, headers), 400, UNSUPPORTED_PROTOCOL_VERSION, 303)
    assert error["data"] == {"supported": ["2026-07-28"], "requested": "2027-01-01"}
    current = request("server/discover", {"_meta": {**meta, META_PROTOCOL_VERSION: "2026-07-28"}})
    response = await client.post(current, with_headers(current))
    if valid_in_2026_07_28:
        result_of(response)
    else:
        error_of(response, 400, INVALID_PARAMS)


@pytest.mark.parametrize(
    "capabilities",
    [..., None, "sampling", []],
    ids=["missing", "null", "string", "array"],
)
async def test_an_unsupported_version_is_refused_whatever_its_client_capabilities(
    client: McpClient, capabilities: Any
) -> None:
    """Spec-mandated (versioning §Protocol Version Negotiation, streamable-http §Protocol
    Version Header: a version the server does not implement MUST get 400
    UnsupportedProtocolVersionError listing the supported ones; H-27): which ``_meta``
    fields another version requires is that version's to say, so a request of another
    version without an object ``clientCapabilities`` is told the supported versions
    (-32022), not -32602 with none to retry with; under 2026-07-28 it is still -32602."""
    meta = {META_PROTOCOL_VERSION: "2027-01-01"}
    if capabilities is not ...:
        meta[META_CLIENT_CAPABILITIES] = capabilities
    message = request("server/discover", {"_meta": meta}, request_id=304)
    headers = with_headers(message, mcp_protocol_version="2027-01-01")
    error = error_of(await client.post(message, headers), 400, UNSUPPORTED_PROTOCOL_VERSION, 304)
    assert error["data"] == {"supported": ["2026-07-28"], "requested": "2027-01-01"}
    current = request("server/discover", {"_meta": {**meta, META_PROTOCOL_VERSION: "2026-07-28"}})
    error_of(await client.post(current, with_headers(current)), 400, INVALID_PARAMS)


# --- rung 12: the method ----------------------------------------------------------


@pytest.mark.parametrize(
    "method",
    [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "unknown/method",
        "TOOLS/LIST",
        "notifications/initialized",
    ],
)
async def test_removed_and_unknown_methods_are_not_found_404(
    client: McpClient, method: str
) -> None:
    """Runner-scored (server-stateless/sep-2575-http-server-method-not-found-404-{initialize,
    ping,logging-setlevel,resources-subscribe,resources-unsubscribe} and
    sep-2575-http-server-method-not-found-404; H-14, H-28, E-03): 404 and -32601
    (streamable-http: MUST)."""
    message = request(method, {"uri": "test://static-text"}, request_id=500)
    error_of(await client.post(message, with_headers(message)), 404, METHOD_NOT_FOUND, 500)
    await assert_still_serving(client)


async def test_an_initialize_with_modern_meta_is_not_found_and_names_the_versions(
    client: McpClient,
) -> None:
    """Spec-mandated (versioning §Backward Compatibility with Initialization-Based Versions:
    SHOULD name the versions in any error to an initialize request; streamable-http
    §Protocol Version Header: an unknown method MUST be 404 -32601; H-14): an initialize
    that passes rung 8 reaches rung 12, and its -32601 names the supported versions too."""
    message = request("initialize", LEGACY_INITIALIZE, request_id=500)
    error = error_of(await client.post(message, with_headers(message)), 404, METHOD_NOT_FOUND, 500)
    assert error["message"].endswith("supported protocol versions: 2026-07-28")


# --- rungs 13 and 14 -----------------------------------------------------------------


async def test_bad_params_are_invalid_params_400(client: McpClient) -> None:
    """Spec-mandated (basic/index §_meta; tools §Error Handling; H-29, E-04, E-13)."""
    response = await client.call("tools/call", {"name": "no_such_tool"})
    error_of(response, 400, INVALID_PARAMS)
    await assert_still_serving(client)


async def test_an_undeclared_capability_is_400(client: McpClient) -> None:
    """Runner-scored (server-stateless/sep-2575-missing-capability-http-400; H-29, E-07)."""
    response = await client.call(
        "tools/call", {"name": "test_missing_capability"}, capabilities={}, request_id=401
    )
    error_of(response, 400, MISSING_REQUIRED_CLIENT_CAPABILITY, 401)
    await assert_still_serving(client)


async def test_a_request_that_passes_every_rung_is_answered_200_json(client: McpClient) -> None:
    """Spec-mandated (streamable-http §Sending Messages: a request is answered with
    application/json or an SSE stream; streamable-http §Sending Messages item 6; H-30)."""
    response = await client.call("tools/list")
    assert response.headers["content-type"] == "application/json"
    assert result_of(response)["tools"]


@pytest.mark.parametrize(
    ("status", "change"),
    [
        (404, {"path": "/other"}),
        (421, {"host": "evil.example.com"}),
        (405, {"method": "GET"}),
        (415, {"content_type": "text/plain"}),
        (406, {"accept": "text/html"}),
        (413, {"pad": True}),
    ],
)
async def test_a_rejection_before_the_body_is_read_closes_the_connection(
    status: int, change: dict[str, Any]
) -> None:
    """Spec-mandated (RFC 9112 §9.6: a server that will not read the rest of a request
    sends ``Connection: close``): an HTTP/1.1 client must not reuse a connection whose
    request body was left unread, or its next request is dropped unanswered."""
    message = request("server/discover", {"pad": "x" * 2000} if change.get("pad") else None)
    headers = with_headers(
        message,
        **{k: v for k, v in change.items() if k in ("host", "content_type", "accept")},
    )
    app = McpApp.for_server(build_server(), max_body=1024)
    async with running(app) as client:
        response = await client.post(
            message,
            headers,
            path=change.get("path", "/mcp"),
            method=change.get("method", "POST"),
        )
        rejection_of(response, status)
        assert response.headers["connection"] == "close"
        assert "connection" not in (await client.call("server/discover")).headers
