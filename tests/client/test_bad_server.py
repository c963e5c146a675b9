"""A server that answers wrongly gets one line and exit 3 from the client, never a traceback.

Each server here is :mod:`tests.client.misbehaving_server`, a real process
on a loopback port that gets one thing wrong; the client runs as a user
runs it (:func:`tests.client.helpers.client`).
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import trio

from tests.client.helpers import MISBEHAVING, client, client_command
from tests.e2e.serve_process import serving


async def test_a_response_that_is_no_json_by_rfc_8259() -> None:
    """RFC 8259 §6 (no NaN), read with the server's own strict decoder: ``--json``
    never prints a document that is no JSON (a number past a float's range would be
    printed ``Infinity``), and nesting too deep to decode is no JSON either, not a
    RecursionError."""
    for wrong in ("nan", "past-a-float", "deep"):
        async with serving([sys.executable, MISBEHAVING, wrong]) as served:
            ran = await client("discover", served.url, "--json")
        assert ran.status == 3, wrong
        assert ran.error().startswith(f"{served.url} is not an MCP server: HTTP 200"), wrong
        assert json.loads(ran.stdout)["error"]["exitCode"] == 3, wrong


async def test_input_requests_that_are_no_object_of_requests() -> None:
    """basic/patterns/mrtr §Input Requests, SEP-2663 §Task Update Requests: the
    server's mistake, exit 3, in a multi round-trip result and in a task alike."""
    for wrong in ("input-requests-list", "task-input-requests-string"):
        async with serving([sys.executable, MISBEHAVING, wrong]) as served:
            ran = await client("call", served.url, "t", "--no-listen")
        assert ran.status == 3, wrong
        assert ran.error() == f"{served.url} sent inputRequests that are no object of requests"


async def test_an_input_request_the_client_did_not_declare() -> None:
    """Spec-mandated (schema.ts ``CreateMessageRequestParams.tools``: the client MUST
    return an error if it is provided but ``sampling.tools`` is not declared;
    client/elicitation §Capabilities: no mode the client does not support;
    basic/patterns/mrtr §Server Requirements 2: only the three methods): the
    server's mistake, exit 3 naming the key, even with an answer at hand."""
    for wrong, what in (
        ("sampling-with-tools", "sampling with tools"),
        ("elicitation-url", "elicitation in 'url' mode"),
        ("input-method-ping", "an input request of method 'ping'"),
    ):
        async with serving([sys.executable, MISBEHAVING, wrong]) as served:
            ran = await client(
                "call", served.url, "t", "--no-listen", "--answer", 'k={"action": "decline"}'
            )
        assert ran.status == 3, wrong
        assert ran.error() == (
            f"{served.url} asks 'k' for {what}, which this client does not declare"
        ), wrong


async def test_a_request_state_that_is_no_string() -> None:
    """Spec-mandated (basic/patterns/mrtr §InputRequiredResult: ``requestState`` is an
    opaque string, and the client MUST echo back its exact value): one that is no
    string cannot be echoed as a string, so it is the server's mistake, exit 3, rather
    than a retry without it."""
    async with serving([sys.executable, MISBEHAVING, "request-state-number"]) as served:
        ran = await client("call", served.url, "t", "--no-listen")
    assert ran.status == 3
    assert ran.error() == f"{served.url} sent a requestState that is no string"


async def test_an_input_required_result_with_nothing_to_retry_with() -> None:
    """Spec-mandated (basic/patterns/mrtr §Server Requirements (Basic Workflow) 6: every
    InputRequiredResult MUST include inputRequests or requestState; schema.ts
    ``InputRequiredResult``): one with neither is the server's mistake, exit 3 at once,
    not retries that could only bring the same answer."""
    async with serving([sys.executable, MISBEHAVING, "input-required-bare"]) as served:
        ran = await client("call", served.url, "t", "--no-listen")
    assert ran.status == 3
    assert ran.error() == (
        f"{served.url} answered tools/call input_required with neither inputRequests "
        "nor requestState"
    )


async def test_a_result_type_the_client_does_not_know() -> None:
    """Spec-mandated (basic/index §ResultType: a resultType of any value unrecognized by
    the client MUST be considered invalid): the server's mistake, exit 3, rather than
    a result printed as if complete."""
    for wrong, shown in (("result-type-unknown", "'partial'"), ("result-type-number", "1")):
        async with serving([sys.executable, MISBEHAVING, wrong]) as served:
            ran = await client("call", served.url, "t", "--no-listen")
        assert ran.status == 3, wrong
        assert ran.error() == (
            f"{served.url} answered tools/call with resultType {shown}, which this client "
            "does not know"
        ), wrong
        assert ran.stdout == "", wrong


