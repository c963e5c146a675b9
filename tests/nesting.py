"""Bodies nested as deep as the server's JSON parser accepts, to the first depth it refuses.

Python's parser and encoder are bounded by the interpreter's stack, not by a
depth of their own: a value the parser accepted near that bound may fail to be
measured, copied or written further down a request's path. The tests that look
for such a failure post one body at each depth in turn (:func:`answers_at_every_depth`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from typing import Any

from presa_trio.testing import McpClient, Response
from presa_trio.wire.errors import PARSE_ERROR

#: The string a body holds where the nesting goes.
DEEP = "DEEP"


def nested_json(depth: int) -> str:
    """A JSON object holding an array holding an array… ``depth`` deep."""
    return '{"x":' + "[" * depth + "]" * depth + "}"


async def answers_at_every_depth(
    client: McpClient, body: dict[str, Any]
) -> AsyncIterator[tuple[int, Response]]:
    """Post ``body``, its string :data:`DEEP` replaced by :func:`nested_json` of a depth
    from 250 levels below the recursion limit upwards, and yield each depth the parser
    accepts with its answer (whatever it is); end at the first the parser refuses (-32700)."""
    headers = client.headers_for(body)
    depth = sys.getrecursionlimit() - 250
    while True:
        raw = json.dumps(body).replace(f'"{DEEP}"', nested_json(depth)).encode()
        response = await client.post(raw, headers)
        if response.status == 400 and response.json()["error"]["code"] == PARSE_ERROR:
            return
        yield depth, response
        depth += 1
