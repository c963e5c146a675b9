"""attrs models of the 2026-07-28 objects a server sends.

Names follow the schema (``$defs.Tool``, ``$defs.TextContent``…) with
snake_case attributes; :mod:`presa_trio.wire.convert` renames them. Optional
keys default to ``None`` and are then left off the wire.

Spec: schema.ts; server/tools, server/resources, server/prompts,
server/utilities/completion, server/utilities/logging.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from presa_trio.wire.convert import always

#: A JSON object as Python holds it; the one alias presa uses for "some object".
JSONObject = dict[str, Any]
Role = Literal["user", "assistant"]


@attrs.frozen
class Icon:
    """An icon a client may show for a tool, resource, template, prompt or resource link.

    Schema ``$defs.Icon``.

    ``src`` is an ``https:`` URL or a ``data:`` URI; ``sizes`` such as
    ``"48x48"`` or ``"any"``; ``theme`` the background it is drawn for.
    """

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None


# --- content blocks (schema $defs.ContentBlock) ------------------------------


@attrs.frozen
class TextContent:
    text: str
    type: Literal["text"] = always("text")
    annotations: JSONObject | None = None
    meta: JSONObject | None = None


@attrs.frozen
class ImageContent:
    data: str  # base64
    mime_type: str
    type: Literal["image"] = always("image")
    annotations: JSONObject | None = None
    meta: JSONObject | None = None


@attrs.frozen
class AudioContent:
    data: str  # base64
    mime_type: str
    type: Literal["audio"] = always("audio")
    annotations: JSONObject | None = None
    meta: JSONObject | None = None


@attrs.frozen
class TextResourceContents:
    uri: str
    text: str
    mime_type: str | None = None
    meta: JSONObject | None = None


@attrs.frozen
class BlobResourceContents:
    uri: str
    blob: str  # base64
    mime_type: str | None = None
    meta: JSONObject | None = None


ResourceContents = TextResourceContents | BlobResourceContents


@attrs.frozen
class EmbeddedResource:
    resource: ResourceContents
    type: Literal["resource"] = always("resource")
    annotations: JSONObject | None = None
    meta: JSONObject | None = None


@attrs.frozen
class ResourceLink:
    uri: str
    name: str
    type: Literal["resource_link"] = always("resource_link")
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: list[Icon] | None = None
    annotations: JSONObject | None = None
    meta: JSONObject | None = None


ContentBlock = TextContent | ImageContent | AudioContent | EmbeddedResource | ResourceLink


# --- descriptors listed by the server ---------------------------------------


@attrs.frozen
class Tool:
    """A tool as ``tools/list`` shows it (tools §Listing Tools)."""

    name: str
    description: str
    input_schema: JSONObject
    title: str | None = None
    output_schema: JSONObject | None = None
    annotations: JSONObject | None = None
    icons: list[Icon] | None = None
    meta: JSONObject | None = None


@attrs.frozen
class Resource:
    """A concrete resource as ``resources/list`` shows it (resources §Listing Resources)."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: list[Icon] | None = None
    annotations: JSONObject | None = None


@attrs.frozen
class ResourceTemplate:
    """An RFC 6570 URI template as ``resources/templates/list`` shows it.

    Spec: resources §Resource Templates.
    """

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    icons: list[Icon] | None = None
    annotations: JSONObject | None = None


@attrs.frozen
class PromptArgument:
    name: str
    description: str | None = None
    required: bool | None = None
    title: str | None = None


@attrs.frozen
class Prompt:
    """A prompt as ``prompts/list`` shows it (prompts §Listing Prompts)."""

    name: str
    description: str
    title: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None


@attrs.frozen
class PromptMessage:
    role: Role
    content: ContentBlock


# --- results -----------------------------------------------------------------


@attrs.frozen
class CallToolResult:
    """The final answer of ``tools/call`` (tools §Tool Result)."""

    content: list[ContentBlock]
    structured_content: Any = None
    is_error: bool = False
    meta: JSONObject | None = None


@attrs.frozen
class GetPromptResult:
    """The final answer of ``prompts/get`` (prompts §Getting a Prompt)."""

    messages: list[PromptMessage]
    description: str | None = None


@attrs.frozen
class Completion:
    """The ``completion`` member of ``completion/complete``: at most 100 values.

    Spec: completion §Completion Results.
    """

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


# --- notifications -------------------------------------------------------------


@attrs.frozen
class LogMessage:
    """The params of ``notifications/message``: one log message sent on a request's stream.

    Spec: server/utilities/logging §Log Message Notifications.
    """

    # One of ``presa_trio.wire.meta.LOG_LEVELS``.
    level: str
    # Any JSON value.
    data: Any
    logger: str | None = None
