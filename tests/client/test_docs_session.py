"""The terminal session in docs/client.md, and its rendered transcript, still happen.

The test runs the page's session for real: ``presa-trio serve`` in a process
of its own, and ``presa-trio call`` with its stdin on a pseudo-terminal, so
the client asks its questions as it asks a person. The first call is a task
that asks mid-way and is answered at the terminal; the second is the same
task, interrupted at the question with SIGINT (what Ctrl-C sends). What the
client printed (the answers typed shown where they were typed) and the
rendered ``--transcript`` must be the page's, once the values that change
from run to run are replaced: task ids, times, and polls that found the task
as the poll before them had.

To write the page's blocks again after a deliberate change::

    .venv/bin/python -m tests.client.test_docs_session
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import trio

from presa_trio.http.transcript_render import render
from tests.client.helpers import on_terminal
from tests.e2e.serve_process import ServeProcess, presa_serve

PAGE = Path(__file__).resolve().parents[2] / "docs" / "client.md"
SCREEN = ("<!-- begin: the session (tested; do not edit) -->", "<!-- end of the session -->")
RENDERED = (
    "<!-- begin: its rendered transcript (tested; do not edit) -->",
    "<!-- end of the transcript -->",
)
SHOWN_URL = "http://127.0.0.1:3000/mcp"
STAMPS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z")


async def run_call(url: str, record: Path, filename: str, typed: list[str]) -> str:
    """``presa-trio call … confirm_delete`` on a terminal: type ``typed``, then Ctrl-C."""
    arguments = ("call", url, "confirm_delete", f"filename={filename}", "--no-listen")
    shown = await on_terminal([*arguments, "--transcript", str(record)], typed)
    return f"$ presa-trio {' '.join(arguments)} --transcript session.jsonl\n" + shown


def placeholders(text: str, url: str, task_ids: list[str]) -> str:
    """The run's task ids as ``TASK-1``, ``TASK-2``…, its times and URL as the page has them."""
    for number, task_id in enumerate(task_ids, 1):
        text = text.replace(task_id, f"TASK-{number}")
    text = text.replace(url, SHOWN_URL)
    text = re.sub(r"\(\d+\.\d s\)", "(0.0 s)", text)
    text = re.sub(r"\+\d+ ms", "+0 ms", text)
    return STAMPS.sub("2026-07-28T00:00:00.000Z", text)


def new_news(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The exchanges, less the ``tools/list`` each call begins with (to read the
    tool's schema) and each ``tasks/get`` that found the status the last look found."""
    kept, last = [], None
    for record in records:
        result = (record["response"].get("body") or {}).get("result") or {}
        method = record["request"]["body"]["method"]
        if method == "tools/list" or (method == "tasks/get" and result.get("status") == last):
            continue
        last = result.get("status", last)
        kept.append(record)
    return kept


async def run_session() -> tuple[str, str]:
    """The session as the page shows it, and its rendered transcript."""
    async with presa_serve() as served:
        with trio.fail_after(120):
            return await session_against(served)


async def session_against(served: ServeProcess) -> tuple[str, str]:
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"presa-client-session-{os.getpid()}"
    work.mkdir(exist_ok=True)
    record = work / "session.jsonl"
    record.unlink(missing_ok=True)
    answered = await run_call(served.url, record, "notes.txt", ["a", "yes", "s"])
    cancelled = await run_call(served.url, record, "draft.txt", [])
    records = [json.loads(line) for line in record.read_text().splitlines()]
    record.unlink()
    work.rmdir()
    created = [r["response"]["body"]["result"] for r in records]
    task_ids = [c["taskId"] for c in created if c.get("resultType") == "task"]
    screen = placeholders(answered + cancelled, served.url, task_ids)
    rendered = placeholders(render(new_news(records)), served.url, task_ids)
    return screen, rendered


def between(text: str, markers: tuple[str, str]) -> str:
    begin, end = markers
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def fenced(body: str, language: str) -> str:
    return f"```{language}\n{body.rstrip()}\n```" if language else body.rstrip()


async def test_the_page_shows_what_the_session_does() -> None:
    screen, rendered = await run_session()
    page = PAGE.read_text()
    assert between(page, SCREEN) == fenced(screen, "console")
    assert between(page, RENDERED) == fenced(rendered, "")


def write_page() -> None:
    """Put a fresh run's session and transcript between the page's markers."""
    screen, rendered = trio.run(run_session)
    page = PAGE.read_text()
    for markers, body in ((SCREEN, fenced(screen, "console")), (RENDERED, fenced(rendered, ""))):
        before, rest = page.split(markers[0], 1)
        after = rest.split(markers[1], 1)[1]
        page = f"{before}{markers[0]}\n{body}\n{markers[1]}{after}"
    PAGE.write_text(page)


if __name__ == "__main__":
    write_page()
    sys.exit(0)
