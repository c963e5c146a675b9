"""What runs behind a test's ``async with`` block, and how its failures come out.

The in-process clients run the server in a nursery while the caller's
block runs in the nursery's body: the app's lifespan for the whole of
:func:`~presa_trio.testing.connect`, the app answering one request for the
whole of :meth:`~presa_trio.testing.McpClient.stream`. A nursery wraps
whatever it raises in an ``ExceptionGroup`` (trio's strict exception
groups, the default since trio 0.25), so a failed ``assert`` in the block
would come out as a group that ``pytest.raises(AssertionError)`` does not
match, and as one group more for each such block it is nested in.

trio's documentation ("Designing for multiple errors") names the way out
for a context manager whose nursery is an implementation detail: unwrap
the user's exception when it is the only error, and never pick one out of
several. That is the one policy here, in :func:`open_nursery_behind_block`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio


@asynccontextmanager
async def open_nursery_behind_block() -> AsyncIterator[trio.Nursery]:
    """A nursery for the server behind a caller's block; the block's lone error comes out as itself.

    Failure policy: a failure of anything started in the nursery (the
    server) cancels the block and comes out as the nursery's
    ``ExceptionGroup``, the block's own error with it if both failed: two
    concurrent failures stay a group. An exception the block raised when
    nothing else failed is the group's only member, and comes out
    unwrapped, with its own traceback, as if there were no nursery: the
    block runs inline, and its errors are the caller's. Only the block's own
    exception is ever unwrapped, tested by identity, never a lone failure of
    the server, which a test should see for what it is.
    """
    from_block: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            try:
                yield nursery
            except BaseException as raised:
                from_block = raised
                raise
    except BaseExceptionGroup as group:
        if from_block is not None and len(group.exceptions) == 1:
            (only,) = group.exceptions
            if only is from_block:
                raise from_block from None
        raise
