"""Recording a documented session, and finding its rendering in a docs page."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from presa_trio.demo import build_app
from presa_trio.http.transcript import TranscriptRecorder
from presa_trio.http.transcript_render import render_lines
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, running
from tests.http.ticks import Ticks

DOCS = Path(__file__).resolve().parents[2] / "docs"
RECORDING = DOCS / "tasks-session.jsonl"
PAGE = DOCS / "tasks-session.md"
BEGIN = "<!-- begin: `presa-trio transcript docs/tasks-session.jsonl` (tested; do not edit) -->"
END = "<!-- end of the rendered transcript -->"
# What changes from one run to the next: times, and the ids the server draws.
VOLATILE_KEYS = frozenset({"started", "at", "createdAt", "lastUpdatedAt"})


async def asked(client: McpClient, task_id: str) -> None:
    """Wait, without recording it, until the task's worker has asked for input."""
    for _ in range(1000):
        if (await client.get_task(task_id))["status"] == "input_required":
            return
        await trio.sleep(0.01)
    raise AssertionError("the worker never asked for input")


def exchanges(path: Path) -> list[Any]:
    """The recorded exchanges in the order they started, normalised."""
    records = sorted(
        (json.loads(line) for line in path.read_text().splitlines()),
        key=lambda record: float(record["started"]),
    )
    task_id = records[0]["response"]["body"]["result"]["taskId"]
    return [normalised(record, task_id) for record in records]


def rendered_section(page: str, begin: str = BEGIN, end: str = END) -> str:
    """The text between the page's markers."""
    start = page.index(begin) + len(begin)
    return page[start : page.index(end, start)].strip("\n")


def write_recording_and_page(
    recording: Path = RECORDING,
    record: Callable[[Path], Awaitable[None]] | None = None,
    begin: str = BEGIN,
    end: str = END,
    page_path: Path = PAGE,
) -> None:
    """Record the session into docs/ and put its rendering between the page's markers."""
    recording.unlink(missing_ok=True)
    trio.run(record or record_session, recording)
    page = page_path.read_text()
    head, rest = page.split(begin, 1)
    tail = rest.split(end, 1)[1]
    rendered = render_lines(recording.read_text().splitlines()).strip("\n")
    page_path.write_text(f"{head}{begin}\n\n{rendered}\n\n{end}{tail}")
    print(f"wrote {recording} and its rendering into {page_path}", file=sys.stderr)


async def statuses_until(stream: Any, wanted: str) -> None:
    """Read ``notifications/tasks`` from a listen stream until the task is ``wanted``."""
    while True:
        message = await stream.next_message()
        if message.get("params", {}).get("status") == wanted:
            return


async def record_session(target: Path) -> None:
    """Run the page's curl session against the demo server, recording every exchange."""
    app = build_app()
    async with running(app) as unrecorded:
        client = McpClient(app, asgi=TranscriptRecorder(app, target, Ticks()))
        created = await client.call_tool(
            "confirm_delete", {"filename": "a.txt"}, capabilities=TASKS_CAPABILITIES
        )
        task_id = created["taskId"]
        with trio.fail_after(10):
            async with client.listen({"taskIds": [task_id]}, capabilities=TASKS_CAPABILITIES) as s:
                await s.next_message()  # the acknowledgement
                await asked(unrecorded, task_id)
                await client.get_task(task_id)
                answer = {"action": "accept", "content": {"confirm": True}}
                await client.update_task(task_id, {"confirm-delete": answer})
                await statuses_until(s, "completed")
                await client.get_task(task_id)


def transient(event: Any) -> bool:
    """A ``working`` notification, which the listen stream sends only if it looks in time.

    The stream sends the task as it finds it when woken: a worker that
    completes at once after ``tasks/update`` may already be ``completed``.
    """
    return isinstance(event, dict) and event.get("data", {}).get("params", {}).get("status") == (
        "working"
    )


def normalised(value: Any, task_id: str) -> Any:
    """``value`` with times and transient notifications dropped, the task id a placeholder."""
    if isinstance(value, dict):
        return {k: normalised(v, task_id) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [normalised(item, task_id) for item in value if not transient(item)]
    if isinstance(value, str):
        return value.replace(task_id, "<taskId>")
    return value
