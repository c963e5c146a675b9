"""The JSON-RPC 2.0 envelope: parsing one incoming message, building responses.

Every client message is one JSON object: a request (it has an ``id``) or a
notification (it has none). Batches and responses from the client are not
accepted. Outgoing JSON is compact, one line, because the runner splits SSE
bodies on newlines (spec-notes §7). A value kept now and written later (a
task's result, a task event's payload) must encode with
:data:`WRITE_RESERVE` levels of nesting to spare (:func:`with_reserve`).

Spec: 2026-07-28 basic/index §Requests, §Notifications, §Responses; streamable-http
§Sending Messages items 4–5 (rungs 6–7 of the admission order, spec-notes §10).
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Callable
from typing import Any, TypeGuard

import attrs

from presa_trio.wire.errors import InvalidRequest, McpError, ParseError

RequestId = str | int


@attrs.frozen
class Request:
    """A JSON-RPC request: it expects exactly one response carrying its ``id``."""

    id: RequestId
    method: str
    params: dict[str, Any]


@attrs.frozen
class Notification:
    """A JSON-RPC notification: no ``id``, no response."""

    method: str
    params: dict[str, Any]


@attrs.frozen(eq=False)
class Encoded:
    """A JSON value already written by :func:`encode`, copied into messages as is.

    For a large part of a response that seldom changes, such as the tool
    list: it is encoded once, and :func:`dumps` copies its bytes into each
    response instead of encoding the value again. The bytes are the ones
    :func:`dumps` writes for the value in place, so a response reads the
    same byte for byte.
    """

    data: bytes


def encode(value: Any) -> Encoded:
    """``value`` written once, as :func:`dumps` would write it inside a message."""
    return Encoded(_write(value))


def json_problem(value: Any) -> str | None:
    """Why :func:`dumps` could not write ``value`` (NaN, Infinity, a ``date``, a ``set``,
    a cycle), in its error's words; ``None`` if it could."""
    try:
        _write(value)
    except (TypeError, ValueError, RecursionError) as error:
        return str(error) or type(error).__name__
    return None


def dumps(message: dict[str, Any]) -> bytes:
    """Compact JSON, UTF-8: no spaces, no newlines, no NaN or Infinity.

    Raises ``TypeError``, ``ValueError`` or (for a cyclic value) ``RecursionError``
    for a value JSON cannot hold.

    A string may hold a lone surrogate (JSON text may spell ``"\\ud800"``,
    RFC 8259 §8.2, and a client's id or arguments come back in responses).
    UTF-8 cannot encode one, so such a message is written with ``\\u``
    escapes instead: still valid JSON, and it round-trips.

    An :class:`Encoded` value inside ``message`` is written as its bytes.
    """
    return _write(message)


def _write(value: Any) -> bytes:
    try:
        text = _ENCODE(value)
    except _HoldsEncoded:
        return _Splicer().write(value)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return _ENCODE_ASCII(value).encode()


class _HoldsEncoded(Exception):
    """The message holds an :class:`Encoded` value: the shared encoder hands it on."""


def _no_default(value: Any) -> Any:
    if isinstance(value, Encoded):
        raise _HoldsEncoded()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class _Splicer:
    """One message with :class:`Encoded` values in it: each is written as a placeholder
    string, then the placeholders are replaced by the values' bytes.

    The placeholder is random per process and never leaves it, so no string
    a client sends can be taken for one.
    """

    PLACEHOLDER = f"presa-encoded-{secrets.token_hex(16)}"

    def __init__(self) -> None:
        self.pieces: list[bytes] = []

    def placeholder(self, value: Any) -> Any:
        if isinstance(value, Encoded):
            self.pieces.append(value.data)
            return self.PLACEHOLDER
        return _no_default(value)

    def write(self, value: Any) -> bytes:
        try:
            data = compact_encoder(self.placeholder)(value).encode()
        except UnicodeEncodeError:
            self.pieces.clear()
            data = compact_encoder(self.placeholder, ascii_only=True)(value).encode()
        between = data.split(b'"' + self.PLACEHOLDER.encode() + b'"')
        spliced = [between[0]]
        for piece, text in zip(self.pieces, between[1:], strict=True):
            spliced += [piece, text]
        return b"".join(spliced)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _finite(number: str) -> float:
    """A JSON number with a fraction or an exponent, as a float; one past a float's
    range (``1e400``) would read as infinity, which JSON cannot hold, and is refused as
    ``Infinity`` is (RFC 8259 §9: a parser may limit the range it accepts)."""
    value = float(number)
    if math.isinf(value):
        raise ValueError(f"{number} is past a float's range")
    return value


