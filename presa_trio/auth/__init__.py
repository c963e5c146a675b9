"""Authorization: presa as an OAuth 2.1 resource server (HTTP only, off by default).

Reading order:

- :mod:`~presa_trio.auth.principal` — the verified caller, the task access
  scope it becomes, and what the edge granted a request (its scopes, when
  its token lapses);
- :mod:`~presa_trio.auth.guard` — the HTTP rung: bearer token, 401/403
  challenges, scope rules, the Protected Resource Metadata document, the
  startup check of the wiring;
- :mod:`~presa_trio.auth.verifier` — what a verifier promises;
  :mod:`~presa_trio.auth.jwt_tokens` (RFC 9068 JWTs against the issuer's
  JWKS, kept by :mod:`~presa_trio.auth.keys`),
  :mod:`~presa_trio.auth.introspection` (RFC 7662, opaque tokens),
  :mod:`~presa_trio.auth.static` (development tokens);
- :mod:`~presa_trio.auth.discovery` — the issuer's RFC 8414 / OpenID metadata;
- :mod:`~presa_trio.auth.options` — the ``--auth-*`` flags.

stdio takes no tokens: there, credentials come from the environment
(authorization §Protocol Requirements: STDIO implementations "SHOULD NOT
follow this specification").

Spec: 2026-07-28 basic/authorization (and its pages
authorization-server-discovery, security-considerations); SEP-2663
§Security Implications.
"""
