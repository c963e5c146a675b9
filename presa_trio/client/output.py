"""What the client prints: results on stdout, everything else on stderr.

With ``--json`` stdout holds exactly one JSON document: the result as the
server sent it (for a list, every page's items together), or, when the
command fails, the failure (:meth:`~presa_trio.client.errors.ClientError.document`);
``listen`` and ``task stream`` write one per notification or event, a line each
(JSON Lines). Without it, a
result is shown for reading: a tool's text content as text, other content
as one line each, ``structuredContent`` as indented JSON. Status lines,
progress, logs, the wire under ``-v`` and questions always go to stderr;
on a terminal, log lines are coloured by severity (unless ``NO_COLOR`` is
set, as no-color.org asks).

Whatever the server wrote reaches a terminal inert: its control characters
(C0 but tab and line feed, DEL, C1) are shown as ``\\uXXXX`` escapes, so that
no escape sequence of a tool's result, an error or a question clears the
screen, retitles the window or hides the text after it. Stderr is always
for reading; stdout is only when it is a terminal (a pipe gets the result as
the server sent it), and its line ends are LF there (CRLF read as one).

A task's status (SEP-2663 §Task Status) is one line: on a terminal it is
redrawn in place with a spinner and the elapsed time; elsewhere each change
is a line of its own, so a log of the run reads in order.
"""

from __future__ import annotations

import json
import os
import re
import sys
import unicodedata
from contextlib import suppress
from typing import Any, TextIO

import attrs
import trio

from presa_trio.client.errors import ClientError
from presa_trio.client.signatures import prompt_signature, tool_signature
from presa_trio.client.streams import stop_writing, writing_stdout
from presa_trio.client.transport import list_at, object_at
from presa_trio.wire.meta import META_SERVER_INFO
from presa_trio.wire.models import JSONObject

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
#: The width of a terminal that does not say its own.
DEFAULT_COLUMNS = 80
#: The ANSI colour of a log line, by level (logging §Log Levels); the rest are plain.
LEVEL_COLOURS = {
    "debug": "2",
    "notice": "36",
    "warning": "33",
    "error": "31",
    "critical": "1;31",
    "alert": "1;31",
    "emergency": "1;31",
}
#: How ``-v`` marks a message the client sent, and one it received.
SENT, RECEIVED = "→", "←"


#: What would drive a terminal: C0 controls but tab and line feed, DEL, and C1 controls
#: (U+009B is a CSI as much as ESC ``[`` is).
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def inert(text: str) -> str:
    """``text`` as a terminal may show it: CRLF as LF, every other control character
    as its ``\\uXXXX`` escape (which JSON reads back as the character)."""
    return CONTROLS.sub(lambda found: f"\\u{ord(found.group()):04x}", text.replace("\r\n", "\n"))