def compact_encoder(
    default: Callable[[Any], Any] | None = None,
    *,
    ascii_only: bool = False,
    sort_keys: bool = False,
    allow_nan: bool = False,
) -> Callable[[Any], str]:
    """Compact JSON text of a value, as ``json.JSONEncoder(...).encode`` writes it.

    No circular-reference bookkeeping: a cyclic value still fails, as
    RecursionError instead of ValueError. ``JSONEncoder.encode`` builds its C
    encoder (``_json``) anew on every call, in Python, because it may carry a
    call's circular-reference markers; without them it carries no state, so
    here it is built once and called directly. It is the same C encoder with
    the same options, so the bytes are the same. Without the C accelerator
    the encoder object does the work.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.JSONEncoder(
            ensure_ascii=ascii_only,
            default=default,
            separators=(",", ":"),
            sort_keys=sort_keys,
            allow_nan=allow_nan,
            check_circular=False,
        ).encode
    escape = json.encoder.encode_basestring_ascii if ascii_only else json.encoder.encode_basestring
    # As JSONEncoder.iterencode passes them: markers, default, escape, indent,
    # key and item separators, sort_keys, skipkeys, allow_nan.
    chunks = make(None, default or _no_default, escape, None, ":", ",", sort_keys, False, allow_nan)

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return encode


#: Levels of nesting a value kept now and written later must encode with to spare
#: (a task's result, error and input requests, a task event's payload). It is
#: checked where it is kept, and every later response or notification writes it
#: from deeper in the stack (an edge, the dispatcher: some ten to twenty frames
#: more) and a few levels inside its message; the encoder's depth is bounded by
#: the stack's, so a value kept with fewer levels to spare could never be written.
WRITE_RESERVE = 64


def with_reserve(value: Any) -> Any:
    """``value`` inside :data:`WRITE_RESERVE` arrays: it encodes only if ``value``
    would, that many levels deeper (compact, its text is ``value``'s between
    :data:`WRITE_RESERVE` brackets on each side)."""
    for _ in range(WRITE_RESERVE):
        value = [value]
    return value


# Two encoders and one decoder, built once: ``json.dumps`` and ``json.loads``
# build a new one on every call that passes options.
_ENCODE = compact_encoder()
_ENCODE_ASCII = compact_encoder(ascii_only=True)
_DECODER = json.JSONDecoder(parse_constant=_not_json, parse_float=_finite)


def parse_json(body: bytes) -> Any:
    """Decode a body, or raise -32700 (rung 6).

    The body must be UTF-8 (basic/transports §Messages: JSON-RPC messages
    MUST be UTF-8 encoded): UTF-16 and UTF-32, which ``json.loads`` would
    guess from the first bytes, are refused, and so are the UTF-8 forms of
    surrogates, which RFC 3629 §3 excludes (an escaped ``"\\ud800"`` is JSON
    text, and stays accepted). A leading byte order mark is ignored, as
    RFC 8259 §8.1 allows. ``NaN``, ``Infinity`` and ``-Infinity`` are
    refused: Python's decoder accepts them, RFC 8259 §6 does not; so is a
    number past a float's range, which it would read as infinity.
    """
    try:
        return _DECODER.decode(body.decode("utf-8-sig"))
    except (ValueError, RecursionError) as exc:
        raise ParseError() from exc


def parse_text(text: str) -> Any:
    """JSON text read as :func:`parse_json` reads a body: no ``NaN`` or ``Infinity``
    (RFC 8259 §6) and no number past a float's range, which could not be sent on;
    ``ValueError`` saying why for anything else, nesting too deep to decode among it.

    For JSON a person gives the client (arguments, answers, params), checked before
    anything is sent with it.
    """
    try:
        return _DECODER.decode(text)
    except RecursionError:
        raise ValueError("nested too deeply to decode") from None


def is_request_id(value: Any) -> TypeGuard[RequestId]:
    """A string or an integer (basic/index §Requests; spec-notes §56).

    JSON ``true`` and ``1.0`` are not ids, though Python compares both equal
    to ``1``: ``bool`` is a subclass of ``int``, and ``1.0`` (or ``1e2``)
    decodes as a float.
    """
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def readable_id(message: Any) -> RequestId | None:
    """The request id, when one can be read, so that even errors echo it.

    Spec: basic/index §Error Responses.
    """
    if isinstance(message, dict) and is_request_id(candidate := message.get("id")):
        return candidate
    return None


def is_response(message: Any) -> bool:
    """Whether a decoded message is a response (it has ``result`` or ``error``)."""
    return isinstance(message, dict) and ("result" in message or "error" in message)


def is_notification(message: Any) -> bool:
    """Whether a decoded message is a notification, however malformed otherwise.

    An object naming a method and carrying no ``id`` member (basic/index
    §Notifications), that is no response: its ``jsonrpc`` or ``params`` may
    still be wrong, but it asks for no answer.
    """
    return (
        isinstance(message, dict)
        and isinstance(message.get("method"), str)
        and "id" not in message
        and not is_response(message)
    )


def parse_message(message: Any) -> Request | Notification:
    """Turn a decoded JSON value into a request or a notification (rung 7).

    ``params`` may be absent (treated as ``{}``) but, when present, must be
    an object: MCP never uses positional params.
    """
    if not isinstance(message, dict):
        raise InvalidRequest("Expected a single JSON-RPC request object")
    if message.get("jsonrpc") != "2.0":
        raise InvalidRequest('jsonrpc must be "2.0"')
    if is_response(message):
        raise InvalidRequest("The server does not accept responses")
    method = message.get("method")
    if not isinstance(method, str):
        raise InvalidRequest("method must be a string")
    params = message.get("params", {})
    if not isinstance(params, dict):
        raise InvalidRequest("params must be an object")
    if "id" not in message:
        return Notification(method, params)
    request_id = readable_id(message)
    if request_id is None:
        raise InvalidRequest("id must be a string or an integer")
    return Request(request_id, method, params)


def result_response(request_id: RequestId, result: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC success response."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_response(request_id: RequestId | None, error: McpError) -> dict[str, Any]:
    """A JSON-RPC error response; without ``id`` when it could not be read.

    Spec: basic/index §Error Responses (``id?: string | number``: no id "in
    error cases where the ID could not be read"), schema
    ``$defs.JSONRPCErrorResponse``; JSON-RPC 2.0 would send ``"id": null``
    (spec-notes §52).
    """
    if request_id is None:
        return {"jsonrpc": "2.0", "error": error.to_wire()}
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}


def notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A server-to-client JSON-RPC notification."""
    return {"jsonrpc": "2.0", "method": method, "params": params}
