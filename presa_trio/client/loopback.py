"""The loopback redirect of a sign-in: where the person's browser brings the answer back.

The client listens on ``127.0.0.1`` (RFC 8252 §7.3: a loopback IP, not
``localhost``), at a port the kernel picks or at the one a kept
registration's redirect URI names, and takes the query of the first
request that carries one: the authorization response, checked by
:func:`presa_trio.client.oauth.check_response`. Every request gets a page
saying the window may be closed.

Spec: 2026-07-28 basic/authorization §Authorization Flow Steps (the
authorization code callback); RFC 8252 §7.3.
"""

from __future__ import annotations

from contextlib import suppress
from urllib.parse import parse_qs, urlsplit

import trio


async def loopback_listener(port: int) -> trio.SocketListener:
    """The redirect's listener on ``127.0.0.1`` (RFC 8252 §7.3): at ``port``, or one the
    kernel picks for 0; OSError when ``port`` is taken."""
    [listener] = await trio.open_tcp_listeners(port, host="127.0.0.1")
    return listener


async def await_callback(listener: trio.SocketListener) -> dict[str, str]:
    """The query of the first request to the loopback redirect (RFC 8252 §7.3).

    Each connection is read in a task of its own, so one that sends nothing
    (a browser's speculative preconnect) holds up no other. Failure policy:
    a connection that breaks is dropped; the first query ends them all.
    """
    found: list[dict[str, str]] = []
    async with trio.open_nursery() as nursery:

        async def answer(stream: trio.SocketStream) -> None:
            with suppress(trio.BrokenResourceError):
                async with stream:
                    query = await callback_query(stream)
                    if query and not found:
                        found.append(query)
                        nursery.cancel_scope.cancel()

        nursery.start_soon(trio.serve_listeners, answer, [listener])
    return found[0]


async def callback_query(stream: trio.SocketStream) -> dict[str, str]:
    """The query of the one request read from ``stream``, answered with a page to close."""
    received = b""
    while b"\r\n\r\n" not in received and len(received) < 65536:
        chunk = await stream.receive_some(4096)
        if not chunk:
            break
        received += chunk
    target = received.split(b"\r\n", 1)[0].split(b" ")
    query = urlsplit(target[1].decode(errors="replace") if len(target) > 1 else "").query
    page = b"<!doctype html><p>presa-trio: you may close this window.</p>\n"
    head = "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n"
    head += f"content-length: {len(page)}\r\nconnection: close\r\n\r\n"
    await stream.send_all(head.encode() + page)
    return {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}
