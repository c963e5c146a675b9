"""Rendering a transcript as Markdown that can be pasted into a spec thread.

Pure: JSON-lines records in, text out. One block per exchange, numbered, with
times relative to the first request; JSON is pretty-printed; an SSE response
shows each event with its own time. See :mod:`presa_trio.wire.transcript` for
the record format.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


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
        return f"`{body['method']}`" + (f" `{target}`" if target else "")
    return f"`{request['method']} {request['path']}`"


def render_exchange(number: int, record: dict[str, Any], origin: float) -> str:
    request, response = record["request"], record["response"]
    lines = [
        f"### {number}. {title(request)} ({offset(record['started'], origin)})",
        "",
        f"**Request** `{request['method']} {request['path']}`",
        "",
        "```http",
        *(f"{name}: {value}" for name, value in sorted(request["headers"].items())),
        "```",
    ]
    if request.get("body") is not None:
        lines += ["", "```json", pretty(request["body"]), "```"]
    lines += ["", f"**Response** `{response.get('status')} {response.get('contentType', '')}`"]
    if response.get("headers"):
        lines += ["", "```http", *(f"{k}: {v}" for k, v in sorted(response["headers"].items()))]
        lines += ["```"]
    if "events" in response:
        for event in response["events"]:
            lines += ["", f"event ({offset(event['at'], origin)}):", "", "```json"]
            lines += [pretty(event["data"]), "```"]
    elif response.get("body") is not None:
        lines += ["", "```json", pretty(response["body"]), "```"]
    return "\n".join(lines)


def render(records: Iterable[dict[str, Any]]) -> str:
    """All exchanges in the order they started."""
    ordered = sorted(records, key=lambda r: float(r["started"]))
    if not ordered:
        return "_(empty transcript)_\n"
    origin = float(ordered[0]["started"])
    blocks = [render_exchange(n, r, origin) for n, r in enumerate(ordered, start=1)]
    return "\n\n".join(blocks) + "\n"


def render_lines(lines: Iterable[str]) -> str:
    return render(json.loads(line) for line in lines if line.strip())
