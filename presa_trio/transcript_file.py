"""A transcript file, appended one whole record at a time, from a Trio program.

The server's recorder (:mod:`presa_trio.http.transcript`) and the client
(:mod:`presa_trio.client.transport`) both append to one; the format of a
record and its line is :mod:`presa_trio.wire.transcript`.

A writer stopped mid-line (a crash, a full disk) leaves a line that is not
a record. The next append to the file starts a line of its own, so that
line stays the only one lost; the rendering names it and shows the rest
(:func:`presa_trio.http.transcript_render.render_lines`).

A file it creates, at start or again once removed, is mode 0600
(:mod:`presa_trio.private_files`): it holds every caller's arguments,
answers and results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import trio

from presa_trio.private_files import private_opener
from presa_trio.wire.transcript import record_line


@attrs.define(eq=False)
class TranscriptFile:
    """A JSON-lines transcript: exchanges that end together are written one after the other."""

    path: Path
    # Held while a line is written, so two lines never interleave in the file.
    _lock: trio.Lock = attrs.field(factory=trio.Lock)

    def check(self) -> None:
        """Make the file now if it is missing, or raise the OSError that would stop a write."""
        with open(self.path, "ab", opener=private_opener):
            pass

    async def append(self, record: dict[str, Any]) -> None:
        line = record_line(record)
        async with self._lock:
            await trio.to_thread.run_sync(self._write, line)

    def _write(self, line: bytes) -> None:
        with open(self.path, "a+b", opener=private_opener) as file:
            if file.tell() > 0:  # appending: opened at the end
                file.seek(-1, 2)
                if file.read(1) != b"\n":
                    line = b"\n" + line
            file.write(line)
