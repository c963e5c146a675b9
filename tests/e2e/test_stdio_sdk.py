"""End to end: the official Python SDK's stdio client (``mcp``) launches ``presa-trio
stdio`` as its subprocess, as an editor does.

Rules of this file: the SDK starts and stops the server itself (it closes
stdin, then waits); every exchange is bounded by ``trio.fail_after``.
``mode="2026-07-28"`` makes the client speak this revision without probing
for the 2025 handshake.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import trio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import TextContent

#: The checkout, whose ``tests`` package the server's target is imported from.
ROOT = Path(__file__).resolve().parents[2]
#: Where the SDK's stdio transport logs a line from the server it cannot read.
STDIO_LOG = "mcp.client.stdio"


async def test_the_sdk_serves_itself_from_a_server_that_prints(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Spec-mandated (basic/transports/stdio: the server MUST NOT write anything to its
    stdout that is not a valid MCP message): the SDK lists and calls the tools of a
    server whose module, tools and child processes print to stdout or read stdin,
    gets exactly their answers, and never meets a line it cannot read (the SDK logs
    each such line and goes on)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "presa_trio", "stdio", "tests.e2e.printing_server:server"],
        cwd=ROOT,
    )
    with trio.fail_after(30):
        async with Client(stdio_client(params), mode="2026-07-28") as client:
            listed = await client.list_tools()
            called = await client.call_tool("stray", {})
            read = await client.call_tool("read_stdin", {})
    assert {tool.name for tool in listed.tools} == {"stray", "read_stdin"}
    assert called.content == [TextContent(type="text", text="done")]
    assert read.content == [TextContent(type="text", text="0 0")]
    assert [record.getMessage() for record in caplog.records if record.name == STDIO_LOG] == []
