"""An issuer's signing keys (its JWKS), cached the way the issuer says and refetched safely.

The key set follows the issuer in both directions:

- **New keys are found.** A token naming a ``kid`` the cached set lacks
  makes presa fetch the set again, but at most once per
  ``refetch_interval_s`` for this issuer, whoever asks: anyone can send a
  token with a made-up ``kid``, and none of them may make presa hammer the
  issuer. While a refetch is not yet allowed, a token with an unfamiliar
  ``kid`` is neither accepted nor called invalid: :class:`KeysPending`
  answers 503 with ``Retry-After`` (the seconds until the next fetch is
  allowed), so a client holding a token of a just-rotated key retries
  rather than throwing it away. A ``kid`` is refused (401) only when a key
  set fetched *after* a token first named it lacks it, or when the set
  had it and a newer one does not (withdrawn); such ids are remembered
  until the next fetch, so a flood of them costs one dictionary
  lookup each, and never starves the one fetch a rotation needs.
- **Withdrawn keys stop working.** The set lasts what the issuer's
  ``Cache-Control`` says (``max-age``; ``no-store`` or ``no-cache``: the
  least), clamped to ``[refetch_interval_s, MAX_LIFETIME_S]``, else
  :data:`DEFAULT_LIFETIME_S`; after that it is fetched again before any
  further token is checked, and a key no longer published is unknown. A
  set that cannot be fetched once expired is not trusted: requests get 503
  until the issuer answers, and it is asked at most once per
  ``refetch_interval_s``, failed or not.

Times are wall-clock seconds (``time.time``), like a token's ``exp``, so a
verified token's cache entry can be capped by the key set's expiry.

Spec: authorization §Token Handling; RFC 7517 §5 (JWK Set); RFC 9111 §5.2.2.1
(``max-age``).
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import time

import attrs
import httpx
import trio
from joserfc.errors import JoseError
from joserfc.jwk import Key, KeySet

from presa_trio.auth.verifier import Basis, InvalidToken, VerifierUnavailable, ask, json_object

log = logging.getLogger(__name__)

#: A key set's lifetime when the issuer's response gives no ``max-age``.
DEFAULT_LIFETIME_S = 3600.0
#: The longest presa trusts a key set without fetching it again, whatever ``max-age`` says.
MAX_LIFETIME_S = 86_400.0
#: The least time between two fetches of one issuer's key set (``--auth-key-refetch``).
DEFAULT_REFETCH_INTERVAL_S = 10.0
#: Most ``kid`` values remembered as absent from the current set.
MAX_ABSENT = 10_000

MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*\"?(\d+)\"?\s*(?:,|$)", re.IGNORECASE)


NOT_STORED = re.compile(r"\b(?:no-store|no-cache)\b", re.IGNORECASE)


def max_age(cache_control: str | None) -> float | None:
    """How long a ``Cache-Control`` header lets a response be kept, if it says.

    ``no-store`` and ``no-cache`` say 0 (kept for the least time presa allows).
    """
    if cache_control is None:
        return None
    if NOT_STORED.search(cache_control):
        return 0.0
    found = MAX_AGE.search(cache_control)
    return None if found is None else float(found.group(1))


def usable_keys(document: dict[str, object]) -> KeySet | None:
    """The keys of a JWK Set that presa can use; None if there are none.

    A key presa cannot use (a ``kty`` or curve it does not support, a
    required member missing) is ignored, not the set (RFC 7517 §5): the
    issuer's other keys still check its tokens.
    """
    listed = document.get("keys")
    if not isinstance(listed, list):
        return None
    keys: list[Key] = []
    for entry in listed:
        with contextlib.suppress(JoseError, KeyError, TypeError, ValueError):
            keys.append(KeySet.registry_cls.import_key(entry))
    return KeySet(keys) if keys else None


class KeysPending(VerifierUnavailable):
    """The token's key may be new, and the key set may not be fetched again yet."""


