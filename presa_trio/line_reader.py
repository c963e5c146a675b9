"""Newline-delimited lines from a Trio byte stream, in time linear in their length.

Both ends of stdio read one: the server its stdin (:mod:`presa_trio.stdio`),
the client its child's stdout (:mod:`presa_trio.client.transport`). Each
byte is searched for the newline once, and each chunk is added to the line
so far in place, however many chunks a line comes in: joining them anew on
every chunk made a 20 MB line take seconds and a 100 MB one over a minute.

Spec: 2026-07-28 basic/transports/stdio (messages are delimited by newlines).
"""

from __future__ import annotations

import attrs
import trio


class LineTooLong(Exception):
    """An input line longer than the limit; it has been read to its end and dropped."""


@attrs.define(eq=False, repr=False)
class LineReader:
    """Splits a byte stream into lines, holding at most one line of ``max_line`` bytes.

    ``max_line`` ``None``: no limit. ``unended_last_line`` says whether a last
    line without a newline counts; if not, it is dropped as cut short.
    """

    stream: trio.abc.ReceiveStream
    max_line: int | None
    unended_last_line: bool = True
    _buffer: bytearray = attrs.field(factory=bytearray)
    # How much of the buffer is known to hold no newline.
    _scanned: int = 0

    async def next_line(self) -> bytes | None:
        """The next line without its newline; ``None`` at end of input.

        Raises :class:`LineTooLong` once an over-long line has been skipped
        to its end.
        """
        too_long = False
        while (end := self._buffer.find(b"\n", self._scanned)) < 0:
            if self.over_limit(len(self._buffer)):
                too_long = True
                self._buffer.clear()
            self._scanned = len(self._buffer)
            chunk = await self.stream.receive_some()
            if not chunk:
                last, self._buffer, self._scanned = bytes(self._buffer), bytearray(), 0
                if too_long:  # ``last`` is the over-long line's tail: dropped with it
                    raise LineTooLong
                return last if last and self.unended_last_line else None
            self._buffer += chunk
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        self._scanned = 0
        if too_long or self.over_limit(len(line)):
            raise LineTooLong
        return line

    def over_limit(self, length: int) -> bool:
        return self.max_line is not None and length > self.max_line
