"""The mirrored headers as a client writes them: one rule for both ends of the wire.

Over Streamable HTTP a request repeats parts of its body in headers so that
proxies can route without parsing JSON: ``MCP-Protocol-Version``,
``Mcp-Method``, ``Mcp-Name`` and one ``Mcp-Param-<Name>`` for each tool
argument whose schema carries ``x-mcp-header``. This module says how each is
written, and which ``x-mcp-header`` annotations are valid (the server
refuses a tool with another at registration, a client leaves it out); the
server's check of the headers is :mod:`presa_trio.http.mirrored`, the
clients are :mod:`presa_trio.client` and :mod:`presa_trio.testing`.

Spec: 2026-07-28 basic/transports/streamable-http §Standard Request Headers,
§Custom Headers from Tool Parameters, §Value Encoding; server/tools
§x-mcp-header; SEP-2243.
"""

from __future__ import annotations

import base64
import string
from collections.abc import Iterator, Mapping
from typing import Any

from presa_trio.wire.meta import META_PROTOCOL_VERSION, PROTOCOL_VERSION
from presa_trio.wire.models import JSONObject

#: Which ``params`` key ``Mcp-Name`` mirrors, for the core methods that have
#: one (§Standard Request Headers); the Tasks extension's are
#: :data:`presa_trio.wire.tasks.TASK_NAME_PARAMS`.
CORE_NAME_PARAMS: Mapping[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
}

SENTINEL_PREFIX = "=?base64?"
SENTINEL_SUFFIX = "?="


def plain_header_text(value: str) -> bool:
    """Visible ASCII, space and tab: what a header value may hold unencoded (RFC 9110 §5.5).

    In ASCII, exactly space to ``~`` are printable, so two C-level scans decide it.
    """
    return value.isascii() and value.replace("\t", " ").isprintable()


def header_value(text: str) -> str:
    """``text`` as a client must write it in ``Mcp-Name`` or ``Mcp-Param-*``.

    Spec: streamable-http §Value Encoding — literal when it is plain header
    text without outer whitespace and does not look like the sentinel, else
    ``=?base64?…?=`` of its UTF-8.
    """
    looks_encoded = text.startswith(SENTINEL_PREFIX) and text.endswith(SENTINEL_SUFFIX)
    if plain_header_text(text) and text == text.strip(" \t") and not looks_encoded:
        return text
    return SENTINEL_PREFIX + base64.b64encode(text.encode()).decode() + SENTINEL_SUFFIX


def header_form(value: Any) -> str | None:
    """How an argument value is written in an ``Mcp-Param-*`` header.

    An integer in decimal digits (§Value Encoding: "Convert to decimal string
    representation"), even one the body holds as a float, such as ``1e16`` given
    as JSON: Python would write ``1e+16``, which a server comparing the header as
    text with the integer it read would not find equal.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str | int | float):
        return str(value)
    return None


def lookup(arguments: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path`` (keys into nested objects), or None."""
    for key in path:
        if not isinstance(arguments, dict):
            return None
        arguments = arguments.get(key)
    return arguments


#: RFC 9110 §5.6.2 ``tchar``: what a header field name is made of.
TCHAR = frozenset(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~")
#: The types a mirrored parameter may have (``number`` is not one of them).
HEADER_TYPES = frozenset({"string", "integer", "boolean"})
#: The keywords whose values are instances, not schemas (JSON Schema 2020-12
#: Validation §6.1.2, §6.1.3, §9.2, §9.5): nothing in them is an annotation.
INSTANCE_KEYWORDS = frozenset({"const", "default", "enum", "examples"})


#: Where an annotation sits: its path of argument keys when the schema carrying it is
#: reached from the root through ``properties`` alone, else None.
Place = tuple[str, ...] | None


def header_annotations(node: Any, path: Place = ()) -> Iterator[tuple[Any, JSONObject, Place]]:
    """Every ``x-mcp-header`` below the schema ``node``: its value, the schema carrying
    it, and its :data:`Place`."""
    if not isinstance(node, dict):
        return
    for key, child in node.items():
        if key in INSTANCE_KEYWORDS:
            continue
        if key == "properties" and isinstance(child, dict):
            for name, schema in child.items():
                yield from carried(schema, None if path is None else (*path, name))
        else:
            for schema in child if isinstance(child, list) else [child]:
                yield from carried(schema, None)


def carried(schema: Any, path: Place) -> Iterator[tuple[Any, JSONObject, Place]]:
    """The annotation ``schema`` itself carries, if any, then those below it."""
    if isinstance(schema, dict):
        if "x-mcp-header" in schema:
            yield schema["x-mcp-header"], schema, path
        yield from header_annotations(schema, path)


def header_problem(schema: Any) -> str | None:
    """Why ``schema``'s ``x-mcp-header`` annotations are invalid, or None when they are not."""
    seen: set[str] = set()
    for name, carrier, path in header_annotations(schema):
        if not isinstance(name, str) or not name:
            return f"x-mcp-header {name!r} is not a non-empty string"
        if not set(name) <= TCHAR:
            return f"x-mcp-header {name!r} is not an HTTP field-name token"
        if name.lower() in seen:
            return f"x-mcp-header {name!r} is not unique (ignoring case)"
        seen.add(name.lower())
        kind = carrier.get("type")
        # A list of types (``["string", "null"]``) or any other JSON is no single
        # primitive type, and cannot be looked up in a set.
        if not isinstance(kind, str) or kind not in HEADER_TYPES:
            return f"x-mcp-header {name!r} is on a parameter of type {kind!r}"
        if path is None:
            return f"x-mcp-header {name!r} is not reached from the root through properties"
    return None


def header_params(schema: JSONObject) -> dict[str, tuple[str, ...]]:
    """Find ``x-mcp-header`` properties: header name -> path of argument keys.

    Spec: tools §x-mcp-header — reachable through chains of ``properties`` only.
    """
    return {
        name: path
        for name, _, path in header_annotations(schema)
        if isinstance(name, str) and path is not None
    }


def request_headers(
    message: Mapping[str, Any],
    name_params: Mapping[str, str],
    param_headers: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, str]:
    """The headers a correct client sends with ``message`` (``Host`` aside).

    ``name_params`` says which params key ``Mcp-Name`` mirrors, per method;
    ``param_headers`` (header -> path into params) adds ``Mcp-Param-*`` for
    each value present.

    ``MCP-Protocol-Version`` is the version the body's ``_meta`` declares, as the
    header must match it; :data:`PROTOCOL_VERSION` when it declares none that a header
    can carry.

    Spec: streamable-http §Protocol Version Header ("The header value MUST match the
    ``io.modelcontextprotocol/protocolVersion`` field carried in the request body's
    ``_meta``"), §Standard Request Headers, §Client Behavior.
    """
    params = message.get("params", {})
    meta = params.get("_meta") if isinstance(params, Mapping) else None
    declared = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, Mapping) else None
    version = declared if isinstance(declared, str) and plain_header_text(declared) else None
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": version or PROTOCOL_VERSION,
    }
    method = message.get("method")
    if "id" in message and isinstance(method, str):
        headers["mcp-method"] = method
        key = name_params.get(method)
        value = params.get(key) if key else None
        if isinstance(value, str):
            headers["mcp-name"] = header_value(value)
        for header, path in (param_headers or {}).items():
            form = header_form(lookup(params, path))
            if form is not None:
                headers[f"mcp-param-{header.lower()}"] = header_value(form)
    return headers
