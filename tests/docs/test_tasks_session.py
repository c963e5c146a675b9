"""The session transcript in docs/tasks-session.md is a rendering of a recorded run, still true.

``docs/tasks-session.jsonl`` is what ``presa-trio serve --transcript`` writes
for the curl session docs/tasks-session.md shows (a task that asks, is answered over
``tasks/update`` while a listen stream watches, and completes). The first test
renders it exactly as ``presa-trio transcript`` does and finds that rendering
between the page's markers; the second runs the same session again against
the demo server, in-process, and finds the same answers, ids and times aside.

To record it again after a deliberate change of the wire::

    .venv/bin/python -m tests.docs.test_tasks_session
"""

from __future__ import annotations

from pathlib import Path

from presa_trio.http.transcript_render import render_lines
from tests.docs.session import (
    PAGE,
    RECORDING,
    exchanges,
    record_session,
    rendered_section,
    write_recording_and_page,
)


def test_the_page_shows_the_rendering_of_the_recording() -> None:
    """presa-defined (docs/tasks-session.md): the session transcript is generated, never
    hand-edited."""
    rendered = render_lines(RECORDING.read_text().splitlines())
    assert rendered_section(PAGE.read_text()) == rendered.strip("\n")


async def test_the_recorded_session_still_gets_the_same_answers(tmp_path: Path) -> None:
    """presa-defined (docs/tasks-session.md): the same requests, sent again, get the recorded
    answers.

    On Trio's own clock: the recorder writes from a worker thread, during
    which an autojump clock would jump past the request's deadline.
    """
    again = tmp_path / "session.jsonl"
    await record_session(again)
    assert exchanges(again) == exchanges(RECORDING)


if __name__ == "__main__":
    write_recording_and_page()
