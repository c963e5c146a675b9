"""A raw-socket HTTP/1.1 responder, to measure the load client's own ceiling.

It answers every request with a fixed response from an asyncio protocol
callback: no ASGI, no JSON. Driving it shows how many requests a second the
client can generate on its core; the figure is printed beside the servers'
so a reader can see the client was not the bottleneck.

Run: ``python -m bench.raw --port N``.
"""

from __future__ import annotations

import argparse
import asyncio

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}'
RESPONSE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(BODY)
) + BODY


class Responder(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.buffer += data
        answers = 0
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                break
            length = 0
            for line in bytes(self.buffer[:head_end]).split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            end = head_end + 4 + length
            if len(self.buffer) < end:
                break
            del self.buffer[:end]
            answers += 1
        if answers:
            self.transport.write(RESPONSE * answers)


async def serve(host: str, port: int) -> None:
    server = await asyncio.get_running_loop().create_server(Responder, host, port)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench.raw", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
