"""``requestState`` sealing: what the server signs comes back intact, or not at all.

The client echoes ``requestState`` and the echo is attacker-controlled
(mrtr §Server Requirements 4). A sealed token opens only with a key of the
ring, before its expiry, on the request it was issued for; anything else is
-32602 ``Invalid or expired requestState`` and never another exception.
"""

from __future__ import annotations

import string
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from presa_trio.wire.errors import INVALID_PARAMS, InvalidParams
from presa_trio.wire.request_state import Binding, StateSealer, canonical_digest

NOW = 1_800_000_000.0
KEY = b"k" * 32
BINDING = Binding("tools/call", "book_flight", canonical_digest({"to": "LIS"}))

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
bindings = st.builds(
    Binding,
    st.sampled_from(["tools/call", "prompts/get", "resources/read"]),
    st.text(min_size=1, max_size=40),
    st.dictionaries(st.text(max_size=8), json_values, max_size=4).map(canonical_digest),
)


def sealer(*keys: bytes, lifetime_s: int = 600) -> StateSealer:
    return StateSealer(list(keys or (KEY,)), lifetime_s=lifetime_s)


def assert_refused(token: Any, binding: Binding = BINDING, now: float = NOW) -> None:
    """Opening ``token`` raises exactly the spec's -32602, nothing else."""
    with pytest.raises(InvalidParams) as caught:
        sealer().open(token, binding, now)
    assert caught.value.code == INVALID_PARAMS


@given(state=json_values, binding=bindings)
def test_a_sealed_state_opens_to_the_same_value(state: Any, binding: Binding) -> None:
    """presa-defined (presa_trio.wire.request_state): seal then open returns the
    handler's state unchanged."""
    token = sealer().seal(state, binding, NOW)
    assert sealer().open(token, binding, NOW + 1) == state


@given(state=json_values, binding=bindings)
def test_a_token_is_an_opaque_ascii_string(state: Any, binding: Binding) -> None:
    """Spec-mandated (mrtr §InputRequiredResult: requestState is a string): the
    token is printable ASCII without whitespace, safe in JSON and in logs."""
    token = sealer().seal(state, binding, NOW)
    assert token.startswith("v1.")
    assert set(token) <= set(string.ascii_letters + string.digits + "-_.")


@given(data=st.data(), state=json_values)
def test_any_single_byte_change_to_a_token_is_rejected(data: st.DataObject, state: Any) -> None:
    """Spec-mandated (mrtr §Server Requirements 4: MUST reject state that fails
    verification): changing any one byte of the token, to any other
    byte value, gives -32602 and never another exception."""
    token = sealer().seal(state, BINDING, NOW).encode("ascii")
    index = data.draw(st.integers(0, len(token) - 1), label="index")
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != token[index]), label="byte")
    changed = token[:index] + bytes([byte]) + token[index + 1 :]
    assert_refused(changed.decode("latin-1"))


@given(data=st.data(), state=json_values)
def test_any_truncation_of_a_token_is_rejected(data: st.DataObject, state: Any) -> None:
    """Spec-mandated (mrtr §Server Requirements 4): a prefix of a token is refused."""
    token = sealer().seal(state, BINDING, NOW)
    assert_refused(token[: data.draw(st.integers(0, len(token) - 1))])


def test_a_signature_with_other_spare_bits_is_rejected() -> None:
    """Spec-mandated (mrtr §Server Requirements 4: MUST reject state that fails
    verification): the signature's last base64url character carries 2 bits of the
    MAC and 4 spare ones; a token whose spare bits differ decodes to the same MAC,
    but it is not the token the server issued, and is refused (RFC 4648 §3.5:
    canonical encoding), so no token has a second spelling."""
    token = sealer().seal("s", BINDING, NOW)
    alphabet = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"
    last = alphabet.index(token[-1])
    assert last % 16 == 0  # 32 bytes: the last character's 4 low bits are spare
    assert_refused(token[:-1] + alphabet[last + 1])


@pytest.mark.parametrize(
    "token",
    [None, 12, ["v1.x.y"], {"s": 1}, "", "v1.", "v1..", "v2.e30.AAAA", "not-a-token"],
    ids=["null", "number", "array", "object", "empty", "prefix", "empty-parts", "v2", "text"],
)
def test_something_that_is_not_a_token_is_rejected(token: Any) -> None:
    """Spec-mandated (mrtr §Server Requirements 4: requestState not a string, or
    failing verification, is -32602)."""
    assert_refused(token)


def test_the_runners_tampering_is_rejected() -> None:
    """Runner-scored (input-required-result-tampered-state/sep-2322-reject-tampered-state):
    the runner appends ``-TAMPERED`` to the token."""
    assert_refused(sealer().seal({"ok": True}, BINDING, NOW) + "-TAMPERED")


