"""A server that gets one thing wrong: ``python misbehaving_server.py WRONG``.

It answers every request as :data:`ANSWERS` says for WRONG; most list one
tool, ``t``, taking any arguments, and get the answer to the rest wrong.
An answer that starts ``data:`` is sent as an event stream.
Python's ``http.server`` writes the bytes as given, so what reaches the
client is exactly what a faulty server would send. It says where it serves on stderr, as presa does.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import sys
import time
from collections.abc import Callable
from typing import Any

TOOLS = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}


def response(request_id: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def answering(results: dict[str, Any], otherwise: Any) -> Callable[[str, Any], bytes]:
    """Lists the tool ``t``; answers a method of ``results`` with its result (or its
    bytes, as they are), and every other method with ``otherwise``."""

    def answer(method: str, request_id: Any) -> bytes:
        found = TOOLS if method == "tools/list" else results.get(method, otherwise)
        return found if isinstance(found, bytes) else response(request_id, found)

    return answer


def asking(request: Any) -> Callable[[str, Any], bytes]:
    """Lists the tool ``t``; answers every other request with ``request`` under the key ``k``."""
    return answering({}, {"resultType": "input_required", "inputRequests": {"k": request}})


def tools_listed(tools: Any) -> Callable[[str, Any], bytes]:
    """Answers ``tools/list`` with ``tools``: what the client reads first."""
    return lambda method, request_id: response(request_id, tools)


#: What each kind of wrong answers a request with, given its method and id.
ANSWERS: dict[str, Callable[[str, Any], bytes]] = {
    # RFC 8259 §6: no NaN in JSON; Python's json.loads reads it all the same.
    "nan": lambda method, request_id: b'{"jsonrpc":"2.0","id":%d,"result":{"n":NaN}}' % request_id,
    # The first request's id, 1, answered as true and as 1.0: equal to 1 in Python, but
    # no JSON-RPC id (basic/index §Requests: a string or an integer).
    "past-a-float": lambda method, request_id: (
        b'{"jsonrpc":"2.0","id":%d,"result":{"n":1e400}}' % request_id
    ),
    "deep": lambda method, request_id: (
        b'{"jsonrpc":"2.0","id":%d,"result":{"n":%s1%s}}'
        % (request_id, b"[" * 100_000, b"]" * 100_000)
    ),
    "input-requests-list": answering(
        {}, {"resultType": "input_required", "inputRequests": [{"method": "roots/list"}]}
    ),
    # A task that waits for input, whose inputRequests are a string.
    "task-input-requests-string": answering(
        {"tools/call": {"resultType": "task", "taskId": "T", "status": "input_required"}},
        {"taskId": "T", "status": "input_required", "inputRequests": "answer me"},
    ),
    "server-info-number": answering(
        {}, {"supportedVersions": ["2026-07-28"], "capabilities": {}, "serverInfo": 5}
    ),
    # Numbers where arrays belong: a result's content, contents, messages, versions.
    "arrays-as-numbers": answering(
        {"prompts/list": {"prompts": [{"name": "p"}]}},
        {"content": 5, "contents": 5, "messages": 5, "supportedVersions": 5},
    ),
    "property-type-number": tools_listed(
        {"tools": [{"name": "t", "inputSchema": {"properties": {"x": {"type": 5}}}}]}
    ),
    # A task, and a listen acknowledged with a number for the task ids it agrees to.
    "task-ids-number": answering(
        {
            "tools/call": {"resultType": "task", "taskId": "T", "status": "working"},
            "subscriptions/listen": b'data: {"jsonrpc":"2.0",'
            b'"method":"notifications/subscriptions/acknowledged",'
            b'"params":{"notifications":{"taskIds":5}}}\n\n',
        },
        {"taskId": "T", "status": "completed", "result": {"content": []}},
    ),
    "error-string": lambda method, request_id: json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": "no"}
    ).encode(),
    # A result whose id is no id (true, 1.0), though Python finds each equal to 1.
    "id-true": lambda method, request_id: (
        b'{"jsonrpc":"2.0","id":true,"result":{"supportedVersions":[],"capabilities":{}}}'
    ),
    "id-float": lambda method, request_id: (
        b'{"jsonrpc":"2.0","id":%d.0,"result":{"supportedVersions":[],"capabilities":{}}}'
        % request_id
    ),
    # An error with no id, as an error to a request whose id went unread is sent.
    "error-without-id": lambda method, request_id: (
        b'{"jsonrpc":"2.0","error":{"code":-32600,"message":"unread"}}'
    ),
    # A task that works on, and refuses tasks/cancel.
    "cancel-refused": answering(
        {
            "tools/call": {"resultType": "task", "taskId": "T", "status": "working"},
            "tasks/cancel": b'{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"no"}}',
        },
        {"taskId": "T", "status": "working"},
    ),
    # A task whose status is an array.
    "status-array": answering({}, {"taskId": "T", "status": ["working"]}),
    # A task as the answer to every request but the lists: only tools/call may be one.
    "task-everywhere": answering(
        {"prompts/list": {"prompts": [{"name": "p"}]}},
        {
            "resultType": "task",
            "taskId": "T",
            "status": "working",
            "createdAt": "2026-07-28T00:00:00Z",
            "lastUpdatedAt": "2026-07-28T00:00:00Z",
            "ttlMs": None,
        },
    ),
    # Input requests the client does not declare: sampling with tools, a URL-mode
    # elicitation, and a method no input request has.
    "sampling-with-tools": asking(
        {
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Weather?"}}],
                "maxTokens": 10,
                "tools": [{"name": "weather", "inputSchema": {"type": "object"}}],
            },
        }
    ),
    "elicitation-url": asking(
        {
            "method": "elicitation/create",
            "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/"},
        }
    ),
    "input-method-ping": asking({"method": "ping"}),
    # An input_required round whose requestState is a number, with nothing to answer.
    "request-state-number": answering({}, {"resultType": "input_required", "requestState": 7}),
    # An input_required round with neither inputRequests nor requestState.
    "input-required-bare": answering({}, {"resultType": "input_required"}),
    # A result of a kind no specification defines, and one whose kind is a number.
    "result-type-unknown": answering(
        {}, {"resultType": "partial", "content": [{"type": "text", "text": "hi"}]}
    ),
    "result-type-number": answering(
        {}, {"resultType": 1, "content": [{"type": "text", "text": "hi"}]}
    ),
    # Not wrong: a form of choices, one titled and several untitled, asked on every call.
    "choices": asking(
        {
            "method": "elicitation/create",
            "params": {
                "message": "Colours?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "main": {
                            "type": "string",
                            "oneOf": [
                                {"const": "#f00", "title": "Red"},
                                {"const": "#00f", "title": "Blue"},
                            ],
                        },
                        "more": {
                            "type": "array",
                            "items": {"type": "string", "enum": ["green", "grey"]},
                        },
                        "titled": {
                            "type": "array",
                            "items": {"anyOf": [{"const": "#0f0", "title": "Green"}]},
                        },
                    },
                },
            },
        }
    ),
    # Text that would drive a terminal: escape sequences, CR, BEL and a C1 CSI in a
    # tool's result, a question and an error's message; CRLF line ends in the result.
    "controls": answering(
        {
            "prompts/list": {"prompts": [{"name": "p"}]},
            "tools/call": {
                "content": [{"type": "text", "text": "a\x1b[2Jb\rc\x07d\x9b31m\r\nnext"}]
            },
            "prompts/get": {
                "resultType": "input_required",
                "inputRequests": {
                    "k": {
                        "method": "elicitation/create",
                        "params": {
                            "message": "Sign\x1b[8min",
                            "requestedSchema": {"type": "object", "properties": {}},
                        },
                    }
                },
            },
        },
        b'{"jsonrpc":"2.0","id":null,'
        b'"error":{"code":-32002,"message":"gone\\u001b]0;owned\\u0007\\nsecond line"}}',
    ),
    # A server-to-client request on a response's stream (streamable-http §Receiving
    # Messages: MUST NOT), before the response, as servers of the 2025 era sent them.
    "request-on-stream": answering(
        {
            "tools/call": b'data: {"jsonrpc":"2.0","id":"s1","method":"roots/list"}\n\n'
            b'data: {"jsonrpc":"2.0","id":2,"result":{"content":[]}}\n\n',
        },
        {},
    ),
    # A task whose first polls are refused for now (REFUSED_POLLS), then completed.
    "polls-refused": answering(
        {
            "tools/call": {
                "resultType": "task",
                "taskId": "T",
                "status": "working",
                "pollIntervalMs": 50,
            }
        },
        {"taskId": "T", "status": "completed", "result": {"content": []}},
    ),
    # A task with an event stream whose first streams are refused for now
    # (REFUSED_POLLS), then one that ends with the task's log: ``{}``.
    "stream-refused": answering(
        {
            "server/discover": {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {
                    "extensions": {"io.modelcontextprotocol/tasks": {"eventStreams": {}}}
                },
            },
            "tools/call": {
                "resultType": "task",
                "taskId": "T",
                "status": "working",
                "pollIntervalMs": 50,
            },
            "tasks/stream": {},
        },
        {"taskId": "T", "status": "completed", "result": {"content": []}},
    ),
    # A task whose statusMessage spans two lines.
    "status-two-lines": answering(
        {"tools/call": {"resultType": "task", "taskId": "T", "status": "working"}},
        {"taskId": "T", "status": "completed", "statusMessage": "done\nreally", "result": {}},
    ),
    # A listen whose task notification's statusMessage spans two lines, then its end.
    "listen-two-lines": answering(
        {
            "subscriptions/listen": b'data: {"jsonrpc":"2.0",'
            b'"method":"notifications/subscriptions/acknowledged",'
            b'"params":{"notifications":{"taskIds":["T"]}}}\n\n'
            b'data: {"jsonrpc":"2.0","method":"notifications/tasks",'
            b'"params":{"taskId":"T","status":"working","statusMessage":"a\\nb"}}\n\n'
            b'data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n',
        },
        {},
    ),
    # Not wrong: media types in capitals, with parameters (RFC 9110 §8.3.1: the type
    # and subtype are case-insensitive); tools/call answered as an event stream.
    "media-types-in-capitals": answering(
        {"tools/call": b'data: {"jsonrpc":"2.0","id":2,"result":{"content":[]}}\n\n'}, {}
    ),
    # A task to poll again in 10**400 ms, more than a float holds; cancelled when asked.
    "poll-interval-huge": answering(
        {
            "tools/call": {
                "resultType": "task",
                "taskId": "T",
                "status": "working",
                "pollIntervalMs": 10**400,
            }
        },
        {"taskId": "T", "status": "cancelled"},
    ),
    # A task, and a listen held open with keep-alive comments but never acknowledged
    # (the Handler's own; basic/patterns/subscriptions §Acknowledgment: MUST be first).
    "listen-unacknowledged": answering(
        {"tools/call": {"resultType": "task", "taskId": "T", "status": "working"}},
        {
            "taskId": "T",
            "status": "completed",
            "result": {"content": [{"type": "text", "text": "done"}]},
        },
    ),
    # A suggestion that spans two lines.
    "suggestion-two-lines": answering(
        {
            "prompts/list": {"prompts": [{"name": "p", "arguments": [{"name": "a"}]}]},
            "completion/complete": {"completion": {"values": ["x\ny", "z"]}},
        },
        {},
    ),
    "item-not-object": tools_listed({"tools": [5]}),
    "same-cursor": tools_listed({"tools": [], "nextCursor": "again"}),
    # A cursor that is a number: no cursor, and no end of the list either.
    "number-cursor": tools_listed({"tools": [], "nextCursor": 2}),
}


#: How ``polls-refused`` (``stream-refused``) answers its first polls (streams): a rate
#: limit in plain text, then a store out of reach as presa says it (-32603,
#: ``retryable``); the next is answered.
REFUSED_POLLS = (
    (429, "text/plain", b"Too many tasks/get requests"),
    (
        503,
        "application/json",
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"store out of reach",'
        b'"data":{"retryable":true}}}',
    ),
)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wrong = ""
    #: The ``tasks/get`` (``tasks/stream``) requests ``polls-refused``
    #: (``stream-refused``) has had.
    polls = 0

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.wrong == "listen-unacknowledged" and message["method"] == "subscriptions/listen":
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            with contextlib.suppress(OSError):  # until the client gives up
                while True:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    time.sleep(0.1)
            return
        if self.wrong == "redirect":  # the endpoint moved: a slash added, as a mount does
            self.send_response(307)
            self.send_header("location", f"http://{self.headers['host']}/mcp/")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        refused = {"polls-refused": "tasks/get", "stream-refused": "tasks/stream"}
        if message["method"] == refused.get(self.wrong):
            Handler.polls += 1
            if Handler.polls <= len(REFUSED_POLLS):
                status, kind, body = REFUSED_POLLS[Handler.polls - 1]
                self.send_response(status)
                self.send_header("retry-after", "0")
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
        if self.wrong == "unavailable":  # overloaded, as a proxy says so: plain text
            body = b"Service Unavailable: try again shortly"
            self.send_response(503)
            self.send_header("retry-after", "7")
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        body = ANSWERS[self.wrong](message["method"], message["id"])
        self.send_response(200)
        stream = body.startswith(b"data: ")
        kind = "text/event-stream" if stream else "application/json"
        if self.wrong == "media-types-in-capitals":
            kind = kind.upper() + "; charset=UTF-8"
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: stderr is read for the line that says where it serves."""


if __name__ == "__main__":
    Handler.wrong = sys.argv[1]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"serving http://127.0.0.1:{server.server_port}/mcp", file=sys.stderr, flush=True)
    server.serve_forever()
