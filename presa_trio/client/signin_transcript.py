"""The sign-in's exchanges in the transcript, with every credential left out.

With ``--transcript FILE``, a sign-in is recorded beside the MCP exchanges:
the 401 that started it, the resource's and the authorization server's
metadata, the registration and the token requests (the authorization
request itself goes through the browser, which the client does not see;
its answer comes back as the loopback redirect). An event hook of the
sign-in's httpx client writes each exchange once its response is read, in
the transcript format (:mod:`presa_trio.wire.transcript`), with three
differences that make it readable where it will be pasted:

- the request target is the absolute URL (RFC 9112 §3.2.2 allows it): the
  exchanges go to more than one server;
- a form body is shown as an object of its fields;
- each credential (codes, verifiers, secrets, tokens, assertions, and
  what follows the scheme of an ``authorization`` header) is replaced by
  ``[redacted]``; the ``www-authenticate`` of a response is kept with it,
  since a challenge is what a sign-in acts on.

Spec: 2026-07-28 basic/authorization (the flow these exchanges are).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

import httpx

from presa_trio.client.transport import Transcript
from presa_trio.wire.transcript import decode_body, kept

#: Fields whose values are credentials: never written to a transcript.
CREDENTIALS = frozenset(
    {
        "access_token",
        "refresh_token",
        "id_token",
        "client_secret",
        "code",
        "code_verifier",
        "client_assertion",
        "registration_access_token",
    }
)
REDACTED = "[redacted]"
FORM = "application/x-www-form-urlencoded"


def redacted(body: Any) -> Any:
    """``body`` with the value of every credential field replaced."""
    if isinstance(body, dict):
        return {k: REDACTED if k in CREDENTIALS else redacted(v) for k, v in body.items()}
    if isinstance(body, list):
        return [redacted(item) for item in body]
    return body


def request_body(request: httpx.Request) -> Any:
    content = request.content
    if request.headers.get("content-type", "").startswith(FORM):
        return dict(parse_qsl(content.decode("utf-8", errors="replace"), keep_blank_values=True))
    return decode_body(content)


def exchange_record(response: httpx.Response) -> dict[str, Any]:
    """One sign-in exchange, its response read, as a transcript record."""
    request = response.request
    sent = {k: v for k, v in request.headers.items() if kept(k)}
    if "authorization" in request.headers:  # the scheme says how the client authenticated
        scheme = request.headers["authorization"].split(" ", 1)[0]
        sent["authorization"] = f"{scheme} {REDACTED}"
    answer: dict[str, Any] = {
        "status": response.status_code,
        "contentType": response.headers.get("content-type", ""),
        "body": redacted(decode_body(response.content)),
    }
    if "www-authenticate" in response.headers:
        answer["headers"] = {"www-authenticate": response.headers["www-authenticate"]}
    return {
        "started": time.time() - response.elapsed.total_seconds(),
        "request": {
            "method": request.method,
            "path": str(request.url),
            "headers": sent,
            "body": redacted(request_body(request)),
        },
        "response": answer,
    }


def recording_hooks(
    transcript: Transcript | None,
) -> dict[str, list[Callable[[httpx.Response], Awaitable[None]]]]:
    """The ``event_hooks`` of the sign-in's client: none without a transcript."""
    if transcript is None:
        return {}

    async def record(response: httpx.Response) -> None:
        await response.aread()
        await transcript.append(exchange_record(response))

    return {"response": [record]}
