"""Mirrored headers: ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``.

Each repeats a value from the body so that proxies can route without parsing
JSON; the server checks that header and body agree (streamable-http
§Server Validation; rungs 9–10 of spec-notes §10).
Names are case-insensitive, values case-sensitive, compared after trimming.
Only ``Mcp-Name`` and ``Mcp-Param-*`` may carry the ``=?base64?…?=`` form, and
are decoded before comparing (streamable-http §Value Encoding, §Server Validation;
SEP-2243 §Base64 Decoding); ``MCP-Protocol-Version`` and ``Mcp-Method`` are
compared as sent. Missing, duplicated, malformed or different: -32020, HTTP 400.

Spec: SEP-2243; 2026-07-28 basic/transports/streamable-http §Standard
Request Headers, §Custom Headers from Tool Parameters, §Server Validation.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from presa_trio.wire.errors import HeaderMismatch
from presa_trio.wire.headers import (
    SENTINEL_PREFIX,
    SENTINEL_SUFFIX,
    header_form,
    lookup,
    plain_header_text,
)
from presa_trio.wire.http_values import Headers


def plain_header_value(value: str) -> str:
    """``value`` itself, when it holds only visible ASCII, space and tab.

    Any other character (non-ASCII, control) is refused: a header value
    holding one is malformed (streamable-http §Server Validation, §Server
    Behavior for Custom Headers).
    """
    if not plain_header_text(value):
        raise HeaderMismatch("Header value has characters that must be base64-encoded")
    return value


def decode_header_value(value: str) -> str:
    """The value an ``Mcp-Name`` or ``Mcp-Param-*`` header carries: literal, or UTF-8
    from the base64 sentinel form.

    Only the exact lowercase prefix ``=?base64?`` and suffix ``?=`` mark the
    sentinel; the payload must be canonical padded base64 of valid UTF-8.
    A literal value must be plain header text (:func:`plain_header_value`):
    the client MUST have encoded anything else.
    """
    plain_header_value(value)
    if not (value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX)):
        return value
    payload = value[len(SENTINEL_PREFIX) : -len(SENTINEL_SUFFIX)]
    try:
        raw = base64.b64decode(payload, validate=True)
        if base64.b64encode(raw).decode("ascii") != payload:
            raise ValueError("non-canonical base64")
        return raw.decode("utf-8")
    except (binascii.Error, ValueError) as exc:
        raise HeaderMismatch("Malformed base64 header value") from exc


def single(headers: Headers, name: str) -> str | None:
    """The one value of ``name``; a repeated header is a mismatch."""
    values = headers.get_all(name)
    if len(values) > 1:
        raise HeaderMismatch(f"Header {name} appears more than once")
    return values[0] if values else None


def require_equal(
    headers: Headers, name: str, expected: str, read: Callable[[str], str] = plain_header_value
) -> None:
    """The header ``name`` is present once and, read by ``read``, equals ``expected``."""
    value = single(headers, name)
    if value is None:
        raise HeaderMismatch(f"Missing header {name}")
    if read(value) != expected:
        raise HeaderMismatch(f"Header {name} does not match the request body")


def check_protocol_version(headers: Headers, meta_version: str) -> None:
    """``MCP-Protocol-Version`` is present once and equals the ``_meta`` version, as sent."""
    require_equal(headers, "mcp-protocol-version", meta_version)


def check_method_and_name(
    headers: Headers,
    method: str,
    params: Mapping[str, Any],
    name_params: Mapping[str, str],
    *,
    name_required: bool = True,
) -> None:
    """``Mcp-Method`` always, as sent; ``Mcp-Name`` for methods that name a target, decoded.

    presa chooses: when the body lacks the named value, the header is not
    checked and the handler answers -32602 for the body (spec-notes §12).
    Without ``name_required`` a missing ``Mcp-Name`` passes and a present
    one must agree (``tasks/stream``, whose draft asks for none; spec-notes §50).
    """
    require_equal(headers, "mcp-method", method)
    key = name_params.get(method)
    if key is None or not isinstance(params.get(key), str):
        return
    if name_required or single(headers, "mcp-name") is not None:
        require_equal(headers, "mcp-name", params[key], decode_header_value)


#: A JSON number: what an ``Mcp-Param-*`` header may say for a numeric argument.
JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def values_agree(header: str, value: Any) -> bool:
    """Strings compare exactly, booleans as true/false, numbers numerically.

    Numbers compare as exact decimals (``42.0`` = ``42``, any size, no float
    rounding). An object or array has no header form and never agrees, nor
    does a number whose exponent is past what a ``Decimal`` holds
    (``1e9999999999999999999``): no JSON number the body parses is that far out.
    """
    if isinstance(value, bool | str):
        return header == header_form(value)
    if not isinstance(value, int | float) or not JSON_NUMBER.fullmatch(header):
        return False
    try:
        written = Decimal(header)
    except InvalidOperation:
        return False
    return written == (Decimal(value) if isinstance(value, int) else Decimal(repr(value)))


def check_param_headers(
    headers: Headers, params: Any, params_by_header: Mapping[str, tuple[str, ...]]
) -> None:
    """``Mcp-Param-<Name>`` is present exactly when its argument is present and non-null."""
    for header_name, path in params_by_header.items():
        name = f"mcp-param-{header_name.lower()}"
        header = single(headers, name)
        value = lookup(params, path)
        if value is None:
            if header is not None:
                raise HeaderMismatch(f"Header {name} given for an absent argument")
            continue
        if header is None:
            raise HeaderMismatch(f"Missing header {name}")
        if not values_agree(decode_header_value(header), value):
            raise HeaderMismatch(f"Header {name} does not match the request body")
