"""Whether an object a handler built is one the schema accepts, before it is sent.

Handlers build content blocks, prompt messages and resource contents from
the attrs models of :mod:`presa_trio.wire.models`, and attrs checks no types
when it runs: ``TextContent(None)``, an image without a MIME type, an
annotation ``priority`` of 5 or a role of ``"system"`` would reach the
client as a message the schema refuses. These checks are the schema's
definitions for the fields a handler fills in: a required string is a
string, an optional one a string or absent (``None``, left off the wire),
``annotations`` an ``Annotations``, ``_meta`` an object, binary data (an
image's or audio's ``data``, a blob) base64 (``format: byte``; resources
§Security Considerations: "Binary data **MUST** be properly encoded";
prompts §Image Content, §Audio Content). The server turns
what fails them into -32603, as it does any other return it cannot send
(:mod:`presa_trio.server.results`). A URL-mode elicitation's ``url`` is
held to :func:`url_problem` when the request is built.

Spec: schema $defs.ContentBlock, $defs.TextContent, $defs.ImageContent,
$defs.AudioContent, $defs.ResourceLink, $defs.EmbeddedResource,
$defs.TextResourceContents, $defs.BlobResourceContents, $defs.Annotations, $defs.Icon,
$defs.PromptMessage, $defs.Role, $defs.ProgressNotificationParams.
"""

from __future__ import annotations

import binascii
import math
import re
from typing import Any
from urllib.parse import urlsplit

from presa_trio.wire import models

#: schema $defs.Role.
ROLES = ("user", "assistant")

