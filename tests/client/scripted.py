"""What the scripted ASGI servers of the client's tests share."""

from __future__ import annotations

import json
from typing import Any


async def request_of(receive: Any) -> Any:
    """The JSON-RPC message of one ASGI request, its body read to the end."""
    body = b""
    while True:
        part = await receive()
        body += part.get("body", b"")
        if not part.get("more_body"):
            return json.loads(body)
