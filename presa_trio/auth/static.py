"""Development tokens: fixed secrets given on the command line, for loopback only.

``--auth-token alice=SECRET`` makes ``Authorization: Bearer SECRET`` stand
for the principal ``alice``. No authorization server is involved, so there
is no expiry, no audience and no revocation: these tokens exist to discuss
the spec's rules ("what does bob see when he asks for alice's task?") on a
server bound to 127.0.0.1, never to protect a real one.

A development token grants every scope the server requires, so scope rules
can be shown with real tokens only.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

import attrs
import httpx

from presa_trio.auth.principal import Principal
from presa_trio.auth.verifier import InvalidToken, Verified

#: The issuer of every development token's principal.
DEV_ISSUER = "urn:presa-trio:dev-token"


def parse_token_option(option: str) -> tuple[str, str]:
    """``NAME=SECRET`` -> (name, secret); both non-empty, else ``ValueError``."""
    name, equals, secret = option.partition("=")
    if not (name and equals and secret):
        raise ValueError(f"expected NAME=SECRET, got {option!r}")
    return name, secret


@attrs.define(eq=False)
class StaticTokens:
    """Verifies the development tokens: secret -> principal name."""

    names: Mapping[str, str] = attrs.field(repr=False)
    # The scopes each development principal holds.
    scopes: frozenset[str] = frozenset()

    async def prepare(self, http: httpx.AsyncClient) -> None:
        """Nothing to fetch: the tokens are given."""

    def remembered(self, token: str) -> Verified | None:
        """A development token needs no server: the answer is always at hand."""
        try:
            return self.check(token)
        except InvalidToken:
            return None

    async def verify(self, token: str, http: httpx.AsyncClient) -> Verified:
        return self.check(token)

    def check(self, token: str) -> Verified:
        found = None
        for secret, name in self.names.items():  # compare all, in constant time each
            if hmac.compare_digest(secret.encode(), token.encode()):
                found = name
        if found is None:
            raise InvalidToken("Unknown development token")
        return Verified(Principal(DEV_ISSUER, found, scopes=self.scopes), until=None)
