from tests.mcp_client import McpClient


async def test_discover_answers_json(client: McpClient) -> None:
    response = await client.call("server/discover")
    assert response.status == 200
    assert response.json()["result"]["supportedVersions"] == ["2026-07-28"]


async def test_progress_streams_sse(client: McpClient) -> None:
    from tests.mcp_client import meta
    response = await client.call(
        "tools/call", {"name": "test_tool_with_progress", "_meta": meta(progressToken="t")}
    )
    assert response.headers["content-type"] == "text/event-stream"
    events = response.events()
    assert [e.get("method") for e in events[:3]] == ["notifications/progress"] * 3
    assert events[-1]["result"]["resultType"] == "complete"
