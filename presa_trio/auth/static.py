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

from collections.abc import Mapping

import attrs
import httpx

from presa_trio.auth.principal import Principal
from presa_trio.auth.verifier import InvalidToken, Verified, token_digest
from presa_trio.wire.http_values import is_bearer_token

#: The issuer of every development token's principal.
DEV_ISSUER = "urn:presa-trio:dev-token"


def parse_token_option(option: str) -> tuple[str, str]:
    """``NAME=SECRET`` -> (name, secret); both non-empty, else ``ValueError``.

    The secret must be a token a client can send (RFC 6750 §2.1
    ``b64token``): the guard refuses any other as malformed.
    """
    name, equals, secret = option.partition("=")
    if not (name and equals and secret):
        raise ValueError(f"expected NAME=SECRET, got {option!r}")
    if not is_bearer_token(secret):
        raise ValueError(
            f"--auth-token {name}: the secret may hold only letters, digits and -._~+/, "
            "then '=' (an RFC 6750 bearer token)"
        )
    return name, secret


@attrs.define(eq=False)
class StaticTokens:
    """Verifies the development tokens: secret -> principal name."""

    names: Mapping[str, str] = attrs.field(repr=False)
    # The scopes each development principal holds.
    scopes: frozenset[str] = frozenset()
    # Each secret's verification, by its digest: a lookup whose time depends on
    # the digest of what a client sends, which tells it nothing about a secret.
    _by_digest: dict[bytes, Verified] = attrs.field(
        default=attrs.Factory(lambda self: self.verifications(), takes_self=True), repr=False
    )

    def verifications(self) -> dict[bytes, Verified]:
        return {
            token_digest(secret.encode()): Verified(
                Principal(DEV_ISSUER, name, scopes=self.scopes), until=None
            )
            for secret, name in self.names.items()
        }

    async def prepare(self, http: httpx.AsyncClient) -> None:
        """Nothing to fetch: the tokens are given."""

    async def verify(self, token: str, http: httpx.AsyncClient) -> Verified:
        """A development token needs no server: the answer is always at hand."""
        found = self._by_digest.get(token_digest(token.encode()))
        if found is None:
            raise InvalidToken("Unknown development token")
        return found
