"""The official SDK's ``MCPServer`` serving the bench's tool, as the SDK's docs run a server.

``server.run("streamable-http", …)``: uvicorn, with its access log on, as
a user gets it. The tool answers what presa's demo ``test_simple_text``
answers, so both servers send the same result.

Run: ``python -m bench.sdk_server --port PORT``.
"""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-sdk")


@server.tool()
async def test_simple_text() -> str:
    """Answers with a fixed text."""
    return "This is a simple text response for testing."


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.sdk_server")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
