"""The comparison in docs/api.md, regenerated: one server in three libraries, each run.

The same small server is written with presa, with the official SDK's
``MCPServer`` and with FastMCP. Each version runs under its own library's
client and reports the same facts: the library's version, the protocol
revision client and server settled on, whether ``delete`` ran as a
SEP-2663 task, and the answer of every part (two tools, a resource, a
prompt, the asking tool). presa's and the SDK's run here, in the test
environment (``mcp`` is a test dependency). FastMCP's runs in a venv this
module builds, since FastMCP and its tasks package bring their own pins
beside presa's test set (``docs/comparison/fastmcp_run.py`` is its client).
The table is then built from those facts and the files' line counts; the
test fails, printing the table it built, where docs/api.md says otherwise.

Rules of this file: every external command has a timeout; the venv build,
about a minute with a warm pip cache, is marked ``builds_venv``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

import attrs
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult, TextContent, TextResourceContents

from examples.comparison import presa_server, sdk_mcpserver
from presa_trio.testing import accept, open_client
from presa_trio.wire.meta import PROTOCOL_VERSION
from tests.installs import run

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "api.md"
COMPARISON = ROOT / "docs" / "comparison"
#: The versions of FastMCP and of its tasks package the table speaks of.
FASTMCP = ("fastmcp==4.1.4", "fastmcp-tasks==4.1.4")
#: What every version answers: each part called as the tests call it.
ANSWERS = {
    "greet": "Hello, Ada! Hello, Ada!",
    "weather": {"city": "Oslo", "celsius": 21.5},
    "note": "Nothing planned.",
    "prompt": "Summarise this: x",
    "delete": "deleted",
}
HEADER = "| file | library | lines | revision | `delete` runs as |"


@attrs.frozen
class Run:
    """What one version did, as its own client saw it."""

    file: str
    library: str
    revision: str
    # True when ``delete``, called by a client that declares Tasks, became a task.
    delete_as_task: bool
    answers: Mapping[str, Any]

    def row(self) -> str:
        link = f"[`{self.file}`]({'../' if self.file.startswith('examples') else ''}"
        target = self.file if self.file.startswith("examples") else self.file.removeprefix("docs/")
        ran = "a SEP-2663 task" if self.delete_as_task else "a plain call"
        lines = code_lines(ROOT / self.file)
        return f"| {link}{target}) | {self.library} | {lines} | {self.revision} | {ran} |"


def code_lines(path: Path) -> int:
    """Lines that are neither blank nor comments."""
    stripped = (line.strip() for line in path.read_text().splitlines())
    return sum(1 for line in stripped if line and not line.startswith("#"))


def table(runs: list[Run]) -> str:
    return "\n".join([HEADER, "| --- | --- | --: | --- | --- |", *(run.row() for run in runs)])


async def presa_run() -> Run:
    """presa's version under presa's typed testing client."""
    async with open_client(presa_server.server, answer=[accept({"ok": True})]) as client:
        greeting = await client.call_tool("greet", {"name": "Ada", "times": 2})
        weather = await client.call_tool("weather", {"city": "Oslo"})
        (note,) = await client.read_resource("notes://today")
        prompt = await client.get_prompt("summarise", {"text": "x"})
        task = await client.start_task("delete", {"path": "a"})
        deleted = await task.result()
    (message,) = prompt.messages
    assert hasattr(note, "text")
    assert hasattr(message.content, "text")
    answers = {
        "greet": greeting.text,
        "weather": weather.structured,
        "note": note.text,
        "prompt": message.content.text,
        "delete": deleted.text,
    }
    library = f"presa_trio {version('presa-trio')}"
    return Run("examples/comparison/presa_server.py", library, PROTOCOL_VERSION, True, answers)


async def accept_ok(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"ok": True})


async def sdk_run() -> Run:
    """The SDK's version under the SDK's own in-memory client, the revision negotiated."""
    async with Client(sdk_mcpserver.server, elicitation_callback=accept_ok) as client:
        greeting = await client.call_tool("greet", {"name": "Ada", "times": 2})
        weather = await client.call_tool("weather", {"city": "Oslo"})
        note = await client.read_resource("notes://today")
        prompt = await client.get_prompt("summarise", {"text": "x"})
        deleted = await client.call_tool("delete", {"path": "a"})
        revision = client.protocol_version
    texts = [greeting.content[0], deleted.content[0], prompt.messages[0].content]
    assert all(isinstance(block, TextContent) for block in texts)
    assert isinstance(note.contents[0], TextResourceContents)
    answers = {
        "greet": getattr(texts[0], "text", None),
        "weather": weather.structured_content,
        "note": note.contents[0].text,
        "prompt": getattr(texts[2], "text", None),
        "delete": getattr(texts[1], "text", None),
    }
    library = f"`mcp` {version('mcp')} `MCPServer`"
    # The SDK's client cannot declare Tasks, nor its server make one.
    return Run("examples/comparison/sdk_mcpserver.py", library, revision, False, answers)


@pytest.fixture(scope="module")
def fastmcp_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """FastMCP's version under FastMCP's client, in a venv of its own."""
    root = tmp_path_factory.mktemp("fastmcp")
    run(sys.executable, "-m", "venv", root / "venv", cwd=root)
    python = root / "venv" / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", *FASTMCP, cwd=root)
    facts_file = root / "facts.json"
    run(python, COMPARISON / "fastmcp_run.py", facts_file, cwd=COMPARISON)
    facts = json.loads(facts_file.read_text())
    library = f"FastMCP {facts['fastmcp']} (with fastmcp-tasks {facts['fastmcp_tasks']})"
    return Run(
        "docs/comparison/fastmcp_server.py",
        library,
        facts["revision"],
        facts["delete_as_task"],
        facts["answers"],
    )


def documented() -> str:
    """The comparison table as docs/api.md holds it."""
    text = PAGE.read_text()
    start = text.index(HEADER)
    end = text.index("\n\n", start)
    return text[start:end]


@pytest.mark.builds_venv
async def test_the_table_is_what_the_three_versions_did(fastmcp_run: Run) -> None:
    """presa-defined (docs/api.md, the comparison): every version answers every part
    alike; the table's versions, line counts, revisions and task column are the
    ones measured now, and presa's server is not the longest."""
    runs = [await presa_run(), await sdk_run(), fastmcp_run]
    assert {run.file: dict(run.answers) for run in runs} == {run.file: ANSWERS for run in runs}
    built = table(runs)
    assert documented() == built, f"docs/api.md should hold:\n{built}"
    lines = {run.file: code_lines(ROOT / run.file) for run in runs}
    assert lines[runs[0].file] < max(lines.values())


async def test_presa_and_the_sdk_answer_every_part_as_the_table_says() -> None:
    """presa-defined (docs/api.md, the comparison): the two versions that run in the
    test environment, without building a venv, answer alike and match their rows."""
    runs = [await presa_run(), await sdk_run()]
    assert [dict(run.answers) for run in runs] == [ANSWERS, ANSWERS]
    rows = documented().splitlines()
    assert [run.row() for run in runs] == rows[2:4]
