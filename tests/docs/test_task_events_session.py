"""The task event stream transcript in docs/task-events.md renders a recorded run, still true.

``docs/task-events-session.jsonl`` is what ``presa-trio serve --task-events
--transcript`` writes for the session docs/task-events.md shows: ``confirm_delete``
becomes a task; a ``tasks/stream`` reads its first three events and is cut
by the client; the task is answered; a second ``tasks/stream`` with
``after: 2`` delivers the rest and ends with the task. The task parks on its
question while the first stream is open, so the cut falls at the same event
on every run. The first test renders the recording exactly as ``presa-trio
transcript`` does and finds that rendering between the page's markers; the
second runs the session again and finds the same answers, ids and times aside.

To record it again after a deliberate change of the wire::

    .venv/bin/python -m tests.docs.test_task_events_session
"""

from __future__ import annotations

from pathlib import Path

import trio

from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.http.transcript import TranscriptRecorder
from presa_trio.http.transcript_render import render_lines
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.extension import TasksExtension
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, request, running
from tests.docs.session import (
    DOCS,
    asked,
    exchanges,
    rendered_section,
    write_recording_and_page,
)
from tests.http.ticks import Ticks

RECORDING = DOCS / "task-events-session.jsonl"
PAGE = DOCS / "task-events.md"
BEGIN = (
    "<!-- begin: `presa-trio transcript docs/task-events-session.jsonl` (tested; do not edit) -->"
)
END = "<!-- end of the rendered task event stream transcript -->"


def events_app() -> McpApp:
    """The demo served as ``presa-trio serve --task-events`` serves it."""
    server = build_server()
    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.enable_events(TaskEventLog())
    return McpApp.for_server(server)


async def record_session(target: Path) -> None:
    """Run the page's session against the demo server, recording every exchange."""
    app = events_app()
    async with running(app) as unrecorded:
        client = McpClient(app, asgi=TranscriptRecorder(app, target, Ticks()))
        created = await client.call_tool(
            "confirm_delete", {"filename": "a.txt"}, capabilities=TASKS_CAPABILITIES
        )
        task_id = created["taskId"]
        await asked(unrecorded, task_id)
        with trio.fail_after(10):
            first = request("tasks/stream", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES)
            async with client.stream(first) as cut:
                for _ in range(3):
                    await cut.next_message()
            answer = {"action": "accept", "content": {"confirm": True}}
            await client.update_task(task_id, {"confirm-delete": answer})
            resumed = request(
                "tasks/stream", {"taskId": task_id, "after": 2}, capabilities=TASKS_CAPABILITIES
            )
            await client.post(resumed)


def test_the_page_shows_the_rendering_of_the_recording() -> None:
    """presa-defined (docs/task-events.md, "A stream cut, resumed with `after`"; S-11): the
    stream transcript is generated, never hand-edited."""
    rendered = render_lines(RECORDING.read_text().splitlines())
    assert rendered_section(PAGE.read_text(), BEGIN, END) == rendered.strip("\n")


async def test_the_recorded_session_still_gets_the_same_answers(tmp_path: Path) -> None:
    """presa-defined (docs/task-events.md; S-03, S-11): the same requests, sent again, get the
    recorded answers: the cut stream's three events, the resumed stream's three and
    its result."""
    again = tmp_path / "session.jsonl"
    await record_session(again)
    assert exchanges(again) == exchanges(RECORDING)


if __name__ == "__main__":
    write_recording_and_page(RECORDING, record_session, BEGIN, END, PAGE)


def test_the_retention_table_names_each_flag_and_its_default() -> None:
    """Spec-recommended (SEP-2694 §Event Retention, "Receivers SHOULD document"; S-16):
    docs/task-events.md has a row per retention property, each with its flag and the default
    the command line uses."""
    from presa_trio.cli.main import build_parser

    page = PAGE.read_text()
    table = page[page.index("## Retention") :].split("\n\n")[2]
    rows = {line.split(" | ")[1].split()[0].strip("`"): line for line in table.splitlines()[2:]}
    serve = build_parser().parse_args(["serve"])
    assert set(rows) == {
        "--task-events-max",
        "--task-events-max-age",
        "--task-events-terminal-retention",
        "--task-events-max-payload",
    }
    assert f"| {serve.task_events_max} |" in rows["--task-events-max"]
    assert f"| {serve.task_events_max_age:g} " in rows["--task-events-max-age"]
    assert serve.task_events_terminal_retention is None
    assert "| as long as the task |" in rows["--task-events-terminal-retention"]
    assert f"| {serve.task_events_max_payload} |" in rows["--task-events-max-payload"]