async def test_a_task_in_answer_to_a_request_that_cannot_be_one() -> None:
    """Spec-mandated (SEP-2663 §Capability Negotiation: a client that receives a
    CreateTaskResult in response to an unsupported request type MUST interpret it as
    an invalid response; §Supported Methods: only ``tools/call``): the server's
    mistake, exit 3, though the client declares the extension on every request;
    a task method's result is a task, and one marked ``"task"`` (as the SEP's own
    §Task Execution Errors examples are; spec-notes §21) is read as one."""
    async with serving([sys.executable, MISBEHAVING, "task-everywhere"]) as served:
        for command, method in (
            (("read", "a://b"), "resources/read"),
            (("prompt", "p"), "prompts/get"),
        ):
            ran = await client(*command[:1], served.url, *command[1:])
            assert ran.status == 3, (command, ran.stdout, ran.stderr)
            assert ran.error() == (
                f"{served.url} answered {method} with a task, which only tools/call may be"
            )
        called = await client("call", served.url, "t", "--detach")
        got = await client("task", "get", served.url, "T")
    assert (called.status, called.stdout) == (0, "T\n"), called.stderr
    assert (got.status, json.loads(got.stdout)["status"]) == (0, "working"), got.stderr


async def test_a_list_with_an_item_that_is_no_object() -> None:
    async with serving([sys.executable, MISBEHAVING, "item-not-object"]) as served:
        ran = await client("list", served.url, "tools")
    assert ran.status == 3
    assert ran.error() == f"{served.url} answered tools/list without a list of tools objects"


async def test_a_cursor_given_twice_ends_the_paging() -> None:
    """server/utilities/pagination: following a cursor the server gave before would
    page forever."""
    async with serving([sys.executable, MISBEHAVING, "same-cursor"]) as served:
        ran = await client("list", served.url, "tools")
    assert ran.status == 3
    assert ran.error() == f"{served.url} gave the cursor 'again' twice"


async def test_a_next_cursor_that_is_no_string_is_the_servers_mistake() -> None:
    """server/utilities/pagination §Implementation Guidelines 3: a client decides only
    whether a cursor was given, so a number is no end of the list; schema
    $defs.PaginatedResult: a cursor is a string. The list is not cut short in silence."""
    async with serving([sys.executable, MISBEHAVING, "number-cursor"]) as served:
        ran = await client("list", served.url, "tools")
    assert ran.status == 3
    assert ran.error() == f"{served.url} answered tools/list with a nextCursor that is no string"


async def test_a_discover_result_with_server_info_that_is_no_object() -> None:
    """What is shown of a result reads only what is there as the schema says."""
    async with serving([sys.executable, MISBEHAVING, "server-info-number"]) as served:
        ran = await client("discover", served.url)
    assert ran.status == 0, ran.stderr
    assert ran.stdout.splitlines()[:2] == ["server: ?", "versions: 2026-07-28"]


async def test_numbers_where_arrays_belong() -> None:
    """What is read of a server's answer, to show it or to type arguments by it,
    reads only what is there as the schema says: no crash on a number."""
    async with serving([sys.executable, MISBEHAVING, "arrays-as-numbers"]) as served:
        for command in (("call", "t"), ("read", "a://b"), ("prompt", "p")):
            ran = await client(command[0], served.url, *command[1:])
            assert (ran.status, ran.stdout) == (0, "\n"), (command, ran.stderr)
        discovered = await client("discover", served.url)
    assert discovered.stdout.splitlines()[1] == "versions: ", discovered.stderr
    async with serving([sys.executable, MISBEHAVING, "property-type-number"]) as served:
        listed = await client("list", served.url, "tools")
        called = await client("call", served.url, "t", "x=1")
    assert (listed.status, listed.stdout) == (0, "t(x?: any)\n"), listed.stderr
    assert called.status == 0, called.stderr
    async with serving([sys.executable, MISBEHAVING, "task-ids-number"]) as served:
        followed = await client("call", served.url, "t")
    assert followed.status == 0, followed.stderr


async def test_a_task_status_that_is_no_string() -> None:
    """SEP-2663 §Task Status: a status it does not define is the server's mistake,
    when a task's events are followed as when the task is."""
    async with serving([sys.executable, MISBEHAVING, "status-array"]) as served:
        for action in ("stream", "wait"):
            ran = await client("task", action, served.url, "T")
            assert ran.status == 3, ran.stderr
            assert ran.error() == "task T has no known status: ['working']"


async def test_an_error_that_is_no_json_rpc_error_object() -> None:
    """basic/index §Error Responses: an error is an object with an integer code."""
    async with serving([sys.executable, MISBEHAVING, "error-string"]) as served:
        ran = await client("discover", served.url)
    assert ran.status == 3
    assert ran.error() == "server/discover: an error that is no JSON-RPC error object: 'no'"


