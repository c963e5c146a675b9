"""The fixture as ``presa-trio serve --task-events`` serves it, for a conformance run with it on.

``python conformance/run.py --app conformance.task_events:build_app`` (or
``nox -s conformance -- --app conformance.task_events:build_app``) holds
the fixture with task event streams on (SEP-2694, a draft) to the same
scenarios: the option must change nothing they score (spec-notes §50).
"""

from __future__ import annotations

from typing import Any

from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.tasks import TaskEventLog, TasksExtension


def build_app(**options: Any) -> McpApp:
    """The fixture, every Tasks extension of it serving task event streams."""
    server = build_server(**options)
    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.enable_events(TaskEventLog())
    return McpApp.for_server(server)
