"""``private_key_jwt`` assertions: the key's kind chooses the algorithm; anything else is refused.

Spec-mandated (RFC 7523 §3): ``iss`` and ``sub`` are the client id, ``aud``
the authorization server, with ``exp`` and ``jti``; the extension
io.modelcontextprotocol/oauth-client-credentials (SEP-1046) names the
issuer as the audience.
"""

from __future__ import annotations

import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from joserfc import jwt
from joserfc.jwk import ECKey, OKPKey, RSAKey

from presa_trio.client.assertion import ASSERTION_TYPE, LIFETIME_S, client_assertion

ISSUER = "https://auth.example.com"


@pytest.mark.parametrize(
    ("key", "algorithm"),
    [
        (RSAKey.generate_key(2048), "RS256"),
        (ECKey.generate_key("P-256"), "ES256"),
        (ECKey.generate_key("P-384"), "ES384"),
        (OKPKey.generate_key("Ed25519"), "Ed25519"),
    ],
    ids=["RSA", "P-256", "P-384", "Ed25519"],
)
def test_each_kind_of_key_signs_with_its_algorithm(
    key: RSAKey | ECKey | OKPKey, algorithm: str
) -> None:
    fields = client_assertion(key.as_pem(private=True), "robot", ISSUER)
    assert fields["client_assertion_type"] == ASSERTION_TYPE
    token = jwt.decode(fields["client_assertion"], key, algorithms=[algorithm])
    assert token.header["alg"] == algorithm
    claims = token.claims
    assert (claims["iss"], claims["sub"], claims["aud"]) == ("robot", "robot", ISSUER)
    assert claims["jti"]
    assert 0 < claims["exp"] - time.time() <= LIFETIME_S


def test_two_assertions_never_share_a_jti() -> None:
    pem = ECKey.generate_key("P-256").as_pem(private=True)
    first, second = (client_assertion(pem, "robot", ISSUER) for _ in range(2))
    key = ECKey.import_key(pem)
    ids = {jwt.decode(f["client_assertion"], key).claims["jti"] for f in (first, second)}
    assert len(ids) == 2


@pytest.mark.parametrize(
    "pem",
    [
        b"not a key at all",
        ECKey.generate_key("P-256").as_pem(private=False),  # a public key signs nothing
        ec.generate_private_key(ec.SECP256K1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    ],
    ids=["text", "public key", "secp256k1"],
)
def test_what_is_no_usable_private_key_is_refused(pem: bytes) -> None:
    """presa-defined: never taken for an HMAC secret, as a PEM-guessing import would."""
    with pytest.raises(ValueError, match=r"private key|cannot sign"):
        client_assertion(pem, "robot", ISSUER)
