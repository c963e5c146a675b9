"""The floor: the least an ASGI app under hypercorn's Trio worker can do per request.

It reads the body, parses it as JSON-RPC and answers a fixed small result
with the request's id. No header checks, no dispatch, no models: whatever
presa spends beyond this is presa's, and no hypercorn-Trio server can be
faster than this on the same machine. Served with the same hypercorn
configuration as ``presa-trio serve`` (one process, access log off).

Run: ``python -m bench.floor --port N``.
"""

from __future__ import annotations

import argparse
import json
from functools import partial

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, Scope

RESULT = b'{"content":[{"type":"text","text":"ok"}],"resultType":"complete"}'
HEADERS = [(b"content-type", b"application/json")]


async def app(scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
    if scope["type"] == "lifespan":
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] != "http":
        return
    chunks = []
    while True:
        event = await receive()
        if event["type"] != "http.request":
            return
        chunks.append(event.get("body", b""))
        if not event.get("more_body", False):
            break
    message = json.loads(b"".join(chunks))
    request_id = json.dumps(message.get("id")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": HEADERS,
            "trailers": False,
        }
    )
    await send(
        {
            "type": "http.response.body",
            "body": b'{"jsonrpc":"2.0","id":' + request_id + b',"result":' + RESULT + b"}",
            "more_body": False,
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.floor", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    config = Config()
    config.bind = [f"{args.host}:{args.port}"]
    config.accesslog = None
    trio.run(partial(serve, app, config, mode="asgi"))


if __name__ == "__main__":
    main()
