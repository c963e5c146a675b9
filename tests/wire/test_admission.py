"""One message body admitted, sans-IO: the result, or the error with the id it can echo.

The same rungs run behind both edges; the HTTP cases are in
tests/http/test_admission.py, the stdio ones in tests/test_stdio.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from presa_trio.testing import meta
from presa_trio.wire.admission import AdmittedRequest, Refused, admit
from presa_trio.wire.envelope import Notification, Request
from presa_trio.wire.errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR


def body(message: Any) -> bytes:
    return json.dumps(message).encode()


def test_a_request_is_admitted_with_its_meta() -> None:
    """Spec-mandated (basic/index §Requests, §_meta): the request as sent, and its
    ``_meta`` read."""
    admitted = admit(body({"jsonrpc": "2.0", "id": 3, "method": "m", "params": {"_meta": meta()}}))
    assert isinstance(admitted, AdmittedRequest)
    assert admitted.request == Request(3, "m", {"_meta": meta()})
    assert admitted.meta.protocol_version == "2026-07-28"


def test_a_notification_is_admitted_without_meta() -> None:
    """Spec-mandated (basic/index §Notifications): no id, no response, no ``_meta``
    needed."""
    assert admit(body({"jsonrpc": "2.0", "method": "notifications/initialized"})) == (
        Notification("notifications/initialized", {})
    )


@pytest.mark.parametrize(
    ("raw", "code", "request_id"),
    [
        (b"{not json", PARSE_ERROR, None),
        (body({"jsonrpc": "1.0", "id": "a", "method": "m"}), INVALID_REQUEST, "a"),
        (body({"jsonrpc": "2.0", "id": True, "method": "m"}), INVALID_REQUEST, None),
        (body({"jsonrpc": "2.0", "id": 1.0, "method": "m"}), INVALID_REQUEST, None),
        (body({"jsonrpc": "2.0", "id": 2**70, "method": "m"}), INVALID_PARAMS, 2**70),
    ],
    ids=["not-json", "bad-envelope", "id-true", "id-float", "no-meta"],
)
def test_a_refusal_keeps_the_id_when_it_can_be_read(raw: bytes, code: int, request_id: Any) -> None:
    """Spec-mandated (basic/index §Requests: an id is a string or an integer; JSON-RPC
    2.0 §5: the error carries the id, null when it cannot be read): each failing rung
    is refused with its code, and the id, when readable, with its exact JSON type."""
    refused = admit(raw)
    assert isinstance(refused, Refused)
    assert refused.error.code == code
    assert refused.request_id == request_id
    assert type(refused.request_id) is type(request_id)


@pytest.mark.parametrize(
    ("message", "response", "notification"),
    [
        ({"jsonrpc": "2.0", "method": "m", "params": 1}, False, True),
        ({"jsonrpc": "2.0", "method": "m", "result": {}}, True, False),
        ({"jsonrpc": "2.0", "method": "m", "error": {"code": 1, "message": "x"}}, True, False),
        ({"jsonrpc": "2.0", "id": 4, "result": {}}, True, False),
        ({"jsonrpc": "2.0", "params": {}}, False, False),
    ],
    ids=["notification", "result-beside-method", "error-beside-method", "response", "no-method"],
)
def test_a_refusal_says_whether_the_body_was_a_response_or_a_notification(
    message: dict[str, Any], response: bool, notification: bool
) -> None:
    """Spec-mandated (basic/index §Notifications: no response answers a notification;
    §Responses: a message with ``result`` or ``error`` is a response, which the client
    MUST NOT send): a malformed notification is refused as one, so stdio stays silent;
    a body with a ``result`` or ``error`` member is a response even beside a ``method``
    and without an ``id``, never taken for a notification to ignore; a body naming no
    method is no notification either, and is answered."""
    refused = admit(body(message))
    assert isinstance(refused, Refused)
    assert refused.error.code == INVALID_REQUEST
    assert (refused.response, refused.notification) == (response, notification)
