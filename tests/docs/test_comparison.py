"""The comparison in docs/api.md: its line counts are counted, and its servers run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from examples.comparison import presa_server, sdk_mcpserver
from presa_trio.testing import accept, open_client

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "api.md"
ROW = re.compile(r"^\| \[`(?P<file>[\w/.]+)`\]\([^)]*\) \| [^|]+ \| (?P<lines>\d+) \|", re.M)


def code_lines(path: Path) -> int:
    """Lines that are neither blank nor comments."""
    stripped = (line.strip() for line in path.read_text().splitlines())
    return sum(1 for line in stripped if line and not line.startswith("#"))


def table() -> dict[str, int]:
    return {match["file"]: int(match["lines"]) for match in ROW.finditer(PAGE.read_text())}


def test_the_table_counts_what_the_files_hold() -> None:
    """presa-defined (docs/api.md, the comparison): each figure is the file's count,
    and presa's server is not the longest."""
    counted = table()
    assert len(counted) == 3
    assert counted == {file: code_lines(ROOT / file) for file in counted}
    presa = counted["examples/comparison/presa_server.py"]
    assert presa < max(counted.values())


async def test_the_presa_version_runs() -> None:
    """presa-defined (docs/api.md, the comparison): every part of presa's version
    answers: tools (one structured), the resource, the prompt, the task."""
    async with open_client(presa_server.server, answer=[accept({"ok": True})]) as client:
        greeting = await client.call_tool("greet", {"name": "Ada", "times": 2})
        weather = await client.call_tool("weather", {"city": "Oslo"})
        note = await client.raw.send_request("resources/read", {"uri": "notes://today"})
        prompt = await client.raw.send_request(
            "prompts/get", {"name": "summarise", "arguments": {"text": "x"}}
        )
        task = await client.start_task("delete", {"path": "a"})
        deleted = await task.result()
    assert greeting.text == "Hello, Ada! Hello, Ada!"
    assert weather.structured == {"city": "Oslo", "celsius": 21.5}
    assert note.result["contents"][0]["text"] == "Nothing planned."
    assert prompt.result["messages"][0]["content"]["text"] == "Summarise this: x"
    assert deleted.text == "deleted"


@pytest.mark.parametrize("tool", ["greet", "weather"])
async def test_the_sdk_version_runs(tool: str) -> None:
    """presa-defined (docs/api.md, the comparison): the SDK version is real code
    that its own in-memory client calls on 2026-07-28."""
    calls: dict[str, dict[str, Any]] = {
        "greet": {"name": "Ada", "times": 2},
        "weather": {"city": "Oslo"},
    }
    arguments = calls[tool]
    async with Client(sdk_mcpserver.server, mode="2026-07-28") as client:
        result = await client.call_tool(tool, arguments)
    assert not result.is_error
