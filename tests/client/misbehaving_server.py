"""A server that gets one thing wrong: ``python misbehaving_server.py WRONG``.

It lists one tool, ``t``, taking any arguments, and answers every other
request as :data:`ANSWERS` says for WRONG; a WRONG of :data:`LISTINGS`
gets ``tools/list`` itself wrong. Python's ``http.server`` writes the bytes
as given, so what reaches the client is exactly what a faulty server
would send. It says where it serves on stderr, as presa does.
"""

from __future__ import annotations

import http.server
import json
import sys
from collections.abc import Callable
from typing import Any

TOOLS = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}


def response(request_id: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


#: What each kind of wrong answers a request with, given its method and id.
ANSWERS: dict[str, Callable[[str, Any], bytes]] = {
    # RFC 8259 §6: no NaN in JSON; Python's json.loads reads it all the same.
    "nan": lambda method, request_id: b'{"jsonrpc":"2.0","id":%d,"result":{"n":NaN}}' % request_id,
    "deep": lambda method, request_id: (
        b'{"jsonrpc":"2.0","id":%d,"result":{"n":%s1%s}}'
        % (request_id, b"[" * 100_000, b"]" * 100_000)
    ),
    "input-requests-list": lambda method, request_id: response(
        request_id, {"resultType": "input_required", "inputRequests": [{"method": "roots/list"}]}
    ),
    "server-info-number": lambda method, request_id: response(
        request_id, {"supportedVersions": ["2026-07-28"], "capabilities": {}, "serverInfo": 5}
    ),
    # A task that waits for input, whose inputRequests are a string.
    "task-input-requests-string": lambda method, request_id: response(
        request_id,
        {"resultType": "task", "taskId": "T", "status": "input_required"}
        if method == "tools/call"
        else {"taskId": "T", "status": "input_required", "inputRequests": "answer me"},
    ),
}
#: What each kind of wrong answers ``tools/list`` with, given its id and cursor.
LISTINGS: dict[str, Callable[[Any, Any], bytes]] = {
    "item-not-object": lambda request_id, cursor: response(request_id, {"tools": [5]}),
    "same-cursor": lambda request_id, cursor: response(
        request_id, {"tools": [], "nextCursor": "again"}
    ),
}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wrong = ""

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        request_id, params = message["id"], message.get("params", {})
        if message["method"] != "tools/list":
            body = ANSWERS[self.wrong](message["method"], request_id)
        elif self.wrong in LISTINGS:
            body = LISTINGS[self.wrong](request_id, params.get("cursor"))
        else:
            body = response(request_id, TOOLS)
        self.send_response(200)
        self.send_header("content-type", "application/json")
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
