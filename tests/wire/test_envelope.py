"""The JSON-RPC envelope: one message per POST, parsed or refused with the spec's code.

Walks rungs 6 and 7 of the admission order (spec-notes §10) on the sans-IO functions; the same cases
through the ASGI app are in tests/http/test_admission.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from presa_trio.wire import envelope
from presa_trio.wire.errors import (
    INVALID_REQUEST,
    PARSE_ERROR,
    InvalidParams,
    InvalidRequest,
    McpError,
)


def code_of(message: Any) -> int:
    with pytest.raises(McpError) as caught:
        envelope.parse_message(message)
    return caught.value.code


def test_a_request_has_id_method_and_params() -> None:
    """Spec-mandated (basic/index §Requests): id, method and params are read as sent."""
    parsed = envelope.parse_message(
        {"jsonrpc": "2.0", "id": "a-1", "method": "tools/list", "params": {"cursor": "x"}}
    )
    assert parsed == envelope.Request("a-1", "tools/list", {"cursor": "x"})


def test_absent_params_read_as_an_empty_object() -> None:
    """presa-defined: params may be omitted; handlers then see ``{}``."""
    assert envelope.parse_message({"jsonrpc": "2.0", "id": 7, "method": "m"}) == (
        envelope.Request(7, "m", {})
    )


def test_a_message_without_id_is_a_notification() -> None:
    """Spec-mandated (basic/index §Notifications; H-11): no id means no response is expected."""
    parsed = envelope.parse_message({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert parsed == envelope.Notification("notifications/initialized", {})


@pytest.mark.parametrize(
    "message",
    [
        [{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}],
        [],
        "tools/list",
        42,
        None,
    ],
    ids=["batch", "empty-batch", "string", "number", "null"],
)
def test_anything_but_one_object_is_invalid_request(message: Any) -> None:
    """Spec-mandated (streamable-http §Sending Messages: the body MUST be a single
    request or notification; H-10, E-02): batches included, -32600."""
    assert code_of(message) == INVALID_REQUEST


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "result": {}},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "error": {"code": 1, "message": "x"}},
    ],
    ids=["result", "error", "result-beside-method", "error-beside-method"],
)
def test_a_response_object_from_the_client_is_invalid_request(message: Any) -> None:
    """Spec-mandated (streamable-http §Sending Messages: the client MUST NOT send
    responses; basic/index §Error Codes; H-10, E-02): -32600. A ``result`` or
    ``error`` member makes it one even beside a ``method``: it is not read as a
    request (basic/index §Responses: a response carries ``result`` or ``error``)."""
    assert code_of(message) == INVALID_REQUEST


@pytest.mark.parametrize(
    "request_id", [None, 1.5, True, {"n": 1}, [1]], ids=["null", "float", "bool", "object", "array"]
)
def test_an_id_that_is_not_a_string_or_integer_is_invalid_request(request_id: Any) -> None:
    """Spec-mandated (basic/index §Requests: id MUST be a string or integer, not
    null; H-10, E-02): -32600, and the id is unreadable so errors carry null."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
    assert code_of(message) == INVALID_REQUEST
    assert envelope.readable_id(message) is None


@pytest.mark.parametrize(
    "message",
    [
        {"id": 1, "method": "tools/list"},
        {"jsonrpc": "1.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1, 2]},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": None},
    ],
    ids=["no-jsonrpc", "jsonrpc-1.0", "no-method", "method-number", "params-array", "params-null"],
)
def test_a_malformed_envelope_is_invalid_request_but_keeps_its_id(message: Any) -> None:
    """Spec-mandated (JSON-RPC 2.0 §4; basic/index §Error Responses: echo the id
    whenever readable; E-02, E-10): -32600."""
    assert code_of(message) == INVALID_REQUEST
    assert envelope.readable_id(message) == 1


@pytest.mark.parametrize(
    "body",
    [b"", b"{", b"not json", b'{"jsonrpc": "2.0",}', b"\xff\xfe", b"[" * 100_000],
    ids=["empty", "truncated", "text", "trailing-comma", "not-utf8", "deeply-nested"],
)
def test_a_body_that_is_not_json_is_parse_error(body: bytes) -> None:
    """Spec-mandated (JSON-RPC 2.0 §5.1; basic/index §Error Codes; H-09, E-01): -32700."""
    with pytest.raises(McpError) as caught:
        envelope.parse_json(body)
    assert caught.value.code == PARSE_ERROR


A_REQUEST = '{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"\\ud800"}}'


@pytest.mark.parametrize(
    "body",
    [
        A_REQUEST.encode("utf-16"),
        A_REQUEST.encode("utf-16-le"),
        A_REQUEST.encode("utf-32"),
        A_REQUEST.replace("\\ud800", "\ud800").encode("utf-8", "surrogatepass"),
    ],
    ids=["utf-16", "utf-16-without-bom", "utf-32", "utf-8-encoded-surrogate"],
)
def test_a_body_that_is_not_utf8_is_parse_error(body: bytes) -> None:
    """Spec-mandated (basic/transports §Messages: JSON-RPC messages MUST be UTF-8
    encoded; RFC 3629 §3: no surrogates; H-09, E-01): -32700, where ``json.loads``
    would have guessed the encoding."""
    with pytest.raises(McpError) as caught:
        envelope.parse_json(body)
    assert caught.value.code == PARSE_ERROR


