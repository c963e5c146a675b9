"""Serialized MCP requests, exactly as a correct 2026-07-28 client sends them.

Every request is one POST carrying the mirrored headers (``Mcp-Method``,
``Mcp-Name``) and a ``params._meta`` with the protocol version and the
client's capabilities (basic/index §_meta; streamable-http §Standard Request Headers).
"""

from __future__ import annotations

import json
from typing import Any, Final

PROTOCOL_VERSION: Final = "2026-07-28"
TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
PLAIN_CAPABILITIES: Final[dict[str, Any]] = {}
TASK_CAPABILITIES: Final[dict[str, Any]] = {
    "elicitation": {},
    "extensions": {TASKS_EXTENSION: {}},
}

#: Which params key ``Mcp-Name`` mirrors, per method (streamable-http §Standard Request Headers;
#: SEP-2663 §Streamable HTTP: Routing Headers).
NAME_PARAMS: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def body(
    method: str,
    params: dict[str, Any] | None = None,
    *,
    capabilities: dict[str, Any] | None = None,
    request_id: int = 1,
) -> bytes:
    full = dict(params or {})
    full["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
        "io.modelcontextprotocol/clientCapabilities": (
            PLAIN_CAPABILITIES if capabilities is None else capabilities
        ),
    }
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": full}
    return json.dumps(message, separators=(",", ":")).encode()


def http_request(
    port: int,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    capabilities: dict[str, Any] | None = None,
    request_id: int = 1,
) -> bytes:
    """The whole HTTP/1.1 request for one JSON-RPC request, ready to write."""
    payload = body(method, params, capabilities=capabilities, request_id=request_id)
    lines = [
        b"POST /mcp HTTP/1.1",
        b"Host: localhost:%d" % port,
        b"Content-Type: application/json",
        b"Accept: application/json, text/event-stream",
        b"MCP-Protocol-Version: " + PROTOCOL_VERSION.encode(),
        b"Mcp-Method: " + method.encode(),
    ]
    key = NAME_PARAMS.get(method)
    if key is not None and params is not None and isinstance(params.get(key), str):
        lines.append(b"Mcp-Name: " + str(params[key]).encode())
    lines.append(b"Content-Length: %d" % len(payload))
    return b"\r\n".join(lines) + b"\r\n\r\n" + payload


def result_of(raw: bytes) -> dict[str, Any]:
    """The ``result`` of a JSON-RPC response body; an error response raises."""
    message = json.loads(raw)
    if "result" not in message:
        raise ValueError(f"JSON-RPC error: {message.get('error')!r}")
    result: dict[str, Any] = message["result"]
    return result


def h2_request(
    port: int,
    method: str,
    params: dict[str, Any] | None = None,
) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The same request as :func:`http_request`, as HTTP/2 header fields and a body."""
    payload = body(method, params)
    headers = [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":authority", b"localhost:%d" % port),
        (b":path", b"/mcp"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", PROTOCOL_VERSION.encode()),
        (b"mcp-method", method.encode()),
    ]
    key = NAME_PARAMS.get(method)
    if key is not None and params is not None and isinstance(params.get(key), str):
        headers.append((b"mcp-name", str(params[key]).encode()))
    headers.append((b"content-length", b"%d" % len(payload)))
    return headers, payload
