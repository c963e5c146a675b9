"""Stdout and stderr as a command finds them: cut by their reader, full, or closed.

presa-defined (docs/client.md, For scripts): a reader that stops reading
(``| head -1``) ends the command at its next write, with no word and the
status a cut pipe gives a shell's writer, 141; a stdout that cannot be
written (a full disk) is one line and exit 2; a stream closed before the
command starts is as good as ``/dev/null``. Never a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import trio

from tests.client.helpers import (
    Ran,
    client,
    client_command,
    client_environment,
    shown_on_terminal,
)
from tests.e2e.serve_process import REPOSITORY, ServeProcess

#: What ends a command whose stdout's reader stopped reading: 128 + SIGPIPE.
OUTPUT_CUT = 141


async def with_stdout(stdout: int, *arguments: str) -> Ran:
    """``presa-trio ARGUMENTS`` with stdout on the descriptor ``stdout`` (at most a minute)."""
    with trio.fail_after(60):
        done = await trio.run_process(
            client_command(*arguments),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            capture_stderr=True,
            check=False,
            cwd=REPOSITORY,
            env=client_environment(),
        )
    return Ran(done.returncode, "", done.stderr.decode())


def cut_pipe() -> int:
    """The writing end of a pipe whose reader has gone (``| head -0``)."""
    read, write = os.pipe()
    os.close(read)
    return write


async def on_cut_pipe(*arguments: str) -> Ran:
    write = cut_pipe()
    try:
        return await with_stdout(write, *arguments)
    finally:
        os.close(write)


async def with_closed(streams: str, *arguments: str) -> Ran:
    """``presa-trio ARGUMENTS`` started by a shell with ``streams`` closed (``<&-``…)."""
    shell = ["sh", "-c", f'exec "$@" {streams}', "sh", *client_command(*arguments)]
    with trio.fail_after(60):
        done = await trio.run_process(
            shell,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=REPOSITORY,
            env=client_environment(),
        )
    return Ran(done.returncode, done.stdout.decode(), done.stderr.decode())


async def test_a_result_whose_reader_has_gone_ends_with_141_and_no_word(
    presa: ServeProcess,
) -> None:
    for arguments in (["list", presa.url], ["list", presa.url, "--json"]):
        ran = await on_cut_pipe(*arguments)
        assert ran.status == OUTPUT_CUT, ran.stderr
        assert ran.stderr == ""


async def test_a_transcript_on_stdout_whose_reader_has_gone_ends_with_141(
    presa: ServeProcess,
) -> None:
    ran = await on_cut_pipe("discover", presa.url, "--transcript", "-")
    assert ran.status == OUTPUT_CUT, ran.stderr
    assert ran.stderr == ""


async def test_a_listen_whose_reader_has_gone_ends_at_the_next_notification(
    presa: ServeProcess,
) -> None:
    """``presa-trio listen URL | head -1``, once head has its line."""
    write = cut_pipe()
    try:
        async with trio.open_nursery() as nursery:
            process: trio.Process = await nursery.start(
                partial(
                    trio.run_process,
                    client_command("listen", presa.url, "--tools"),
                    stdin=subprocess.DEVNULL,
                    stdout=write,
                    stderr=subprocess.PIPE,
                    check=False,
                    cwd=REPOSITORY,
                    env=client_environment(),
                )
            )
            assert process.stderr is not None
            said = b""
            with trio.fail_after(60):
                async for chunk in process.stderr:
                    said += chunk
                    if b"listening for " in said:
                        break
                changed = await client("call", presa.url, "test_trigger_tool_change")
                assert changed.status == 0, changed.stderr
                said += b"".join([chunk async for chunk in process.stderr])
                status = await process.wait()
    finally:
        os.close(write)
    assert status == OUTPUT_CUT, said.decode()
    assert b"Traceback" not in said


async def test_a_full_stdout_is_one_line_and_exit_2(presa: ServeProcess) -> None:
    for arguments in (["call", presa.url, "test_simple_text"], ["discover", presa.url, "--json"]):
        full = os.open("/dev/full", os.O_WRONLY)
        try:
            ran = await with_stdout(full, *arguments)
        finally:
            os.close(full)
        assert ran.status == 2
        assert ran.error() == "cannot write to stdout: No space left on device"


async def test_a_stream_closed_before_the_command_is_as_good_as_dev_null(
    presa: ServeProcess,
) -> None:
    asked: Sequence[str] = ("call", presa.url, "test_input_required_result_elicitation")
    no_stdin = await with_closed("<&-", *asked)
    assert no_stdin.status == 2  # no person to ask, as with stdin on /dev/null
    assert no_stdin.error().startswith("the server asks 'user_name' (")
    no_stdout = await with_closed(">&-", "call", presa.url, "test_simple_text")
    assert (no_stdout.status, no_stdout.stderr) == (0, "")
    no_stderr = await with_closed("2>&-", "call", presa.url, "test_simple_text")
    assert no_stderr.status == 0
    assert no_stderr.stdout == "This is a simple text response for testing.\n"


async def test_a_status_line_fits_the_terminal_it_is_redrawn_on(presa: ServeProcess) -> None:
    """presa-defined (docs/client.md, A task's life): the status line is redrawn in place,
    so it is cut to the terminal's width; a line that wrapped would leave a row behind
    at every redraw."""
    shown = await shown_on_terminal(
        "call",
        presa.url,
        "slow_compute",
        "seconds=0.5",
        "--no-listen",
        env=client_environment(),
        columns=40,
    )
    drawn = [row for piece in shown.split("\x1b[2K") for row in piece.split("\r\n")]
    statuses = [row.strip("\r") for row in drawn if " task " in row]
    assert statuses, shown
    for status in statuses:
        assert len(status) < 40, status
        assert status.endswith(" s)"), status  # the elapsed time is kept


async def test_a_question_is_not_asked_on_a_stderr_that_was_cut(presa: ServeProcess) -> None:
    """presa-defined (docs/client.md, Answers: never a hang): with stdin a terminal but
    stderr's reader gone (``2>&1 | head -1``), a question would be seen by nobody and
    wait for ever; it is a missing answer instead, exit 2, said on stdout under --json."""
    leader, follower = os.openpty()
    write = cut_pipe()
    try:
        with trio.fail_after(60):
            done = await trio.run_process(
                client_command("call", presa.url, "confirm_delete", "--no-listen", "--json"),
                stdin=follower,
                stderr=write,
                capture_stdout=True,
                check=False,
                cwd=REPOSITORY,
                env=client_environment(),
            )
    finally:
        for descriptor in (leader, follower, write):
            os.close(descriptor)
    assert done.returncode == 2
    said = json.loads(done.stdout)["error"]["message"]
    assert "and there is no terminal to ask: give --answer confirm-delete=JSON" in said


async def test_a_failure_keeps_its_status_when_stdout_takes_no_document(
    closed_port_url: str,
) -> None:
    """The failure's one line is said; its --json document, which a cut or full stdout
    does not take, changes nothing: the status stays the failure's."""
    for stdout in ("cut", "/dev/full"):
        for arguments, status in (
            (["call", closed_port_url, "t", "--json"], 3),  # the server cannot be reached
            (["call", "--json"], 2),  # no URL, no TOOL
        ):
            descriptor = cut_pipe() if stdout == "cut" else os.open(stdout, os.O_WRONLY)
            try:
                ran = await with_stdout(descriptor, *arguments)
            finally:
                os.close(descriptor)
            assert ran.status == status, ran.stderr
            ran.error()  # one line, no traceback


async def test_a_rendered_transcript_whose_reader_has_gone_ends_with_141(
    presa: ServeProcess, tmp_path: Path
) -> None:
    """``presa-trio transcript FILE | head``: stdout as the client's commands treat it."""
    record = tmp_path / "t.jsonl"
    made = await client("discover", presa.url, "--transcript", str(record))
    assert made.status == 0, made.stderr
    cut = await on_cut_pipe("transcript", str(record))
    assert (cut.status, cut.stderr) == (OUTPUT_CUT, "")
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        ran = await with_stdout(full, "transcript", str(record))
    finally:
        os.close(full)
    assert ran.status == 2
    assert ran.error() == "cannot write to stdout: No space left on device"
