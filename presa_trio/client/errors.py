"""What can go wrong for the client, and the exit status each ends with.

Every failure is one line on stderr and a non-zero exit, never a traceback:
a mistake in the command line or an answer is found before anything is
sent (exit 2); anything the other end did, or failed to do, is exit 3.

=====  ===========================================================
0      a result
1      a tool result with ``isError: true`` (a task ending ``failed`` too)
2      usage: a bad option, argument, answer or file; a missing answer
3      protocol: a JSON-RPC error, an unreachable, legacy or non-MCP server, a 401 no sign-in cured
130    cancelled: Ctrl-C (a task is sent ``tasks/cancel`` first)
=====  ===========================================================
"""

from __future__ import annotations

from typing import Any

EXIT_RESULT = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_PROTOCOL = 3
EXIT_CANCELLED = 130


class ClientError(Exception):
    """A failure reported as one line; ``exit_code`` is the process's exit status."""

    exit_code = EXIT_PROTOCOL


class UsageProblem(ClientError):
    """The user's input cannot be sent: a bad argument, answer or file."""

    exit_code = EXIT_USAGE


class ProtocolFailure(ClientError):
    """The server could not be reached, or did not answer as an MCP server does."""


class Unreachable(ProtocolFailure):
    """The server could not be reached: no connection, so nothing was sent."""


class BrokenOff(ProtocolFailure):
    """The server was reached, but the exchange ended before its response came."""


class RequestError(ProtocolFailure):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, method: str, error: Any) -> None:
        error = error if isinstance(error, dict) else {}
        self.code: Any = error.get("code")
        self.message: str = str(error.get("message", ""))
        self.data: Any = error.get("data")
        supported = self.data.get("supported") if isinstance(self.data, dict) else None
        said = (
            f" (it speaks {', '.join(map(str, supported))})" if isinstance(supported, list) else ""
        )
        super().__init__(f"{method}: JSON-RPC error {self.code}: {self.message}{said}")


class Unauthorized(ProtocolFailure):
    """HTTP 401, or 403 ``insufficient_scope``: ``challenge`` holds the Bearer parameters."""

    def __init__(self, line: str, challenge: dict[str, str]) -> None:
        super().__init__(line)
        self.challenge = challenge