def one_line(text: str) -> str:
    """``text`` on one line: each LF in it as its escape, as :func:`inert` shows the
    other controls (a failure is one line, even when a server's message in it is not)."""
    return text.replace("\n", "\\u000a")


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def compact(value: Any) -> str:
    """``value`` as JSON on one line: a stream's item under ``--json``, a message under ``-v``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def block_line(block: Any) -> str:
    """One content block (server/tools §Tool Result) as text."""
    if not isinstance(block, dict):
        return pretty(block)
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        size = len(str(block.get("data", ""))) * 3 // 4
        return f"[{kind} {block.get('mimeType', '')}, about {size} bytes]"
    if kind == "resource":
        resource = object_at(block, "resource")
        text = resource.get("text")
        return f"[resource {resource.get('uri', '')}]" + (f"\n{text}" if text is not None else "")
    if kind == "resource_link":
        return f"[link {block.get('uri', '')} {block.get('name', '')}]".rstrip("] ") + "]"
    return pretty(block)


def tool_result_text(result: JSONObject) -> str:
    lines = [block_line(block) for block in list_at(result, "content")]
    if "structuredContent" in result:
        lines.append(pretty(result["structuredContent"]))
    return "\n".join(lines)


def discover_text(result: JSONObject) -> str:
    """``server/discover`` (server/discover §DiscoverResult) for reading."""
    meta = object_at(result, "_meta")
    info = object_at(result, "serverInfo") or object_at(meta, META_SERVER_INFO)
    capabilities = object_at(result, "capabilities")
    extensions = object_at(capabilities, "extensions")
    lines = [
        f"server: {info.get('name', '?')} {info.get('version', '')}".rstrip(),
        f"versions: {', '.join(map(str, list_at(result, 'supportedVersions')))}",
        "capabilities: " + ", ".join(sorted(k for k in capabilities if k != "extensions")),
        "extensions: " + (", ".join(sorted(extensions)) or "none"),
    ]
    if isinstance(result.get("instructions"), str):
        lines.append(f"instructions: {result['instructions']}")
    return "\n".join(lines)


def listing_text(kind: str, items: list[JSONObject]) -> str:
    """One line per tool, resource, template or prompt."""
    lines = []
    for item in items:
        label = item.get("uri") or item.get("uriTemplate") or item.get("name")
        described = item.get("description") or item.get("title") or ""
        if kind == "tools":
            label = tool_signature(item)
        elif kind == "prompts":
            label = prompt_signature(item)
        lines.append(f"{label}  {described}".rstrip())
    return "\n".join(lines) or f"(no {kind})"


def read_text(result: JSONObject) -> str:
    """``resources/read`` contents: text as text, a blob as a line."""
    lines = []
    for item in list_at(result, "contents"):
        if isinstance(item, dict) and "text" in item:
            lines.append(str(item["text"]))
        elif isinstance(item, dict):
            size = len(str(item.get("blob", ""))) * 3 // 4
            lines.append(
                f"[blob {item.get('mimeType', '')} {item.get('uri', '')}, about {size} bytes]"
            )
    return "\n".join(lines)


def prompt_text(result: JSONObject) -> str:
    lines = [f"({result['description']})"] if isinstance(result.get("description"), str) else []
    for message in list_at(result, "messages"):
        if isinstance(message, dict):
            lines.append(f"{message.get('role')}: {block_line(message.get('content'))}")
    return "\n".join(lines)


def notification_line(message: JSONObject) -> str | None:
    """A progress or log notification on a request's stream, as one stderr line."""
    params = object_at(message, "params")
    if message.get("method") == "notifications/progress":
        total = f"/{params['total']}" if "total" in params else ""
        said = f" {params['message']}" if isinstance(params.get("message"), str) else ""
        return f"progress {params.get('progress')}{total}{said}"
    if message.get("method") == "notifications/message":
        data = params.get("data")
        said = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        logger = f" {params['logger']}" if isinstance(params.get("logger"), str) else ""
        return f"log {params.get('level')}{logger}: {said}"
    return None


def task_line(task: JSONObject) -> str:
    """``task ID: STATUS — MESSAGE``: a task's status (SEP-2663 §Task Status) in a line."""
    said = f" — {task['statusMessage']}" if isinstance(task.get("statusMessage"), str) else ""
    return f"task {task.get('taskId')}: {task.get('status')}{said}"


def cell_width(c: str) -> int:
    """How many columns the character ``c`` takes on a terminal: two if it is wide."""
    return 2 if unicodedata.east_asian_width(c) in "WF" else 1


def fitted(text: str, columns: int) -> str:
    """``text`` in at most ``columns`` columns: cut short with ``…`` if it is wider
    (read once up to where it overflows, however long it is)."""
    width = 0
    for end, c in enumerate(text):
        width += cell_width(c)
        if width > columns:
            kept = text[:end]
            while kept and sum(map(cell_width, kept)) > columns - 1:
                kept = kept[:-1]
            return kept + "…"
    return text


def terminal_columns(terminal: TextIO) -> int:
    """The width of the terminal ``terminal`` writes to (80 if it does not say)."""
    try:
        return os.get_terminal_size(terminal.fileno()).columns or DEFAULT_COLUMNS
    except (OSError, ValueError):
        return DEFAULT_COLUMNS


def colour_wanted(err: TextIO) -> bool:
    """Colours on a terminal, unless ``NO_COLOR`` is set (no-color.org)."""
    return err.isatty() and not os.environ.get("NO_COLOR")


