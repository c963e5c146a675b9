"""No sessions in 2026-07-28: session and resumption headers change nothing.

Spec: 2026-07-28 basic/transports/streamable-http §Earlier Streamable HTTP
Revisions, §Receiving Messages (no resumption).
"""

from __future__ import annotations

from typing import Any

import pytest
from trio.testing import MockClock

from presa_trio.testing import McpClient, headers_for, meta, request
from tests.expect import result_of

STALE = {"mcp-session-id": "a-session-from-2025", "last-event-id": "17"}
PROGRESS = request(
    "tools/call",
    {
        "name": "test_tool_with_progress",
        "arguments": {},
        "_meta": meta(progressToken="p-1"),
    },
)


@pytest.mark.parametrize(
    "message",
    [request("server/discover"), PROGRESS],
    ids=["json", "sse"],
)
async def test_session_and_resumption_headers_are_ignored(
    client: McpClient, autojump_clock: MockClock, message: dict[str, Any]
) -> None:
    """Spec-mandated (streamable-http §Earlier Streamable HTTP Revisions: no
    Mcp-Session-Id; ignore Mcp-Session-Id and Last-Event-ID, never mint a
    session id; H-32): a request carrying both is answered exactly as without them,
    as plain JSON or as an SSE stream, and no response names a session."""
    plain = await client.post(message, headers_for(message))
    stale = await client.post(message, {**headers_for(message), **STALE})
    for response in (plain, stale):
        result_of(response)
        assert "mcp-session-id" not in response.headers
    assert stale.status == plain.status
    assert stale.headers["content-type"] == plain.headers["content-type"]
    if plain.headers["content-type"] == "text/event-stream":
        assert [e.get("method") for e in stale.events()] == [
            e.get("method") for e in plain.events()
        ]
    else:
        assert stale.json() == plain.json()
