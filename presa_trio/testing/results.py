"""A tool's result as a test reads it: typed content, structured content, the logs sent before it.

The content blocks are the wire's own models
(:class:`~presa_trio.wire.models.TextContent`, ``ImageContent`` …), read
by :func:`~presa_trio.wire.convert.from_wire`, which refuses a block the
schema does not allow: a server that sends one fails the test there. The
log messages are the ``notifications/message`` the request's own stream
carried before the result (a plain call only: a task has no stream to send
them on).

Spec: 2026-07-28 server/tools §Tool Result; server/utilities/logging §Log
Message Notifications.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from presa_trio.wire.convert import from_wire
from presa_trio.wire.models import CallToolResult, ContentBlock, JSONObject, LogMessage, TextContent

#: The notification that carries one log message.
LOG_MESSAGE = "notifications/message"


def log_messages(notifications: Iterable[JSONObject]) -> list[LogMessage]:
    """The log messages among ``notifications``, in the order they were sent."""
    return [
        from_wire(note["params"], LogMessage)
        for note in notifications
        if note.get("method") == LOG_MESSAGE
    ]


@attrs.frozen
class ToolResult:
    """A complete ``CallToolResult``, read."""

    content: list[ContentBlock]
    # Any JSON value that fits the tool's outputSchema; None when absent.
    structured: Any
    is_error: bool
    # The result as received, ``_meta`` and all.
    raw: JSONObject
    # The log messages sent before the result, at or above the client's log level.
    logs: list[LogMessage] = attrs.field(factory=list)

    @classmethod
    def read(cls, result: JSONObject, notifications: Iterable[JSONObject] = ()) -> ToolResult:
        typed = from_wire(result, CallToolResult)
        return cls(
            typed.content,
            result.get("structuredContent"),
            typed.is_error,
            result,
            log_messages(notifications),
        )

    @property
    def text(self) -> str:
        """The text of the text blocks, one per line."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))
