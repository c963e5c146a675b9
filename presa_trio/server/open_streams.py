"""Long-lived streams counted per client, so one client cannot hold them all.

``subscriptions/listen`` and ``tasks/stream`` each keep their stream open
until the client ends it; each open stream holds memory and its share of
every change delivered. :class:`ClientStreams` bounds how many of one kind
one client holds in this process, and refuses one more the same way for
both: -32603 with ``data: {retryable: true, limit, reason:
"too_many_streams"}``, HTTP 429 with ``Retry-After``
(:class:`~presa_trio.wire.errors.OverCapacity`). A client is the caller's
access scope with authorization on, else its address
(:func:`stream_client`).

Spec: SEP-2694 §Security Implications ("Concurrent streams per client");
basic/patterns/subscriptions §Multiple Concurrent Subscriptions lets a
client hold several listen streams, and sets no number.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterator
from contextlib import contextmanager

import attrs

from presa_trio.server.context import RequestContext
from presa_trio.wire.errors import OverCapacity

#: The requests that answer only when their stream ends: kept alive while quiet
#: over HTTP, let go before the next line over stdio, ended at end of input.
LONG_LIVED = frozenset({"subscriptions/listen", "tasks/stream"})

#: Largest body of a long-lived request over HTTP, in bytes (presa's bound; a
#: smaller ``--max-body`` wins). A stream holds its request, parsed, as long as
#: it is open, at several times the body's size, and a client may hold
#: ``--listen-max-streams-per-client`` of them: with ``--max-body`` alone one
#: client could pin thousands of times that. A filter presa honours in full
#: (100 task ids of 256 bytes, and room for many resource URIs) fits well within.
MAX_LONG_LIVED_BODY = 64 * 1024

#: ``data.reason`` of a stream refused by a limit on open streams: presa's, a
#: name the Tasks event stream proposal could adopt beside ``events_gone``
#: (spec-notes §50).
TOO_MANY_STREAMS = "too_many_streams"


#: The most ``subscriptions/listen`` streams one client holds open by default: far
#: more than a client uses (one, or one per task it follows, and a caller holds at
#: most 100 unfinished tasks by default), and a bound on what one client can pin.
DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT = 1000


def stream_client(ctx: RequestContext, scope: str) -> Hashable:
    """Whom a stream counts against: the caller's scope with authorization, else its address.

    Without authorization every caller shares one scope (spec-notes §37), so
    counting streams by scope would let one client's streams lock every other
    client out; the connection's peer (over HTTP the client's IP address)
    tells clients apart as far as the transport can. Clients behind one
    proxy share its address, and so its limit (docs/task-events.md).
    """
    if ctx.principal is not None:
        return scope
    return object() if ctx.connection is None else ctx.connection.peer


@attrs.define(eq=False)
class ClientStreams:
    """How many streams of one kind each client holds open in this process."""

    # What the streams are, in the refusal's message: "task event streams".
    kind: str
    # The refusal's ``data.limit``: the setting that bounds them.
    limit: str
    _open: Counter[Hashable] = attrs.field(factory=Counter, init=False)

    @contextmanager
    def admit(self, client: Hashable, most: int) -> Iterator[None]:
        """Hold one of ``client``'s places while the block runs; past ``most``, refuse."""
        if self._open[client] >= most:
            raise OverCapacity(
                f"Too many {self.kind} open for this client ({most}): end one, or retry later",
                self.limit,
                reason=TOO_MANY_STREAMS,
            )
        self._open[client] += 1
        try:
            yield
        finally:
            self._open[client] -= 1
            if not self._open[client]:
                del self._open[client]
