"""``private_key_jwt``: the client proves who it is with a JWT signed by its own key.

RFC 7523 §2.2 and §3: the token request carries ``client_assertion_type``
``urn:ietf:params:oauth:client-assertion-type:jwt-bearer`` and
``client_assertion``, a JWT whose ``iss`` and ``sub`` are the client id,
whose ``aud`` is the authorization server (its issuer identifier, as the
MCP client credentials extension, SEP-1046, asks), with a ``jti`` and a
short ``exp``. The key is a PEM file the person names (``--client-key``),
read for each request and never copied into the token file; its type
chooses the algorithm (RSA: RS256; EC P-256, P-384, P-521: ES256, ES384,
ES512; Ed25519: Ed25519, RFC 9864's name for what was EdDSA). authlib
builds and signs the JWT (with joserfc); cryptography only tells the key's
type, so a PEM that is no private key is refused rather than taken for an
HMAC secret.
"""

from __future__ import annotations

from authlib.oauth2.rfc7523 import private_key_jwt_sign
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from joserfc.jwk import ECKey, OKPKey, RSAKey

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: How long an assertion may be used, in seconds: one token request.
LIFETIME_S = 300
#: The JWS algorithm of each elliptic curve (RFC 7518 §3.4).
CURVES = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}


def signing_key(pem: bytes) -> tuple[RSAKey | ECKey | OKPKey, str]:
    """The key in ``pem`` and the algorithm it signs with; ValueError for anything else."""
    try:
        private = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as error:
        raise ValueError(f"not a private key in PEM without a passphrase ({error})") from None
    if isinstance(private, rsa.RSAPrivateKey):
        return RSAKey.import_key(pem), "RS256"
    if isinstance(private, ec.EllipticCurvePrivateKey) and private.curve.name in CURVES:
        return ECKey.import_key(pem), CURVES[private.curve.name]
    if isinstance(private, ed25519.Ed25519PrivateKey):
        return OKPKey.import_key(pem), "Ed25519"
    raise ValueError("a key of a kind presa-trio cannot sign with (RSA, EC P-256/384/521, Ed25519)")


def client_assertion(pem: bytes, client_id: str, audience: str) -> dict[str, str]:
    """The form fields that authenticate ``client_id`` to ``audience`` (RFC 7523 §2.2)."""
    key, algorithm = signing_key(pem)
    assertion = private_key_jwt_sign(key, client_id, audience, alg=algorithm, expires_in=LIFETIME_S)
    return {"client_assertion_type": ASSERTION_TYPE, "client_assertion": str(assertion)}