async def test_an_error_without_an_id_is_the_answer_to_the_request() -> None:
    """basic/index §Error Responses (``id?: string | number``: an error to a request
    whose id could not be read has none; schema $defs.JSONRPCErrorResponse): it is the
    answer, the server's error said as such, not a message that is no response."""
    async with serving([sys.executable, MISBEHAVING, "error-without-id"]) as served:
        ran = await client("discover", served.url)
    assert ran.status == 3
    assert ran.error() == "server/discover: JSON-RPC error -32600: unread"


async def interrupted_call(mode: str) -> str:
    """What the client said on stderr when Ctrl-C ended its ``call`` of a task the
    misbehaving server in ``mode`` keeps working; the exit status is checked: 130."""
    async with serving([sys.executable, MISBEHAVING, mode]) as served:
        command = client_command("call", served.url, "t", "--no-listen")
        async with serving(command, r"task (\S+): working") as watched:
            watched.process.send_signal(signal.SIGINT)
            with trio.fail_after(30):
                assert await watched.stopped() == 130
    return watched.stderr


async def test_ctrl_c_is_130_when_the_server_refuses_to_cancel() -> None:
    """presa-defined (docs/client.md, A task's life): the person asked to stop; the
    refused tasks/cancel is said on stderr, not made the exit status."""
    stderr = await interrupted_call("cancel-refused")
    assert "task T: not cancelled: tasks/cancel: JSON-RPC error -32603: no" in stderr


async def test_a_request_the_server_cancels_is_its_mistake_at_once(tmp_path: Path) -> None:
    """Spec-mandated (basic/patterns/cancellation: servers MUST NOT send
    ``notifications/cancelled`` for anything but tearing down a listen; no response
    follows one): a plain request the server cancels over stdio is exit 3 naming it
    when the cancellation comes, not a wait for an answer until the timeout."""
    script = (
        "import json, sys\n"
        "sent = json.loads(sys.stdin.readline())\n"
        "cancel = {'jsonrpc': '2.0', 'method': 'notifications/cancelled',\n"
        "          'params': {'requestId': sent['id']}}\n"
        "sys.stdout.write(json.dumps(cancel) + '\\n'); sys.stdout.flush()\n"
        "sys.stdin.read()\n"
    )
    server = tmp_path / "cancelling_server.py"
    server.write_text(script)
    command = ["--", sys.executable, str(server)]
    ran = await client("request", "--stdio", "--timeout", "20", "server/discover", *command)
    assert ran.status == 3
    assert ran.error().endswith(
        "cancelled server/discover, which a server may do only to a subscriptions/listen"
    )


async def test_a_request_on_a_responses_stream_is_the_servers_mistake() -> None:
    """Spec-mandated (streamable-http §Receiving Messages: the server MUST NOT send
    independent JSON-RPC requests on this stream): exit 3 naming it, as the same
    line on stdio is (stdio §Messages), not a request passed over in silence."""
    async with serving([sys.executable, MISBEHAVING, "request-on-stream"]) as served:
        ran = await client("call", served.url, "t", "--no-listen")
    assert ran.status == 3
    assert ran.error() == (
        f"{served.url} sent an SSE event that is no MCP response or notification: "
        '{"jsonrpc":"2.0","id":"s1","method":"roots/list"}'
    )


async def test_a_redirect_names_where_it_points() -> None:
    """presa-defined (docs/client.md, For scripts): the client follows no redirect (a
    POST's body and token would go where the server says), and the line says where
    the endpoint points instead of calling it no MCP server."""
    async with serving([sys.executable, MISBEHAVING, "redirect"]) as served:
        ran = await client("list", served.url)
    assert ran.status == 3
    assert ran.error() == (
        f"{served.url} redirects to {served.url}/ (HTTP 307); "
        "this client follows no redirect: give that URL if it is the endpoint"
    )


async def test_a_refusal_for_now_is_said_as_one_not_as_no_mcp_server(tmp_path: Path) -> None:
    """presa-defined (docs/client.md, Exit codes), after streamable-http §Backward
    Compatibility, which falls back to ``initialize`` only on a 400, 404 or 405: a 503
    in plain text (RFC 9110 §15.6.4) is a server busy for now, said with its
    ``Retry-After``; it is no sign of another era, so no probe is sent after it."""
    record = tmp_path / "wire.jsonl"
    async with serving([sys.executable, MISBEHAVING, "unavailable"]) as served:
        ran = await client("list", served.url, "--transcript", str(record))
    assert ran.status == 3
    assert ran.error() == (
        f"{served.url} refused the request for now: HTTP 503 Service Unavailable "
        "(Retry-After: 7): Service Unavailable: try again shortly"
    )
    sent = [json.loads(line)["request"]["body"]["method"] for line in record.open()]
    assert sent == ["tools/list"]