def test_a_utf8_byte_order_mark_is_ignored_and_an_escaped_surrogate_is_text() -> None:
    """Spec-mandated (RFC 8259 §8.2: an escaped lone surrogate is JSON text); a leading
    UTF-8 byte order mark is ignored, as RFC 8259 §8.1 allows."""
    parsed = envelope.parse_json(b"\xef\xbb\xbf" + A_REQUEST.encode())
    assert parsed["params"] == {"x": "\ud800"}


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e400", "-1.5E999"])
def test_non_finite_number_literals_are_not_json(constant: str) -> None:
    """Spec-mandated (RFC 8259 §6: NaN and Infinity are not permitted; basic/index
    §Error Codes; H-09, E-01): Python's json module accepts them by default; the server must not.
    A number past a float's range (RFC 8259 §9 lets a parser limit the range) would read
    as infinity, and be written back as ``Infinity``: it is refused as well."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":' + constant.encode() + b"}}"
    with pytest.raises(McpError) as caught:
        envelope.parse_json(body)
    assert caught.value.code == PARSE_ERROR


def test_outgoing_json_is_compact_and_one_line() -> None:
    """Spec-mandated (streamable-http §Receiving Messages; spec-notes §7: one JSON
    message per data line, the runner splits on newlines)."""
    message = envelope.result_response(1, {"text": "line1\nline2", "nested": {"a": [1, 2]}})
    written = envelope.dumps(message)
    assert b"\n" not in written
    assert b"\r" not in written
    assert b": " not in written
    assert b", " not in written
    assert json.loads(written) == message


def test_outgoing_json_keeps_non_ascii_text_as_utf8() -> None:
    """presa-defined: text is written as UTF-8, not as \\u escapes."""
    written = envelope.dumps(envelope.notification("n", {"text": "Grüße, 世界"}))
    assert "Grüße, 世界".encode() in written


def test_a_lone_surrogate_from_the_client_can_be_written_back() -> None:
    """Spec-mandated (basic/index §Error Responses: echo the request id; E-10): JSON
    allows a string such as "\\ud800" (RFC 8259 §8.2); it cannot be encoded as
    UTF-8, so it is written escaped and the response is still valid JSON carrying the same id."""
    request_id = json.loads('"\\ud800x"')
    written = envelope.dumps(envelope.error_response(request_id, InvalidParams()))
    assert json.loads(written)["id"] == request_id
    written.decode("utf-8")


def test_an_error_response_has_code_message_and_the_id() -> None:
    """Spec-mandated (schema $defs.JSONRPCErrorResponse): ``error`` carries an
    integer code and a string message; data only when there is some."""
    assert envelope.error_response(3, InvalidParams("bad")) == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32602, "message": "bad"},
    }
    assert envelope.error_response(3, InvalidParams("bad", {"uri": "u"}))["error"] == {
        "code": -32602,
        "message": "bad",
        "data": {"uri": "u"},
    }


def test_an_error_response_to_an_unread_id_has_no_id() -> None:
    """Spec-mandated (basic/index §Error Responses: ``id?: string | number``, and no id
    where it could not be read; schema $defs.JSONRPCErrorResponse, whose ``id`` is no
    null; spec-notes §52; E-01, E-02): the member is left out, never ``null``."""
    assert envelope.error_response(None, InvalidRequest("bad")) == {
        "jsonrpc": "2.0",
        "error": {"code": -32600, "message": "bad"},
    }


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), object()], ids=["nan", "infinity", "object"]
)
def test_a_value_json_cannot_hold_is_refused_when_written(value: Any) -> None:
    """Spec-mandated (RFC 8259 §6): the server never writes NaN, Infinity or an
    arbitrary object; dumps raises so the edge can answer -32603 instead."""
    with pytest.raises((TypeError, ValueError)):
        envelope.dumps(envelope.result_response(1, {"x": value}))


def test_a_cyclic_value_is_refused_when_written() -> None:
    """presa-defined: a value that contains itself cannot be written; dumps raises
    (RecursionError) so the edge answers -32603 instead."""
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(RecursionError):
        envelope.dumps(envelope.result_response(1, cyclic))
    assert envelope.json_problem(cyclic) is not None
    assert envelope.json_problem({"fine": [1, "a", None]}) is None


ENCODED_VALUES = [
    [{"name": "t", "description": "Grüße, 世界", "inputSchema": {"minimum": 1e-05}}],
    {"nested": [1, 2.5, None, True, "line1\nline2"]},
    "just a string",
]


@pytest.mark.parametrize("value", ENCODED_VALUES, ids=["tools", "object", "string"])
def test_an_encoded_value_is_written_as_the_value_itself(value: Any) -> None:
    """presa-defined: a value encoded once (the tool list) is copied into each
    response, and the response is byte for byte what writing the value gives."""
    message = envelope.result_response(7, {"tools": value, "resultType": "complete"})
    spliced = envelope.result_response(
        7, {"tools": envelope.encode(value), "resultType": "complete"}
    )
    assert envelope.dumps(spliced) == envelope.dumps(message)


def test_several_encoded_values_and_a_lone_surrogate_in_one_message() -> None:
    """presa-defined: each encoded value lands in its own place; a lone surrogate
    elsewhere in the message still gets the escaped, valid-UTF-8 form."""
    request_id = json.loads('"\\ud800x"')
    message = envelope.result_response(
        request_id,
        {"a": envelope.encode([1]), "b": {"c": envelope.encode({"d": "é"})}, "e": "after"},
    )
    written = envelope.dumps(message)
    written.decode("utf-8")
    assert json.loads(written) == {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"a": [1], "b": {"c": {"d": "é"}}, "e": "after"},
    }


def test_a_value_json_cannot_hold_is_refused_beside_an_encoded_one() -> None:
    """Spec-mandated (RFC 8259 §6): an encoded value does not let NaN through."""
    with pytest.raises(ValueError, match="Out of range float values"):
        envelope.dumps(envelope.result_response(1, {"a": envelope.encode([1]), "x": float("nan")}))
