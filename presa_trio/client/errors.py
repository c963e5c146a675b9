"""What can go wrong for the client, and the exit status each ends with.

Every failure is one line on stderr and a non-zero exit, never a traceback;
under ``--json``, stdout holds one document for it too
(:meth:`ClientError.document`). The statuses are the same for every
command, and the rule that sorts them is *who found the mistake*: what the
client can see before it sends (the command line, an answer, a name the
server's own list lacks) is 2; what the server refused, or did wrong, is 3.

=====  ===========================================================
0      a result (and a ``listen`` the server closed gracefully, or cancelled)
1      a tool result with ``isError: true``, from a plain call or a task
2      usage: a bad option, argument, answer or file (stdout among them,
       when it cannot be written); a tool, prompt or
       resource template the server does not list (or a prompt argument it
       does not take); an ``--answer`` key the server does not ask; an
       answer missing with no terminal to ask
3      protocol: any JSON-RPC error the server answers (an unknown resource
       or task among them); a task that ended ``failed``; a ``listen`` the
       server agreed to none of; an unreachable, legacy or non-MCP server;
       a refusal for now (HTTP 429 or 503, no JSON-RPC error); a 401 no
       sign-in cured
130    cancelled: Ctrl-C (a task is sent ``tasks/cancel`` first), or a task
       that ended ``cancelled``
141    stdout's reader stopped reading (``| head -1``): 128 + SIGPIPE, as a
       shell reports a writer that a cut pipe ends (:mod:`.streams`)
=====  ===========================================================
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

from presa_trio.wire.models import JSONObject

EXIT_RESULT = 0
EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_PROTOCOL = 3
EXIT_CANCELLED = 130
EXIT_OUTPUT_CUT = 141


def error_document(line: str, exit_code: int, **more: Any) -> JSONObject:
    """What ``--json`` prints for a failure: ``{"error": {"message", "exitCode", …}}``."""
    return {"error": {"message": line, "exitCode": exit_code, **more}}


class ClientError(Exception):
    """A failure reported as one line; ``exit_code`` is the process's exit status."""

    exit_code = EXIT_PROTOCOL

    def document(self) -> JSONObject:
        """This failure as ``--json`` prints it."""
        return error_document(str(self), self.exit_code)


class UsageProblem(ClientError):
    """The user's input cannot be sent: a bad argument, answer or file."""

    exit_code = EXIT_USAGE


class ProtocolFailure(ClientError):
    """The server could not be reached, or did not answer as an MCP server does."""


class Unreachable(ProtocolFailure):
    """The server could not be reached: no connection, so nothing was sent."""


class BrokenOff(ProtocolFailure):
    """The server was reached, but the exchange ended before its response came."""


#: The HTTP statuses that turn a request away for now, not for good: 429 Too Many
#: Requests (RFC 6585 §4) and 503 Service Unavailable (RFC 9110 §15.6.4).
REFUSED_FOR_NOW = (429, 503)


class RefusedForNow(ProtocolFailure):
    """HTTP 429 or 503 without a JSON-RPC error: a rate limit (presa's ``--rate-limit``)
    or an overload, the server's or a proxy's before it, with ``Retry-After`` if given.

    Not a sign of a server of another era or of no MCP at all: streamable-http
    §Backward Compatibility falls back only on a 400, 404 or 405 whose body is no
    modern JSON-RPC error, so no ``initialize`` probe is sent to a server already busy.
    """

    def __init__(self, where: str, status: int, retry_after: str | None, body: str) -> None:
        self.status = status
        self.retry_after = retry_after
        line = f"{where} refused the request for now: HTTP {status} {HTTPStatus(status).phrase}"
        if retry_after:
            line += f" (Retry-After: {retry_after})"
        said = " ".join(body.split())[:120]
        super().__init__(f"{line}: {said}" if said else line)


class RequestError(ProtocolFailure):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, method: str, sent: Any) -> None:
        error = sent if isinstance(sent, dict) else {}
        self.method = method
        self.code: Any = error.get("code")
        self.message: str = str(error.get("message", ""))
        self.data: Any = error.get("data")
        supported = self.data.get("supported") if isinstance(self.data, dict) else None
        said = (
            f" (it speaks {', '.join(map(str, supported))})" if isinstance(supported, list) else ""
        )
        if isinstance(self.code, int) and not isinstance(self.code, bool):
            super().__init__(f"{method}: JSON-RPC error {self.code}: {self.message}{said}")
        else:  # basic/index §Error Responses: an error has an integer code
            super().__init__(f"{method}: an error that is no JSON-RPC error object: {sent!r}")

    @property
    def retryable(self) -> bool:
        """Whether the error's ``data`` says ``retryable: true``: the same request may
        succeed later (presa's limits and an unavailable store, spec-notes §31)."""
        return isinstance(self.data, dict) and self.data.get("retryable") is True

    def document(self) -> JSONObject:
        """With the JSON-RPC error as the server sent it, under ``"jsonrpc"``."""
        sent = {"code": self.code, "message": self.message}
        if self.data is not None:
            sent["data"] = self.data
        return error_document(str(self), self.exit_code, jsonrpc=sent)


class TaskFailed(ProtocolFailure):
    """A task that ended ``failed``: its JSON-RPC error (SEP-2663 §Task Execution Errors)."""

    def __init__(self, task: JSONObject) -> None:
        self.task = task
        error = task.get("error")
        error = error if isinstance(error, dict) else {}
        said = f"{error.get('code')}: {error.get('message')}"
        super().__init__(f"task {task.get('taskId')} failed: {said}")

    def document(self) -> JSONObject:
        """With the task as ``tasks/get`` answered it, its ``error`` inside."""
        return error_document(str(self), self.exit_code, task=self.task)


class OutputCut(ClientError):
    """Stdout's reader stopped reading: the command ends without a word (:mod:`.streams`)."""

    exit_code = EXIT_OUTPUT_CUT


class Unauthorized(ProtocolFailure):
    """HTTP 401, or 403 ``insufficient_scope``: ``challenge`` holds the Bearer parameters.

    ``naming`` finds the authorization servers the challenge's metadata names, for the
    line of a failure that is final (:meth:`named`): asked then, not while the request
    that met the 401 waits within its deadline, and not before a sign-in that asks too.
    """

    def __init__(
        self,
        line: str,
        challenge: dict[str, str],
        naming: Callable[[], Awaitable[list[str]]] | None = None,
    ) -> None:
        super().__init__(line)
        self.challenge = challenge
        self.naming = naming

    async def named(self) -> Unauthorized:
        """This failure, its line naming the authorization servers if any are found."""
        servers = await self.naming() if self.naming is not None else []
        if not servers:
            return self
        line = f"{self}, naming the authorization server {', '.join(servers)}"
        return Unauthorized(line, self.challenge)


class SignInFailed(ProtocolFailure):
    """Sign-in could not complete; the message says at which step."""
