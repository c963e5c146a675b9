"""The spec's JSON-RPC errors: one exception type per error, each with its code.

Handlers raise these; only an edge turns one into bytes. Each class carries the
JSON-RPC ``code`` (schema.ts constants) and the HTTP status the Streamable HTTP
transport answers with (basic/index §Error Codes). The table lives here, on the classes, so the
whole mapping reads in one screen.

Spec: 2026-07-28 basic/index §Error Codes; basic/transports/streamable-http
§Error Responses; schema ``$defs.JSONRPCErrorResponse``.
"""

from __future__ import annotations

import secrets
from typing import Any, ClassVar

from presa_trio.wire.tasks import EVENTS_GONE

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

#: JSON-RPC 2.0's reserved codes: only those below mean anything there.
RESERVED_CODES = range(-32768, -32000 + 1)
#: The reserved codes presa sends: JSON-RPC 2.0's own, the three the spec defines, and
#: SEP-2694's ``events_gone``, sent only with task event streams (spec-notes §50).
DEFINED_CODES = frozenset(
    {
        PARSE_ERROR,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        INVALID_PARAMS,
        INTERNAL_ERROR,
        HEADER_MISMATCH,
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        UNSUPPORTED_PROTOCOL_VERSION,
        EVENTS_GONE,
    }
)


class McpError(Exception):
    """A JSON-RPC error the server answers with.

    ``message`` is what the client reads; it never carries a stack trace or
    internal detail. ``data`` is the optional structured payload.
    """

    code: ClassVar[int] = INTERNAL_ERROR
    http_status: ClassVar[int] = 500
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None) -> None:
        self.message = message or self.default_message
        self.data = data
        super().__init__(self.message)

    def is_well_formed(self) -> bool:
        """Whether its code is an integer and its message a string, as schema
        ``$defs.Error`` holds them, and the code may be sent: a subclass or a handler
        may have set others.

        A code of JSON-RPC's reserved range (-32768…-32000) may be sent only if it
        is defined (:data:`DEFINED_CODES`): never the retired -32002 or -32042, no
        undefined code of the spec's -32020…-32099, none of the legacy
        -32000…-32019, and new codes belong outside the range (basic/index §Error
        Codes). Any other integer is an application's own.
        """
        code = self.code
        return (
            isinstance(code, int)
            and not isinstance(code, bool)
            and isinstance(self.message, str)
            and (code not in RESERVED_CODES or code in DEFINED_CODES)
        )

    def to_wire(self) -> dict[str, Any]:
        """The ``error`` member of a JSON-RPC error response."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(McpError):
    """The body is not JSON (-32700, HTTP 400)."""

    code = PARSE_ERROR
    http_status = 400
    default_message = "Parse error"


class InvalidRequest(McpError):
    """Not a single well-formed JSON-RPC request object (-32600, HTTP 400)."""

    code = INVALID_REQUEST
    http_status = 400
    default_message = "Invalid Request"


class MethodNotFound(McpError):
    """Unknown or removed method, or a capability the server does not offer.

    Spec: streamable-http §Protocol Version Header — -32601 MUST be HTTP 404.
    """

    code = METHOD_NOT_FOUND
    http_status = 404
    default_message = "Method not found"


class InvalidParams(McpError):
    """Bad params: missing ``_meta`` fields, unknown tool, bad ``requestState``…"""

    code = INVALID_PARAMS
    http_status = 400
    default_message = "Invalid params"


class InternalError(McpError):
    """An unexpected fault. The message stays generic; details go to the log.

    presa chooses HTTP 500: the spec sets no status for -32603 (spec-notes §1).
    """

    code = INTERNAL_ERROR
    http_status = 500
    default_message = "Internal error"

    @classmethod
    def incident(cls) -> InternalError:
        """A fault whose cause is logged: ``data.incident`` is a fresh id that the
        log record of the cause repeats, so a client's report leads to the traceback."""
        return cls(data={"incident": secrets.token_hex(8)})

    @property
    def incident_id(self) -> str | None:
        return self.data.get("incident") if isinstance(self.data, dict) else None


#: Seconds a refusal that can succeed later (HTTP 429 or 503) tells the client to wait.
RETRY_AFTER_S = 5


class OverCapacity(InternalError):
    """A task was refused because a limit is full; trying again later can succeed.

    -32603 with ``data: {retryable: true, limit}`` like every limit
    (spec-notes §31), but not HTTP 500: the caller's own limit is 429 (too
    many requests of its own), the whole server's is :class:`ServerOverCapacity`
    (503), and both go out with ``Retry-After`` (RFC 9110 §10.2.3), which
    clients and load balancers retry on. presa's, not the spec's.
    """

    http_status = 429

    def __init__(self, message: str, limit: str, **data: Any) -> None:
        super().__init__(message, {"retryable": True, "limit": limit, **data})
        self.limit = limit


class ServerOverCapacity(OverCapacity):
    """A limit of the whole server is full (HTTP 503)."""

    http_status = 503


class HeaderMismatch(McpError):
    """A mirrored header is missing, malformed or differs from the body.

    Spec: streamable-http §Server Validation.
    """

    code = HEADER_MISMATCH
    http_status = 400
    default_message = "Header mismatch"


class MissingRequiredClientCapability(McpError):
    """The request needs a client capability it did not declare (basic/index §_meta).

    ``data.requiredCapabilities`` is a ``ClientCapabilities``-shaped object;
    the schema requires it.
    """

    code = MISSING_REQUIRED_CLIENT_CAPABILITY
    http_status = 400
    default_message = "Missing required client capability"

    def __init__(self, message: str, required: dict[str, Any]) -> None:
        super().__init__(message, {"requiredCapabilities": required})

    @classmethod
    def for_capability(cls, name: str, settings: dict[str, Any] | None = None) -> McpError:
        """Missing a top-level capability such as ``sampling``, or a setting of one.

        ``settings`` name what the capability must declare, as URL-mode
        elicitation needs ``{"url": {}}``; the message names them too.
        """
        wanted = ", ".join(f"{name}.{key}" for key in settings) if settings else name
        message = f"This request requires the client '{wanted}' capability"
        return cls(message, {name: settings or {}})

    @classmethod
    def for_extension(cls, extension_id: str) -> McpError:
        """Missing an extension declaration (SEP-2133), e.g. the Tasks extension."""
        return cls(
            f"This request requires the client extension '{extension_id}'",
            {"extensions": {extension_id: {}}},
        )


class UnsupportedProtocolVersion(McpError):
    """The request's protocol version is not one this server speaks.

    Spec: streamable-http §Protocol Version Header.
    """

    code = UNSUPPORTED_PROTOCOL_VERSION
    http_status = 400
    default_message = "Unsupported protocol version"

    def __init__(self, requested: Any, supported: list[str]) -> None:
        super().__init__(data={"supported": supported, "requested": requested})