def test_a_token_signed_with_another_key_is_rejected() -> None:
    """Spec-mandated (mrtr §Server Requirements 4: integrity protected): a token
    from a server with another key (a foreign token) is refused."""
    foreign = StateSealer([b"x" * 32]).seal({"ok": True}, BINDING, NOW)
    assert_refused(foreign)


def test_a_key_ring_signs_with_its_first_key_and_accepts_any() -> None:
    """presa-defined (presa_trio.wire.request_state key ring): after a rotation, tokens signed with
    the previous key still open, and new tokens open on the previous ring too
    only if it holds the new key."""
    old, new = b"o" * 32, b"n" * 32
    issued_before = StateSealer([old]).seal("s", BINDING, NOW)
    rotated = StateSealer([new, old])
    assert rotated.open(issued_before, BINDING, NOW) == "s"
    issued_after = rotated.seal("s", BINDING, NOW)
    assert StateSealer([new]).open(issued_after, BINDING, NOW) == "s"
    with pytest.raises(InvalidParams):
        StateSealer([old]).open(issued_after, BINDING, NOW)


def test_an_expired_token_is_rejected() -> None:
    """Spec-mandated (mrtr §Server Requirements 5: a short expiry, rejecting
    state presented after it lapses)."""
    token = sealer(lifetime_s=60).seal("s", BINDING, NOW)
    assert sealer().open(token, BINDING, NOW + 60) == "s"
    assert_refused(token, now=NOW + 61)


@pytest.mark.parametrize(
    "other",
    [
        Binding("prompts/get", "book_flight", BINDING.arguments_digest),
        Binding("tools/call", "cancel_flight", BINDING.arguments_digest),
        Binding("tools/call", "book_flight", canonical_digest({"to": "OPO"})),
        Binding("tools/call", "book_flight", BINDING.arguments_digest, principal="bob"),
    ],
    ids=["other-method", "other-target", "other-arguments", "other-principal"],
)
def test_a_token_presented_on_another_request_is_rejected(other: Binding) -> None:
    """Spec-mandated (mrtr §Server Requirements 5: an identifier for the originating
    request, e.g. the method name and a digest of its salient parameters, and the
    authenticated principal, rejecting state presented by a different principal)."""
    assert_refused(sealer().seal("s", BINDING, NOW), binding=other)


def test_the_argument_digest_ignores_key_order() -> None:
    """presa-defined (presa_trio.wire.request_state canonical arguments): the same arguments in
    another key order are the same request."""
    assert canonical_digest({"a": 1, "b": [1, {"c": 2, "d": 3}]}) == canonical_digest(
        {"b": [1, {"d": 3, "c": 2}], "a": 1}
    )
    assert canonical_digest({"a": 1}) != canonical_digest({"a": "1"})


def test_the_argument_digest_tells_lone_surrogates_apart() -> None:
    """Spec-mandated (mrtr §Server Requirements 5: a digest of the salient parameters,
    rejecting state presented on a request that does not match): arguments holding
    different lone surrogates (JSON text may spell ``"\\ud800"``, RFC 8259 §8.2) are
    different requests, never one digest with both read as a replacement character."""
    assert canonical_digest({"a": "\ud800"}) != canonical_digest({"a": "\udc00"})
    assert canonical_digest({"a": "\ud800"}) != canonical_digest({"a": "?"})


@pytest.mark.parametrize("keys", [[], [b""], [b"k" * 15], [KEY, b"short"]])
def test_an_empty_ring_or_a_short_key_is_refused(keys: list[bytes]) -> None:
    """presa-defined (request_state.py): an HMAC key under 16 bytes could be guessed,
    and an empty one lets anyone forge ``requestState``; the ring refuses both."""
    with pytest.raises(ValueError, match="requestState key"):
        StateSealer(keys)


def nested(depth: int) -> list[Any]:
    """A list holding a list… ``depth`` deep, built without recursion."""
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def test_a_request_nested_too_deeply_to_bind_or_seal_is_invalid_params() -> None:
    """Spec-mandated (basic/patterns/mrtr §Error Handling: what cannot be processed is
    a JSON-RPC error with an appropriate code): arguments or answers nested deeper
    than JSON can be written here are the client's, -32602, never a RecursionError."""
    too_deep = nested(sys.getrecursionlimit() * 2)
    with pytest.raises(InvalidParams) as digest:
        canonical_digest({"a": too_deep})
    with pytest.raises(InvalidParams) as seal:
        sealer().seal({"answers": too_deep}, BINDING, NOW)
    assert digest.value.code == seal.value.code == INVALID_PARAMS
