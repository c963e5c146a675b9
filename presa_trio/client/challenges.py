"""The Bearer challenge of a ``WWW-Authenticate`` header, as the client reads it.

A 401 names where to sign in (its ``resource_metadata``) and a 403 asks
for more scope (``error="insufficient_scope"``): basic/authorization
§Protected Resource Metadata Discovery Requirements, §Error Handling.
"""

from __future__ import annotations

import re

import httpx

#: RFC 9110 §5.6.2 token: an auth scheme or a parameter's name.
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
#: ``name = value``, the value a quoted string (RFC 9110 §5.6.4) or, leniently, any
#: run up to the next comma or space (``scope=files:read`` is seen in the wild).
_PARAM = re.compile(rf'({_TOKEN})[ \t]*=[ \t]*("(?:[^"\\]|\\.)*"|[^\s,"]+)')
_SCHEME = re.compile(_TOKEN)
#: RFC 9110 §11.2 token68, the credentials of a scheme that takes no parameters.
_TOKEN68 = re.compile(r"[ \t]+[-.~+/0-9A-Za-z_]+=*[ \t]*(?=,|$)")
_ESCAPED = re.compile(r"\\(.)")


def www_authenticate(header: str) -> dict[str, str]:
    """The parameters of the Bearer challenge (RFC 6750 §3) in a ``WWW-Authenticate``.

    Read as RFC 9110 §11.6.1 writes it: the header may hold several
    challenges (``Basic realm="x", Bearer scope="y"``), the scheme and the
    parameter names are case-insensitive (the names are given lower-case),
    and a quoted string may hold commas and escaped quotes. The first of a
    repeated parameter counts. What cannot be read ends the reading; what
    was read before stands.
    """
    challenges: dict[str, dict[str, str]] = {}
    params: dict[str, str] | None = None
    at = 0
    while at < len(header):
        if header[at] in " \t,":
            at += 1
        elif params is not None and (param := _PARAM.match(header, at)):
            name, value = param.groups()
            if value.startswith('"'):
                value = _ESCAPED.sub(r"\1", value[1:-1])
            params.setdefault(name.lower(), value)
            at = param.end()
        elif scheme := _SCHEME.match(header, at):
            params = challenges.setdefault(scheme.group().lower(), {})
            at = scheme.end()
            if token68 := _TOKEN68.match(header, at):
                at = token68.end()
        else:
            break
    return challenges.get("bearer", {})


def insufficient_scope(response: httpx.Response) -> bool:
    """403 with ``error="insufficient_scope"``: a step-up (basic/authorization §Error Handling)."""
    challenge = www_authenticate(response.headers.get("www-authenticate", ""))
    return response.status_code == 403 and challenge.get("error") == "insufficient_scope"
