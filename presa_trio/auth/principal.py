"""Who is calling: the principal an access token stands for.

A verified token becomes a :class:`Principal` — the issuer that vouches for
it, the subject it names, and the OAuth client it was issued to. The
principal is the access scope of every task the caller creates, and the
scope every later task request is checked against (SEP-2663 §Security
Implications: "Auth binding").

Without authorization every caller is :data:`ANONYMOUS`: one shared scope,
where holding a task's id is the only check (which is why ids are
unguessable).
"""

from __future__ import annotations

import json

import attrs

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