@attrs.define(eq=False)
class Console:
    """Where output goes, and whether stderr is a terminal to redraw on."""

    json: bool = False
    #: A stream's command (``listen``, ``task stream``): with ``--json``, every document on
    #: stdout is one line (JSON Lines), how it ended too.
    lines: bool = False
    # Read when the console is made, after :func:`~.streams.open_closed_streams`.
    out: TextIO = attrs.field(factory=lambda: sys.stdout)
    err: TextIO = attrs.field(factory=lambda: sys.stderr)
    live: bool = attrs.field(default=attrs.Factory(lambda self: self.err.isatty(), takes_self=True))
    colour: bool = attrs.field(
        default=attrs.Factory(lambda self: colour_wanted(self.err), takes_self=True)
    )
    #: ``-v``: every message sent and received, on stderr as it goes.
    verbose: bool = False
    _status: str = ""
    _drawn: bool = False
    #: Whether stdout holds the command's document yet (``--json``: one, never two).
    _printed: bool = False

    def result(self, value: Any, text: str) -> None:
        """The command's result: ``value`` as JSON with ``--json``, else ``text``."""
        self.write_out(pretty(value) if self.json else text)

    def line(self, value: Any, text: str) -> None:
        """One item of a stream (``listen``, ``task stream``): a JSON line with ``--json``,
        else ``text`` on :func:`one_line`."""
        self.write_out(compact(value) if self.json else one_line(text))

    def write_out(self, text: str) -> None:
        """``text`` and a line end on stdout, :func:`inert` on a terminal; a stdout that
        does not take it ends the command (:func:`~.streams.writing_stdout`)."""
        self._printed = True
        with writing_stdout(self.out):
            self.out.write((inert(text) if self.out.isatty() else text) + "\n")
            self.out.flush()

    def failure(self, error: ClientError) -> None:
        """The one line on stderr; with ``--json`` also its document, unless one was printed."""
        self.end_status()
        self.note(f"presa-trio: error: {one_line(str(error))}")
        self.last_document(error.document())

    def document(self, value: Any) -> None:
        """With ``--json``, ``value`` on stdout: the result of a command that says what it
        did on stderr (``task update``, ``login``, ``logout``)."""
        if self.json:
            self.result(value, "")

    def last_document(self, document: JSONObject) -> None:
        """With ``--json``, how the command ended on stdout if it printed nothing yet: a
        stdout that does not take it changes nothing (the status says how it ended)."""
        if self.json and not self._printed:
            with suppress(ClientError):
                self.write_out(compact(document) if self.lines else pretty(document))

    def paint(self, text: str, colour: str | None) -> str:
        """``text`` in an ANSI colour, when colours are wanted."""
        return f"\x1b[{colour}m{text}\x1b[0m" if colour and self.colour else text

    def note(self, line: str, colour: str | None = None) -> None:
        """``line`` on stderr, :func:`inert`, then painted ``colour``."""
        self.write_err(self.paint(inert(line), colour))

    def write_err(self, shown: str) -> None:
        """A line on stderr as it is given: no text of the server's unless :func:`inert`.
        A stderr that does not take it is left (:func:`~.streams.stop_writing`): the
        command goes on."""
        try:
            self.clear()
            self.err.write(shown + "\n")
            self.err.flush()
        except OSError:
            stop_writing(self.err)

    def notification(self, message: JSONObject) -> None:
        line = notification_line(message)
        if line is None:
            return
        level = object_at(message, "params").get("level")
        is_log = message.get("method") == "notifications/message"
        self.note(line, LEVEL_COLOURS.get(str(level)) if is_log else None)

    def wire(self, sent: bool, message: JSONObject) -> None:
        """``-v``: one message, as it is sent (``→``) or received (``←``)."""
        if self.verbose:
            arrow = self.paint(SENT, "36") if sent else self.paint(RECEIVED, "32")
            self.write_err(f"{arrow} {inert(compact(message))}")

    def status(self, task: JSONObject, elapsed_s: float) -> None:
        """The task's status line; redrawn on a terminal, a new line on change elsewhere."""
        status = one_line(inert(task_line(task)))
        if self.live:
            self._status = status
            self.draw(elapsed_s)
        elif status != self._status:
            self._status = status
            self.note(f"{status} ({elapsed_s:.1f} s)")

    def draw(self, elapsed_s: float) -> None:
        """The status line, fitted to the terminal's width: a line that wrapped would
        leave a row behind at each redraw, as ``\r`` returns only to the last one."""
        if self.live and self._status:
            spin = SPINNER[int(elapsed_s * 10) % len(SPINNER)]
            elapsed = f" ({elapsed_s:.1f} s)"
            room = terminal_columns(self.err) - 1 - len(elapsed)
            self.err.write(f"\r\x1b[2K{fitted(f'{spin} {self._status}', room)}{elapsed}")
            self.err.flush()
            self._drawn = True

    def clear(self) -> None:
        if self._drawn:
            self.err.write("\r\x1b[2K")
            self._drawn = False

    async def tick(self, started: float) -> None:
        """Redraw the status line ten times a second, until cancelled (a terminal only)."""
        while self.live:
            self.draw(trio.current_time() - started)
            await trio.sleep(0.1)

    def pause(self) -> None:
        """Stop redrawing until the next status: a question is about to be asked."""
        self.clear()
        self._status = ""

    def end_status(self) -> None:
        if self._drawn:
            self.err.write("\n")
            self.err.flush()
            self._drawn = False
