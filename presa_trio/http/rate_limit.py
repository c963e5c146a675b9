"""At most so many calls a second from one client: ``serve --rate-limit``.

tools §Security Considerations: servers **MUST** rate limit tool
invocations; completion §Security: servers **SHOULD** rate limit
completion requests. Which limit is right depends on the deployment, so
presa has none until asked (spec-notes §67): ``presa-trio serve
--rate-limit 20`` lets each client make 20 ``tools/call`` and 20
``completion/complete`` a second, in bursts of up to 20 of each.

A client is the caller its access token names, with authorization on
(:attr:`~presa_trio.auth.principal.Principal.access_scope`), else the
address it connects from. Behind a proxy every client connects from the
proxy's address, so a proxy limits for itself (docs/deployment.md,
"Request limits"). Each process of ``--workers N`` counts for itself: a client
whose connections land on several processes may make up to N times as
many calls.

A call over the limit is refused from its head, before its body is read
and before anything runs: HTTP 429 with ``Retry-After`` (RFC 6585 §4), the
whole seconds until the client's next call would be let through.

Each client has a token bucket per method: ``per_second`` tokens a second
flow in, at most ``burst`` are held, and a call takes one. A bucket full
again is as good as none, and memory stays bounded: only the
:data:`MAX_CLIENTS` buckets (one per client and method) used last are
remembered. One forgotten starts full again, spent or not, so a client is
let through early only once that many other buckets were used since its
last call.
"""

from __future__ import annotations

import math

import attrs

from presa_trio.wire.http_values import Rejection

#: The methods counted: a tool's invocation, and a completion's.
LIMITED_METHODS = frozenset({"tools/call", "completion/complete"})
#: Buckets (one per client and method) remembered; past it, the least recently used is forgotten.
MAX_CLIENTS = 10_000
#: A bucket this little short of a whole call holds one: the float rounding of the
#: rate and of the clock must not refuse a call made the ``Retry-After`` seconds later.
ROUNDING_SLACK = 1e-6


def is_call_rate(per_second: float) -> bool:
    """Whether ``per_second`` can be a budget's rate: positive, finite, and not so small
    that the wait for one call (``Retry-After``, RFC 9110 §10.2.3) is no number."""
    return 0 < per_second < math.inf and 1 / per_second < math.inf


def check_call_rate(budget: CallBudget, field: attrs.Attribute[float], per_second: float) -> None:
    """Refuse a rate :func:`is_call_rate` refuses (an attrs validator)."""
    if not is_call_rate(per_second):
        raise ValueError(f"{per_second!r} is not a positive number of calls a second")


@attrs.define(eq=False)
class CallBudget:
    """Token buckets by client and method: ``per_second`` calls a second, ``burst`` at once."""

    per_second: float = attrs.field(validator=check_call_rate)
    # At least one call, or every call would be refused.
    burst: float = attrs.field(validator=attrs.validators.ge(1.0))
    # (client, method) -> (tokens held, when they were counted), least recently seen first.
    _buckets: dict[tuple[str, str], tuple[float, float]] = attrs.field(factory=dict, init=False)

    @classmethod
    def per_second_of(cls, per_second: float) -> CallBudget:
        """A second's calls a second, and at most a second's (at least one) at once."""
        return cls(per_second, max(1.0, per_second))

    def wait(self, client: str, method: str, now: float) -> float:
        """Take a call from ``client``'s bucket for ``method`` at ``now`` (seconds, monotonic).

        0.0 if there was one; else how long until there will be, and nothing is taken.
        """
        key = (client, method)
        tokens, counted = self._buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - counted) * self.per_second)
        wait = 0.0 if tokens >= 1 - ROUNDING_SLACK else (1 - tokens) / self.per_second
        self._buckets[key] = (tokens - 1 if wait == 0.0 else tokens, now)
        if len(self._buckets) > MAX_CLIENTS:
            del self._buckets[next(iter(self._buckets))]
        return wait

    def check(self, client: str, method: str | None, now: float) -> None:
        """Raise a 429 :class:`Rejection` if ``client`` may not call ``method`` now.

        ``method`` is the request's ``Mcp-Method`` (trimmed, as admission
        reads it); a method not counted passes. A header that names another
        method than the body is -32020 when the body is read, so no call
        passes uncounted under another method's name.
        """
        if method not in LIMITED_METHODS:
            return
        wait = self.wait(client, method, now)
        if wait > 0:
            seconds = math.ceil(wait)
            raise Rejection(
                429,
                f"Too many {method} requests: retry after {seconds} s",
                [(b"retry-after", b"%d" % seconds)],
            )