async def test_a_poll_refused_for_now_is_sent_again_while_the_task_goes_on() -> None:
    """Spec-mandated (SEP-2663 §Task Polling: clients SHOULD continue polling until the
    task reaches a terminal status, and servers MAY rate-limit polls): a ``tasks/get``
    refused for now, 429 in plain text or presa's retryable -32603 over 503, is said on
    stderr and sent again after ``Retry-After``; the task's outcome is the command's."""
    async with serving([sys.executable, MISBEHAVING, "polls-refused"]) as served:
        ran = await client("call", served.url, "t", "--no-listen", "--json")
    assert ran.status == 0, ran.stderr
    assert json.loads(ran.stdout) == {"content": []}
    assert ran.stderr.count("; polling again in ") == 2, ran.stderr
    assert "HTTP 429 Too Many Requests (Retry-After: 0)" in ran.stderr
    assert "JSON-RPC error -32603: store out of reach" in ran.stderr


async def test_a_task_stream_refused_for_now_is_tried_again_or_polled() -> None:
    """SEP-2694 (a draft) as docs/client.md (Following a task's events) reads it: a
    ``tasks/stream`` refused for now, 429 in plain text as a proxy sends it or presa's
    retryable -32603, is tried again by ``task stream`` and left for polling by
    ``call``; either ends with the task's outcome, not with the refusal."""
    async with serving([sys.executable, MISBEHAVING, "stream-refused"]) as served:
        streamed = await client("task", "stream", served.url, "T")
    assert streamed.status == 0, streamed.stderr
    assert streamed.stderr.count("; trying again in ") == 2, streamed.stderr
    async with serving([sys.executable, MISBEHAVING, "stream-refused"]) as served:
        called = await client("call", served.url, "t", "--json")
    assert called.status == 0, called.stderr
    assert json.loads(called.stdout) == {"content": []}


async def test_media_types_are_read_whatever_their_case() -> None:
    """Spec-mandated (streamable-http §Sending Messages 6: the client MUST support both
    ``application/json`` and ``text/event-stream``; RFC 9110 §8.3.1: a media type's
    type and subtype are case-insensitive): ``APPLICATION/JSON`` is JSON, and
    ``TEXT/EVENT-STREAM`` an event stream, not a server that is no MCP server."""
    async with serving([sys.executable, MISBEHAVING, "media-types-in-capitals"]) as served:
        ran = await client("call", served.url, "t", "--json")
    assert ran.status == 0, ran.stderr
    assert json.loads(ran.stdout) == {"content": []}


async def test_a_poll_interval_past_any_float_is_waited_not_a_crash() -> None:
    """SEP-2663 §Task Polling (clients SHOULD respect ``pollIntervalMs``, a JSON number
    of any size): 10**400 ms is waited as the longest wait there is, which Ctrl-C
    ends (exit 130), not an OverflowError's traceback."""
    stderr = await interrupted_call("poll-interval-huge")
    assert "Traceback" not in stderr
    assert stderr.endswith("task T: cancelled")


async def test_a_listen_never_acknowledged_is_given_up_after_the_timeout() -> None:
    """Spec-mandated (basic/patterns/subscriptions §Acknowledgment: the server MUST send
    the acknowledgement first): a stream that brings none is a request unanswered,
    bound by ``--timeout``. ``listen`` ends (exit 3); a followed task polls instead of
    waiting on it for ever."""
    async with serving([sys.executable, MISBEHAVING, "listen-unacknowledged"]) as served:
        listened = await client("listen", served.url, "--timeout", "1")
        called = await client("call", served.url, "t", "--timeout", "1")
    assert listened.status == 3
    assert listened.error() == f"{served.url} did not answer subscriptions/listen within 1 s"
    assert (called.status, called.stdout) == (0, "done\n"), called.stderr


async def test_a_result_whose_id_is_no_id() -> None:
    """Spec-mandated (basic/index §Responses: the same id as the request; §Requests: a
    string or an integer): a result with ``"id": true`` or ``"id": 1.0`` answers no
    request, though Python finds both equal to the id 1: the server's mistake, exit 3."""
    for wrong in ("id-true", "id-float"):
        async with serving([sys.executable, MISBEHAVING, wrong]) as served:
            ran = await client("discover", served.url)
        assert ran.status == 3, wrong
        assert ran.error() == (
            f"{served.url} answered server/discover with an id that is not the request's"
        ), wrong
