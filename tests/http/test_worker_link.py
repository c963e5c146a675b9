"""The link between a worker and its parent (:mod:`presa_trio.http.worker_link`), on a
real socket pair in this process.

presa-defined (docs/deployment.md, "Many processes"): a worker hears its parent's
requests and its parent's end, and says once that it serves.
"""

from __future__ import annotations

import os
import socket

from presa_trio.http.worker_link import hear_parent, say


async def test_each_request_is_heard_then_the_parent_s_end() -> None:
    """Two requests are the first and the second; the end after them is no third."""
    parents, workers = socket.socketpair()
    heard: list[tuple[str, int]] = []
    with parents, workers:
        say(parents)
        say(parents)
        parents.close()
        await hear_parent(workers, lambda why, times: heard.append((why, times)))
    assert heard == [("asked by the parent", 1), ("asked by the parent", 2)]


async def test_a_worker_whose_parent_left_says_it_serves_to_no_other_file() -> None:
    """The parent's end closes before the worker serves (the parent was killed): once
    heard, the worker's end stays its own until it is closed, so the byte that says it
    serves goes nowhere, not into whatever file took the number of a descriptor closed
    meanwhile (here the lowest free number, as the next file opened takes)."""
    parents, workers = socket.socketpair()
    parents.close()
    number = workers.fileno()
    heard: list[tuple[str, int]] = []
    with workers:
        await hear_parent(workers, lambda why, times: heard.append((why, times)))
        read, write = os.pipe()
        try:
            say(workers)
            os.set_blocking(read, False)
            try:
                written = os.read(read, 1)
            except BlockingIOError:
                written = b""
        finally:
            os.close(read)
            os.close(write)
    assert heard == [("the parent exited", 1)]
    assert written == b"", f"the byte went into descriptor {number}, now another file's"
