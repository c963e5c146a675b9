"""Who is calling: the principal an access token stands for.

A verified token becomes a :class:`Principal` — the issuer that vouches for
it, the subject it names, and the OAuth client it was issued to. The
principal is the access scope of every task the caller creates, and the
scope every later task request is checked against (SEP-2663 §Security
Implications: "Auth binding").

Without authorization every caller is :data:`ANONYMOUS`: one shared scope,
where holding a task's id is the only check (which is why ids are
unguessable).

Beside the principal, the HTTP edge gives each request its :class:`Access`:
the scopes it needed, and a way to learn when the token stops being valid.
A task keeps the scopes of the call that created it; a later request on the
task without them is :class:`InsufficientScope`, the same 403 a
``tools/call`` of that tool would get (authorization §Runtime Insufficient
Scope Errors).
"""

from __future__ import annotations

import json
from typing import Protocol

import attrs
import trio

#: The access scope of a request when authorization is off.
ANONYMOUS = "anonymous"

#: Clock skew a verifier allows on a token's ``exp``, ``nbf`` and ``iat``, in seconds.
DEFAULT_LEEWAY_S = 30


@attrs.frozen
class Principal:
    """The caller behind a verified access token."""

    # The authorization server that issued the token (its ``iss``).
    issuer: str
    # Whom the token stands for (its ``sub``).
    subject: str
    # The OAuth client the token was issued to (``client_id``), if named.
    client_id: str | None = None
    # The scopes the token grants.
    scopes: frozenset[str] = frozenset()

    @property
    def access_scope(self) -> str:
        """A stable string naming this caller: the task store's scope key.

        JSON keeps the three parts apart whatever characters they hold, and
        it can never equal :data:`ANONYMOUS`.
        """
        return json.dumps([self.issuer, self.subject, self.client_id], separators=(",", ":"))


def access_scope(principal: Principal | None) -> str:
    """The access scope of a request made by ``principal`` (``None``: auth is off)."""
    return ANONYMOUS if principal is None else principal.access_scope


class TokenWatch(Protocol):
    """What can tell when a token stops being valid (the HTTP edge's guard)."""

    async def lapsed(self, token: bytes) -> None:
        """Return once ``token`` stops being valid."""
        ...


@attrs.define
class Access:
    """What the HTTP edge granted one request, beside its caller."""

    # The scopes the request needed: every request's, its method's, its tool's.
    required: frozenset[str] = frozenset()
    # What watches the request's token, and the token; None: it never lapses
    # (no authorization).
    _watch: TokenWatch | None = None
    _token: bytes = b""

    @property
    def lapses(self) -> bool:
        """Whether the request's authority can end while it is served."""
        return self._watch is not None

    async def lapsed(self) -> None:
        """Return once the request's token stops being valid; never, if it cannot."""
        if self._watch is None:
            await trio.sleep_forever()
        else:
            await self._watch.lapsed(self._token)


#: The access of a request made without authorization.
OPEN_ACCESS = Access()


class InsufficientScope(Exception):
    """The token lacks scopes a resource (a task) requires: HTTP 403 at the edge."""

    def __init__(self, method: str, needed: frozenset[str]) -> None:
        super().__init__(f"{method} requires the scopes: {' '.join(sorted(needed))}")
        self.method = method
        self.needed = needed


def holds(principal: Principal | None, scopes: frozenset[str] | None) -> bool:
    """Whether ``principal`` holds ``scopes`` (``None``: no such task; no principal: auth off)."""
    return scopes is not None and (principal is None or scopes <= principal.scopes)


def require_scopes(
    principal: Principal | None, access: Access, method: str, scopes: frozenset[str]
) -> None:
    """:class:`InsufficientScope` unless ``principal`` holds ``scopes`` (none: auth is off)."""
    if not holds(principal, scopes):
        raise InsufficientScope(method, access.required | scopes)
