"""FastMCP's version of the comparison server under FastMCP's own client: what it did, as JSON.

``python fastmcp_run.py FILE``, from this directory, writes the facts to
FILE. tests/docs/test_comparison.py runs it in a venv of its own holding
FastMCP and fastmcp-tasks, and builds docs/api.md's table from them: the
versions, the protocol revision the client settled on, whether ``delete``
ran as a task, and each part's answer.
"""

import asyncio
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp_server import mcp
from fastmcp_tasks import call_tool_task


async def accept(message: str, response_type: Any, params: Any, context: Any) -> Any:
    """The user says yes to every question."""
    return {"ok": True}


async def main() -> dict[str, Any]:
    async with Client(mcp, elicitation_handler=accept) as client:
        greeting = await client.call_tool("greet", {"name": "Ada", "times": 2})
        weather = await client.call_tool("weather", {"city": "Oslo"})
        (note,) = await client.read_resource("notes://today")
        prompt = await client.get_prompt("summarise", {"text": "x"})
        task = await call_tool_task(client, "delete", {"path": "a"})
        deleted = await task.result()
        revision = client.protocol_version
    return {
        "fastmcp": version("fastmcp"),
        "fastmcp_tasks": version("fastmcp-tasks"),
        "revision": revision,
        # call_tool_task raises unless the server answered with a task.
        "delete_as_task": bool(task.task_id),
        "answers": {
            "greet": greeting.content[0].text,
            "weather": weather.structured_content,
            "note": note.text,
            "prompt": prompt.messages[0].content.text,
            "delete": deleted.content[0].text,
        },
    }


Path(sys.argv[1]).write_text(json.dumps(asyncio.run(main())))