@attrs.define(eq=False)
class IssuerKeys:
    """The cached JWKS of one issuer, at ``jwks_uri``."""

    jwks_uri: str
    refetch_interval_s: float = DEFAULT_REFETCH_INTERVAL_S
    _keys: KeySet | None = None
    # Wall-clock seconds: when the set was fetched (0: never) and when it expires.
    fetched_at: float = 0.0
    expires_at: float = 0.0
    # When a fetch last went out, whatever came of it: the refetch interval counts from it.
    attempted_at: float = 0.0
    # What a token checked with this set rests on: superseded by the next fetch.
    basis: Basis = attrs.field(factory=Basis)
    # ``kid`` values the current set lacks although a token named them before it was fetched.
    _absent: set[str] = attrs.field(factory=set)
    # ``kid`` values told "pending" since the last fetch: absent after it, if it lacks them.
    _pending: set[str] = attrs.field(factory=set)
    # One fetch at a time; a request that waited uses the fetch it waited for.
    _lock: trio.Lock = attrs.field(factory=trio.Lock)

    async def key(self, kid: str | None, http: httpx.AsyncClient) -> Key:
        """The key named ``kid``; :class:`InvalidToken` if the issuer has none of that name."""
        arrived = time.time()
        if arrived < self.expires_at:
            found = self.lookup(kid)
            if found is not None:
                return found
            if kid is None or kid in self._absent:
                raise InvalidToken("The access token is signed with an unknown key")
        async with self._lock:
            found = self.lookup(kid) if time.time() < self.expires_at else None
            if found is not None:  # fetched while this request waited
                return found
            if self.fetched_at < arrived:  # no fetch since this token arrived
                wait = self.attempted_at + self.refetch_interval_s - time.time()
                if wait > 0:
                    if kid is not None and len(self._pending) < MAX_ABSENT:
                        self._pending.add(kid)
                    raise KeysPending(
                        f"the key set of {self.jwks_uri} may be fetched again in {wait:.1f} s",
                        retry_after_s=max(1, math.ceil(wait)),
                    )
                await self.fetch(http)
        found = self.lookup(kid)
        if found is None:
            if kid is not None and len(self._absent) < MAX_ABSENT:
                self._absent.add(kid)
            raise InvalidToken("The access token is signed with an unknown key")
        return found

    async def prepare(self, http: httpx.AsyncClient) -> None:
        """Fetch the set unless it was fetched already."""
        async with self._lock:
            if self._keys is None:
                await self.fetch(http)

    def lookup(self, kid: str | None) -> Key | None:
        if self._keys is None:
            return None
        try:
            return self._keys.get_by_kid(kid)
        except (JoseError, ValueError):
            return None

    async def fetch(self, http: httpx.AsyncClient) -> None:
        """Fetch the set now; its lifetime comes from the response's ``Cache-Control``.

        The set counts as fetched when the request went out: a token that
        arrives while it is under way may name a key published meanwhile.
        """
        started = self.attempted_at = time.time()
        response = await ask(http, "GET", self.jwks_uri)
        keys = usable_keys(json_object(response, self.jwks_uri))
        if keys is None:
            raise VerifierUnavailable(f"{self.jwks_uri} is not a usable JWKS")
        given = max_age(response.headers.get("cache-control"))
        lifetime = DEFAULT_LIFETIME_S if given is None else given
        lifetime = min(max(lifetime, self.refetch_interval_s), MAX_LIFETIME_S)
        withdrawn = set() if self._keys is None else {key.kid for key in self._keys.keys}
        self._keys, self.fetched_at, self.expires_at = keys, started, started + lifetime
        self.basis.supersede()
        self.basis = Basis()
        named = {kid for kid in self._pending | withdrawn if kid is not None}
        self._absent = {kid for kid in named if self.lookup(kid) is None}
        self._pending = set()
        log.info(
            "fetched %d signing keys from %s, trusted for %.0f s",
            len(keys.keys),
            self.jwks_uri,
            lifetime,
        )