#: RFC 3986 §3.1: a URI starts with its scheme, a letter then letters, digits, ``+ - .``, and ``:``.
URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
#: RFC 3986 §2: the characters of a URI, unreserved, reserved, and each ``%`` two hex digits.
URI_CHARACTERS = re.compile(r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*")


def is_number(value: Any) -> bool:
    """A JSON number: an int or a finite float, never a bool (which Python counts as an int).

    NaN and the infinities are no JSON numbers (RFC 8259 §6): a value holding
    one could only fail later, when it is encoded.
    """
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and not isinstance(value, bool)


def is_integer(value: Any) -> bool:
    """A JSON integer: an int, never a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_text(*values: Any) -> bool:
    return all(isinstance(value, str) for value in values)


def are_strings(values: Any) -> bool:
    """A JSON array of strings (a list)."""
    return isinstance(values, list) and is_text(*values)


def is_optional_text(*values: Any) -> bool:
    return all(value is None or isinstance(value, str) for value in values)


def is_base64(value: Any) -> bool:
    """RFC 4648 §4 base64, padded, and nothing else (schema ``format: byte``)."""
    if not isinstance(value, str) or not value.isascii():
        return False
    try:
        binascii.a2b_base64(value, strict_mode=True)
    except binascii.Error:
        return False
    return True


#: schema $defs.Icon ``theme``.
ICON_THEMES = (None, "light", "dark")


def is_icon(icon: Any) -> bool:
    """schema $defs.Icon: ``src`` a URI; ``mimeType`` a string, ``sizes`` strings, if given."""
    return (
        isinstance(icon, models.Icon)
        and isinstance(icon.src, str)
        and URI_SCHEME.match(icon.src) is not None
        and is_optional_text(icon.mime_type)
        and (icon.sizes is None or are_strings(icon.sizes))
        and icon.theme in ICON_THEMES
    )


def is_icons(value: Any) -> bool:
    """A list of :func:`is_icon` icons (a tuple too: it is sent as a JSON array)."""
    return isinstance(value, list | tuple) and all(map(is_icon, value))


def is_annotations(value: Any) -> bool:
    """schema $defs.Annotations: an audience of roles, a priority from 0 to 1."""
    if value is None:
        return True
    if not isinstance(value, dict):
        return False
    audience = value.get("audience", [])
    priority = value.get("priority", 0)
    return (
        isinstance(audience, list)
        and all(role in ROLES for role in audience)
        and is_number(priority)
        and 0 <= priority <= 1
        and isinstance(value.get("lastModified", ""), str)
    )


def is_meta(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def is_resource_contents(value: Any) -> bool:
    """schema $defs.TextResourceContents or $defs.BlobResourceContents."""
    if isinstance(value, models.TextResourceContents):
        body = value.text
    elif isinstance(value, models.BlobResourceContents):
        body = value.blob
        if not is_base64(body):
            return False
    else:
        return False
    return is_text(value.uri, body) and is_optional_text(value.mime_type) and is_meta(value.meta)


def is_content_block(value: Any) -> bool:
    """schema $defs.ContentBlock, its fields included."""
    if isinstance(value, models.TextContent):
        fields = is_text(value.text)
    elif isinstance(value, models.ImageContent | models.AudioContent):
        fields = is_base64(value.data) and is_text(value.mime_type)
    elif isinstance(value, models.EmbeddedResource):
        fields = is_resource_contents(value.resource)
    elif isinstance(value, models.ResourceLink):
        fields = (
            is_text(value.uri, value.name)
            and is_optional_text(value.title, value.description, value.mime_type)
            and (value.size is None or (is_integer(value.size) and value.size >= 0))
            and (value.icons is None or is_icons(value.icons))
        )
    else:
        return False
    return fields and is_annotations(value.annotations) and is_meta(value.meta)


def is_prompt_message(value: Any) -> bool:
    """schema $defs.PromptMessage: a role and one content block.

    The block also needs what the prompts page says it MUST include, where
    the schema leaves it optional or unchecked: an image or audio block a
    valid MIME type (§Image Content, §Audio Content); an embedded resource
    a URI with its scheme and a valid MIME type (§Embedded Resources).
    """
    return (
        isinstance(value, models.PromptMessage)
        and value.role in ROLES
        and is_content_block(value.content)
        and is_labelled(value.content)
    )


#: RFC 6838 §4.2: ``type/subtype``, each a restricted name, then any parameters.
MIME_TYPE = re.compile(
    r"[A-Za-z0-9][\w!#$&^.+-]{0,126}/[A-Za-z0-9][\w!#$&^.+-]{0,126}(;.*)?", re.ASCII
)


def is_labelled(content: models.ContentBlock) -> bool:
    """A valid MIME type on an image, audio or embedded block, and a URI with its scheme."""
    if isinstance(content, models.ImageContent | models.AudioContent):
        return MIME_TYPE.fullmatch(content.mime_type) is not None
    if isinstance(content, models.EmbeddedResource):
        resource = content.resource
        return (
            URI_SCHEME.match(resource.uri) is not None
            and isinstance(resource.mime_type, str)
            and MIME_TYPE.fullmatch(resource.mime_type) is not None
        )
    return True


def url_problem(url: Any) -> str | None:
    """What keeps ``url`` from being a URL a person is sent to; ``None`` if nothing.

    It is an absolute ``https`` or ``http`` URL of RFC 3986's characters
    with a host and no user information (``user:secret@``), so the client
    can show the host the person will reach (spec-notes §64).

    Spec: client/elicitation §URL Mode Elicitation Requests (the ``url``
    MUST contain a valid URL; schema.ts ``format: uri``), §Safe URL
    Handling (no credentials in the URL; the client MUST show the host).
    """
    if not isinstance(url, str) or URI_CHARACTERS.fullmatch(url) is None:
        return "a URL is a string of RFC 3986's characters, without spaces"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (reading the port checks it)
    except ValueError:
        return "the URL's host or port cannot be read"
    if parts.scheme.lower() not in ("https", "http") or not parts.hostname:
        return "a URL to open is absolute, https:// (or http://) and a host"
    if "@" in parts.netloc:
        return "a URL carries no user information (user:secret@)"
    return None
