"""Sealing ``requestState``: an HMAC-signed, expiring, request-bound token.

The client echoes ``requestState`` on the retry, and the echo is attacker
controlled. presa signs what it hands out and refuses what it did not sign,
what has expired, and what was issued for another request (another method,
tool/prompt/resource, or other arguments), and what was issued to another
caller (with authorization on, the principal's access scope is bound too, so
a state handed to alice is refused when bob presents it: SEP-2663 §Security
Implications, "Auth binding").

Token: ``v1.<b64url(payload)>.<b64url(HMAC-SHA256(key, "v1." + b64url(payload)))>``
with a compact JSON payload ``{"exp", "m", "t", "h", "p", "s"}``: expiry (unix
seconds), method, target name or URI, SHA-256 of the canonical arguments, the
caller's access scope, and the handler's own state.

presa chooses: a key ring — sign with the first key, accept any — so keys can
rotate and several processes can share one. A random key generated per
process (the default) cannot be verified by any other process.

Spec: 2026-07-28 basic/patterns/mrtr §Server Requirements (Basic Workflow) 4–5,
§Security Considerations. The token format and the key ring are presa's own.
Failures are -32602 ``Invalid or expired requestState`` (HTTP 400).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Sequence
from typing import Any

import attrs

from presa_trio.wire.envelope import compact_encoder
from presa_trio.wire.errors import InvalidParams

VERSION_PREFIX = "v1."
DEFAULT_LIFETIME_S = 600
#: The shortest key accepted: an HMAC key much shorter than the hash's 32 bytes
#: can be guessed, and an empty one lets anyone forge ``requestState``.
MIN_KEY_BYTES = 16


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    padded = text + "=" * (-len(text) % 4)
    decoded = base64.b64decode(padded, altchars=b"-_", validate=True)
    if _b64(decoded) != text:
        raise ValueError("non-canonical base64")
    return decoded


def canonical_digest(arguments: Any) -> str:
    """SHA-256 of arguments as sorted, compact JSON: binds a state to its request.

    Any value the JSON parser produced has a digest: a lone surrogate
    (``"\\ud800"``, which UTF-8 cannot hold) is hashed as its three
    surrogate bytes, and every other string as its UTF-8. Arguments nested
    deeper than the encoder reaches (the parser reads a little deeper) are
    -32602 (:func:`too_deep`).
    """
    try:
        canonical = _CANONICAL(arguments)
    except RecursionError:
        raise too_deep() from None
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


# Built once, as the envelope's are: every tools/call digests its arguments.
# Parsed JSON is never cyclic, and an infinity (``1e400`` parses as one) is
# written as ``Infinity``, as the standard encoder does.
_CANONICAL = compact_encoder(sort_keys=True, allow_nan=True)


@attrs.frozen
class Binding:
    """What a state is bound to: the method, its target, its arguments, its caller."""

    method: str
    target: str
    arguments_digest: str
    # The caller's access scope (``anonymous`` without authorization).
    principal: str = "anonymous"


def invalid_state() -> InvalidParams:
    return InvalidParams("Invalid or expired requestState")


def too_deep() -> InvalidParams:
    """The request's arguments or answers are nested too deeply to bind or seal a state.

    The encoder recurses once per level, and deeper in the stack than the
    parser that read the body, so a body may parse and still not be
    writable into ``requestState``: the client's input, -32602 (mrtr §Error
    Handling), never a RecursionError.
    """
    return InvalidParams("The request is nested too deeply to carry in requestState")


@attrs.frozen
class StateSealer:
    """Seals and opens ``requestState`` tokens with a ring of HMAC keys."""

    keys: Sequence[bytes] = attrs.field()
    lifetime_s: int = DEFAULT_LIFETIME_S

    @keys.validator
    def _check_keys(self, _attribute: Any, keys: Sequence[bytes]) -> None:
        """At least one key, none shorter than :data:`MIN_KEY_BYTES` (a ``ValueError``)."""
        if not keys:
            raise ValueError("a requestState key ring needs at least one key")
        if any(len(key) < MIN_KEY_BYTES for key in keys):
            raise ValueError(f"a requestState key must be at least {MIN_KEY_BYTES} bytes")

    @classmethod
    def with_random_key(cls) -> StateSealer:
        """A per-process key: fine for one process, useless across several."""
        return cls([secrets.token_bytes(32)])

    def _mac(self, key: bytes, signed: str) -> bytes:
        return hmac.new(key, signed.encode("ascii"), hashlib.sha256).digest()

    def seal(self, state: Any, binding: Binding, now: float) -> str:
        payload = {
            "exp": int(now) + self.lifetime_s,
            "m": binding.method,
            "t": binding.target,
            "h": binding.arguments_digest,
            "p": binding.principal,
            "s": state,
        }
        try:
            encoded = json.dumps(payload, separators=(",", ":"))
        except RecursionError:
            raise too_deep() from None
        signed = VERSION_PREFIX + _b64(encoded.encode())
        return signed + "." + _b64(self._mac(self.keys[0], signed))

    def open(self, token: Any, binding: Binding, now: float) -> Any:
        """Verify a token and return the handler state inside it, else -32602.

        The MAC is checked first, in constant time; nothing in the payload is
        read before the signature holds. Tokens are ASCII: any other character
        is a forgery, refused like one rather than failing to encode.
        """
        if not (isinstance(token, str) and token.isascii() and token.startswith(VERSION_PREFIX)):
            raise invalid_state()
        signed, dot, signature = token.rpartition(".")
        if not dot or signed.count(".") != 1:
            raise invalid_state()
        try:
            mac = _unb64(signature)
        except (ValueError, binascii.Error) as exc:
            raise invalid_state() from exc
        if not any(hmac.compare_digest(mac, self._mac(key, signed)) for key in self.keys):
            raise invalid_state()
        try:
            payload = json.loads(_unb64(signed[len(VERSION_PREFIX) :]))
        except (ValueError, binascii.Error) as exc:
            raise invalid_state() from exc
        if not isinstance(payload, dict) or not isinstance(payload.get("exp"), int):
            raise invalid_state()
        if payload["exp"] < now:
            raise invalid_state()
        if (payload.get("m"), payload.get("t"), payload.get("h"), payload.get("p")) != (
            binding.method,
            binding.target,
            binding.arguments_digest,
            binding.principal,
        ):
            raise invalid_state()
        return payload.get("s")
