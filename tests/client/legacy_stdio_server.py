"""A stdio server of the ``initialize`` era that never checks ``initialize`` came first.

``python legacy_stdio_server.py [CODE]``: it answers ``initialize`` with
2025-11-25, ``tools/list`` with one tool, ``delete_all``, and ``tools/call``
by running it (saying so on stderr); any other method gets the error CODE
(default -32601), as legacy servers answer requests they do not know with
an error of their own choosing (basic/transports/stdio §Backward
Compatibility). Such a server serves an era-ambiguous method to a client
that skipped the handshake, under its own era's rules.
"""

from __future__ import annotations

import json
import sys
from typing import Any

RESULTS: dict[str, Any] = {
    "initialize": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "legacy", "version": "1.0.0"},
    },
    "tools/list": {"tools": [{"name": "delete_all", "inputSchema": {"type": "object"}}]},
    "tools/call": {"content": [{"type": "text", "text": "deleted everything"}]},
}


def main() -> None:
    code = int(sys.argv[1]) if len(sys.argv) > 1 else -32601
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message["method"]
        if method == "tools/call":
            print(f"ran {message['params']['name']}", file=sys.stderr, flush=True)
        if method in RESULTS:
            answer: dict[str, Any] = {"result": RESULTS[method]}
        else:
            answer = {"error": {"code": code, "message": f"Unknown method: {method}"}}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **answer}), flush=True)


if __name__ == "__main__":
    main()
