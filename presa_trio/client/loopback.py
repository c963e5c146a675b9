"""The loopback redirect of a sign-in: where the person's browser brings the answer back.

The client listens on ``127.0.0.1`` (RFC 8252 §7.3: a loopback IP, not
``localhost``), at a port the kernel picks or at the one a kept
registration's redirect URI names, and takes the query of the first
request to the redirect URI's path that carries the ``state`` the
authorization request sent: the authorization response, checked further
by :func:`presa_trio.client.oauth.check_response`. Any other request (to
another path, without that ``state``: a stale tab, or anyone else who can
reach the port) is discarded, and the wait goes on; it gets a page saying
so, and the answer a page saying the window may be closed.

Spec: 2026-07-28 basic/authorization §Authorization Flow Steps (the
authorization code callback), security-considerations §Open Redirection
(clients discard results that do not include, or mismatch, the original
state); RFC 8252 §7.3.
"""

from __future__ import annotations

from contextlib import suppress
from urllib.parse import parse_qs, urlsplit

import trio

#: What the browser shows: the answer came, or a request that was none.
CLOSE = b"presa-trio: you may close this window."
NOT_OURS = b"presa-trio: this is not the answer of the sign-in it waits for."


async def loopback_listener(port: int) -> trio.SocketListener:
    """The redirect's listener on ``127.0.0.1`` (RFC 8252 §7.3): at ``port``, or one the
    kernel picks for 0; OSError when ``port`` is taken."""
    [listener] = await trio.open_tcp_listeners(port, host="127.0.0.1")
    return listener


async def await_callback(listener: trio.SocketListener, path: str, state: str) -> dict[str, str]:
    """The query of the first request to ``path`` carrying ``state`` (RFC 8252 §7.3).

    Each connection is read in a task of its own, so one that sends nothing
    (a browser's speculative preconnect) holds up no other. Failure policy:
    a connection that breaks is dropped; the answer ends them all.
    """
    found: list[dict[str, str]] = []
    async with trio.open_nursery() as nursery:

        async def answer(stream: trio.SocketStream) -> None:
            with suppress(trio.BrokenResourceError):
                async with stream:
                    target, query = await read_request(stream)
                    ours = target == path and query.get("state") == state
                    await stream.send_all(page(CLOSE if ours else NOT_OURS))
                    if ours and not found:
                        found.append(query)
                        nursery.cancel_scope.cancel()

        nursery.start_soon(trio.serve_listeners, answer, [listener])
    return found[0]


async def read_request(stream: trio.SocketStream) -> tuple[str, dict[str, str]]:
    """The path and the query of the one request read from ``stream``."""
    received = b""
    while b"\r\n\r\n" not in received and len(received) < 65536:
        chunk = await stream.receive_some(4096)
        if not chunk:
            break
        received += chunk
    target = received.split(b"\r\n", 1)[0].split(b" ")
    parts = urlsplit(target[1].decode(errors="replace") if len(target) > 1 else "")
    return parts.path, {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}


def page(said: bytes) -> bytes:
    """An HTTP response of a page that says ``said``."""
    body = b"<!doctype html><p>" + said + b"</p>\n"
    head = "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n"
    head += f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    return head.encode() + body
