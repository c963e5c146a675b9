"""A TCP relay between a client and a server that a test can cut.

Every connection the client opens to the relay is carried to the server
on a connection of its own, byte for byte. :meth:`Relay.cut` closes every
connection open through it, both ways at once, as a network that drops
them would: the client sees its response end in the middle, the server
sees its client gone. New connections go through as before.
"""

from __future__ import annotations

import attrs
import trio


async def carry(source: trio.SocketStream, sink: trio.SocketStream, done: trio.CancelScope) -> None:
    """Carry ``source``'s bytes to ``sink``; when either end is gone, the connection is done."""
    try:
        async for chunk in source:
            await sink.send_all(chunk)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    done.cancel()


@attrs.define(eq=False)
class Relay:
    """Listens on a loopback port of its own and relays to ``target``'s."""

    target: int
    port: int = 0
    # One cancel scope per connection open through the relay; cancelling it closes both ends.
    _open: set[trio.CancelScope] = attrs.field(factory=set)

    async def serve(
        self, *, task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Relay until cancelled; ``port`` is set once the relay listens."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        await trio.serve_listeners(self.relay, listeners, task_status=task_status)

    async def relay(self, client: trio.SocketStream) -> None:
        """One connection: both directions pumped until one ends or the relay cuts it.

        A server that refuses the connection closes the client's: the relay
        must never end for one connection's failure.
        """
        async with client:
            try:
                server = await trio.open_tcp_stream("127.0.0.1", self.target)
            except OSError:
                return
            async with server:
                with trio.CancelScope() as scope:
                    self._open.add(scope)
                    try:
                        async with trio.open_nursery() as nursery:
                            nursery.start_soon(carry, client, server, scope)
                            nursery.start_soon(carry, server, client, scope)
                    finally:
                        self._open.discard(scope)

    def cut(self) -> int:
        """Close every connection open through the relay now; how many there were."""
        for scope in self._open:
            scope.cancel()
        return len(self._open)
