"""Rendering a transcript as Markdown that can be pasted into a spec thread.

Pure: JSON-lines records in, text out. One block per exchange, numbered, with
times relative to the first request; JSON is pretty-printed; an SSE response
shows each event with its own time. See :mod:`presa_trio.wire.transcript` for
the record format.

What a transcript holds is what a client sent, shown and never obeyed: every
control character (C0, DEL, C1) within a line is written as its JSON
escape, so the Markdown is safe to print on a terminal, and each
code span and block is fenced by more backticks than it holds, so no body
closes its fence and goes on as Markdown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from presa_trio.wire.transcript import escape_controls

BACKTICKS = re.compile("`+")


def fence_for(text: str) -> str:
    """Backticks, one more than the longest run of them in ``text``."""
    return "`" * max([len(run) for run in BACKTICKS.findall(text)] + [0]) + "`"


def code(text: str) -> str:
    """An inline code span of one line of ``text``."""
    shown = escape_controls(text)
    fence = fence_for(shown)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def block(language: str, lines: Iterable[str]) -> list[str]:
    """A fenced code block of ``lines``, each shown without its controls."""
    shown = [escape_controls(line) for line in lines]
    fence = fence_for("\n".join(shown)).ljust(3, "`")
    return [f"{fence}{language}", *shown, fence]


def pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


def offset(at: float, origin: float) -> str:
    return f"+{(at - origin) * 1000:.0f} ms"


def title(request: dict[str, Any]) -> str:
    """``tools/call slow_compute`` from the body, or the request line."""
    body = request.get("body")
    if isinstance(body, dict) and isinstance(body.get("method"), str):
        params = body.get("params")
        named = params if isinstance(params, dict) else {}
        target = next(
            (named[k] for k in ("name", "uri", "taskId") if isinstance(named.get(k), str)), None
        )
        return code(body["method"]) + (f" {code(target)}" if target else "")
    return code(f"{request['method']} {request['path']}")


def render_exchange(number: int, record: dict[str, Any], origin: float) -> str:
    request, response = record["request"], record["response"]
    headers = sorted(request["headers"].items())
    request_line = f"{request['method']} {request['path']}"
    lines = [
        f"### {number}. {title(request)} ({offset(record['started'], origin)})",
        "",
        f"**Request** {code(request_line)}",
        "",
        *block("http", (f"{name}: {value}" for name, value in headers)),
    ]
    if request.get("body") is not None:
        lines += ["", *block("json", pretty(request["body"]).split("\n"))]
    status = f"{response.get('status')} {response.get('contentType', '')}"
    lines += ["", f"**Response** {code(status)}"]
    if response.get("headers"):
        shown = (f"{k}: {v}" for k, v in sorted(response["headers"].items()))
        lines += ["", *block("http", shown)]
    if "events" in response:
        for event in response["events"]:
            lines += ["", f"event ({offset(event['at'], origin)}):", ""]
            lines += block("json", pretty(event["data"]).split("\n"))
    elif response.get("body") is not None:
        lines += ["", *block("json", pretty(response["body"]).split("\n"))]
    return "\n".join(lines)


def render(records: Iterable[dict[str, Any]], cut_lines: Iterable[int] = ()) -> str:
    """All exchanges in the order they started, then a note for each line left out."""
    ordered = sorted(records, key=lambda r: float(r["started"]))
    notes = [
        f"_(line {number} is not a whole record, left out: its write was cut short)_"
        for number in cut_lines
    ]
    if not ordered:
        return "\n\n".join(["_(empty transcript)_", *notes]) + "\n"
    origin = float(ordered[0]["started"])
    blocks = [render_exchange(n, r, origin) for n, r in enumerate(ordered, start=1)]
    return "\n\n".join(blocks + notes) + "\n"


def render_lines(lines: Iterable[str]) -> str:
    """The records of a transcript's lines, rendered.

    A line that is not JSON is one whose writer stopped mid-line
    (:mod:`presa_trio.transcript_file`): it is left out, and named. Lines
    of which none is a record are not a transcript: a ``ValueError``.
    """
    records: list[dict[str, Any]] = []
    cut: list[int] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            cut.append(number)
    if cut and not records:
        raise ValueError(f"no record in it; line {cut[0]} is not JSON")
    return render(records, cut)
