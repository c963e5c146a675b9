"""Admitting one message body: the rungs every transport shares.

A body (an HTTP POST's, or one stdio line) is decoded as JSON (rung 6),
read as a JSON-RPC request or notification (rung 7), and a request's
``params._meta`` is checked (rung 8). :func:`admit` climbs these rungs and
returns what it found, never raising: the edge answers a :class:`Refused`
with a JSON-RPC error that echoes the request id whenever one could be read,
even when the rest of the message is malformed, and has no ``id`` member
when none could (basic/index §Error Responses; docs/spec-notes.md entry
52). What only one transport has (HTTP headers) is that edge's own rung,
after this one.

Spec: 2026-07-28 basic/index §Requests, §Notifications, §Responses, §_meta;
the order of the rungs: docs/spec-notes.md entry 10.
"""

from __future__ import annotations

import attrs

from presa_trio.wire.envelope import (
    Notification,
    Request,
    RequestId,
    is_notification,
    is_response,
    parse_json,
    parse_message,
    readable_id,
)
from presa_trio.wire.errors import McpError
from presa_trio.wire.meta import RequestMeta


@attrs.frozen
class AdmittedRequest:
    """A well-formed request and its validated ``_meta``: ready for the dispatcher."""

    request: Request
    meta: RequestMeta


@attrs.frozen
class Refused:
    """A body that failed a rung: the error to answer, with the id when it was readable.

    ``response`` says the body was a response, whose id names a request of
    the server's, not the client's: an edge whose answers share one channel
    (stdio) must not echo it, or the client could take the refusal for the
    answer to its own request of that id. ``notification`` says it was a
    notification (:func:`~presa_trio.wire.envelope.is_notification`), which
    no response may answer (basic/index §Notifications): only HTTP, which
    must answer every POST, says why it refused one.
    """

    request_id: RequestId | None
    error: McpError
    response: bool = False
    notification: bool = False


Admission = AdmittedRequest | Notification | Refused


def admit(body: bytes) -> Admission:
    """Climb rungs 6–8 for one body; the first failing rung is the answer."""
    request_id: RequestId | None = None
    decoded = None
    try:
        decoded = parse_json(body)
        request_id = readable_id(decoded)
        message = parse_message(decoded)
        if isinstance(message, Notification):
            return message
        return AdmittedRequest(message, RequestMeta.from_params(message.params))
    except McpError as error:
        return Refused(
            request_id,
            error,
            response=is_response(decoded),
            notification=is_notification(decoded),
        )
