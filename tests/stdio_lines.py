"""Serving lines of JSON-RPC through the stdio server, in process."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import trio
from trio.testing import (
    MemoryReceiveStream,
    MemorySendStream,
)

from presa_trio.server import Dispatcher, Server
from presa_trio.stdio import StdioServer


async def serve_lines(
    server: Server, messages: list[bytes], **options: Any
) -> list[dict[str, Any]]:
    """Run a stdio server over ``messages`` until end of input; its output lines."""
    stdin = MemoryReceiveStream()
    stdin.put_data(b"".join(messages))
    stdin.put_eof()
    stdout = MemorySendStream()
    await StdioServer(Dispatcher.for_server(server), stdin, stdout, **options).serve()
    with contextlib.suppress(trio.WouldBlock):  # when nothing was written
        return [json.loads(line) for line in stdout.get_data_nowait().splitlines()]
    return []
