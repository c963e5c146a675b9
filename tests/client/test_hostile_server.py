"""A server's text never drives the terminal the client prints it on.

A tool's result, an error's message, a question: all are the server's
text, and an escape sequence in it would clear the screen, set the
window's title or hide what follows (a fake prompt, say). What reaches a
terminal shows each control character as its ``\\uXXXX`` escape instead;
a script that reads stdout from a pipe gets the text as the server sent it.
"""

from __future__ import annotations

import sys

from tests.client.helpers import (
    MISBEHAVING,
    client,
    client_environment,
    on_terminal,
    shown_on_terminal,
)
from tests.e2e.serve_process import serving

#: The result's text, as the server sent it.
SENT = "a\x1b[2Jb\rc\x07d\x9b31m\r\nnext"
#: The same text as a terminal shows it (the pseudo-terminal writes LF as CRLF).
SHOWN = "a\\u001b[2Jb\\u000dc\\u0007d\\u009b31m\r\nnext\r\n"


async def test_a_results_control_characters_are_shown_not_obeyed_on_a_terminal() -> None:
    async with serving([sys.executable, MISBEHAVING, "controls"]) as served:
        shown = await shown_on_terminal(
            "call", served.url, "t", "--no-listen", env=client_environment(), stdout=True
        )
        piped = await client("call", served.url, "t", "--no-listen")
    assert shown == SHOWN
    assert (piped.status, piped.stdout) == (0, SENT + "\n"), piped.stderr


async def test_an_errors_control_characters_are_shown_not_obeyed() -> None:
    """presa-defined (docs/client.md, For scripts): a failure is one line, even when
    the server's message holds a line end."""
    async with serving([sys.executable, MISBEHAVING, "controls"]) as served:
        ran = await client("read", served.url, "a://b")
    assert ran.status == 3
    assert ran.error() == (
        "resources/read: JSON-RPC error -32002: gone\\u001b]0;owned\\u0007\\u000asecond line"
    )


async def test_a_questions_control_characters_are_shown_not_obeyed() -> None:
    async with serving([sys.executable, MISBEHAVING, "controls"]) as served:
        shown = await on_terminal(["prompt", served.url, "p"], [])
    assert "[k] The server asks: Sign\\u001b[8min\n" in shown


async def test_a_status_line_is_one_line() -> None:
    """presa-defined (docs/client.md, A task's life): the status is one line, redrawn
    in place on a terminal; a statusMessage's line end is shown as its escape."""
    async with serving([sys.executable, MISBEHAVING, "status-two-lines"]) as served:
        ran = await client("call", served.url, "t", "--no-listen")
    assert ran.status == 0, ran.stderr
    assert ran.stderr.splitlines()[-1].startswith("task T: completed — done\\u000areally (")


async def test_a_listen_prints_a_line_each() -> None:
    """presa-defined (docs/client.md, Reading a server: a notification a line each)."""
    async with serving([sys.executable, MISBEHAVING, "listen-two-lines"]) as served:
        ran = await client("listen", served.url, "--task", "T")
    assert ran.status == 0, ran.stderr
    assert ran.stdout == "task T: working — a\\u000ab\n"


async def test_suggestions_are_one_a_line() -> None:
    """presa-defined (docs/client.md, Reading a server: the suggestions one a line)."""
    async with serving([sys.executable, MISBEHAVING, "suggestion-two-lines"]) as served:
        ran = await client("complete", served.url, "prompt", "p", "a=")
    assert ran.status == 0, ran.stderr
    assert ran.stdout == "x\\u000ay\nz\n"
