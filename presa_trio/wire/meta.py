"""Per-request ``_meta``: the protocol version and client capabilities of one request.

There is no session in 2026-07-28: every request carries its own protocol
version and its own client capabilities, and nothing carries over from one
request to the next (basic/index §_meta, §Statelessness).

Spec: 2026-07-28 basic/index §_meta; schema ``$defs.RequestMetaObject``.
"""

from __future__ import annotations

import re
from typing import Any, Final

import attrs

from presa_trio.wire.errors import InvalidParams, UnsupportedProtocolVersion

PROTOCOL_VERSION: Final = "2026-07-28"
SUPPORTED_VERSIONS: Final = (PROTOCOL_VERSION,)
#: Said in every refusal of a request that names no version of its own, and
#: in the -32601 of ``initialize``: a client of the ``initialize`` era (which
#: never sends the modern ``_meta``) has no other way to learn them
#: (versioning §Backward Compatibility with Initialization-Based Versions:
#: SHOULD, "any error it returns to an initialize request").
SUPPORTED_NAMED: Final = "supported protocol versions: " + ", ".join(SUPPORTED_VERSIONS)
#: The request that opened a session in the earlier revisions; 2026-07-28 has none.
HANDSHAKE: Final = "initialize"

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

#: A ``_meta`` key's prefix label: a letter, then letters, digits or hyphens, ending
#: in a letter or digit (basic/index §_meta).
_LABEL: Final = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
#: A ``_meta`` key's name: empty, or alphanumeric at both ends with ``-_.`` between.
_NAME: Final = r"(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?"
#: An extension identifier: a ``_meta`` key whose prefix is mandatory.
_EXTENSION_ID: Final = re.compile(rf"{_LABEL}(?:\.{_LABEL})*/{_NAME}")

#: Logging levels in increasing severity (RFC 5424 names; spec utilities/logging).
LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


def is_extension_id(value: str) -> bool:
    """Whether ``value`` is a well-formed extension identifier, e.g. ``com.example/ui``.

    Spec: versioning §Extension Negotiation (the ``_meta`` key naming rules, with
    a mandatory prefix); basic/index §_meta (the rules); SEP-2133 §Definition.
    """
    return _EXTENSION_ID.fullmatch(value) is not None


def is_implementation(value: Any) -> bool:
    """An ``Implementation`` as far as its required members go: an object whose
    ``name`` and ``version`` are strings (schema ``$defs.Implementation``).

    Its other members are for display only (basic/index §_meta: servers
    SHOULD NOT act on them), and presa reads none of them.
    """
    return (
        isinstance(value, dict)
        and isinstance(value.get("name"), str)
        and isinstance(value.get("version"), str)
    )


@attrs.frozen
class ClientCapabilities:
    """What the client declared on this one request.

    Kept as the raw object: capability objects are open, and a server only
    asks "is this key declared?" (basic/index §Statelessness).
    """

    raw: dict[str, Any] = attrs.field(factory=dict)

    def has(self, name: str) -> bool:
        """Whether a top-level capability (``sampling``, ``roots``…) is declared."""
        return isinstance(self.raw.get(name), dict)

    def has_elicitation_mode(self, mode: str) -> bool:
        """Elicitation ``{}`` means form mode only (client/elicitation §Capabilities)."""
        elicitation = self.raw.get("elicitation")
        if not isinstance(elicitation, dict):
            return False
        if not elicitation:
            return mode == "form"
        return isinstance(elicitation.get(mode), dict)

    def has_extension(self, extension_id: str) -> bool:
        """Whether the request declares an extension (SEP-2133).

        Any JSON object counts as a declaration; its contents are the
        extension's settings.
        """
        extensions = self.raw.get("extensions")
        return isinstance(extensions, dict) and isinstance(extensions.get(extension_id), dict)


@attrs.frozen
class RequestMeta:
    """The validated ``params._meta`` of one request."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: dict[str, Any] | None = None
    log_level: str | None = None
    progress_token: str | int | None = None

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> RequestMeta:
        """Validate the shape of ``params._meta`` (basic/index §_meta; rung 8 of spec-notes §10).

        Missing ``_meta``, ``protocolVersion`` or ``clientCapabilities`` is
        -32602 (runner server-stateless/sep-2575-request-meta-invalid-*);
        a request that names no version, a legacy ``initialize`` among them
        (with or without a ``_meta`` of its era), is told the supported ones.
        Whether the version is *supported* is a later rung: see
        :func:`require_supported_version`. The other fields, required
        ``clientCapabilities`` included, are read only under a supported
        version: which fields another version requires, and what they may
        hold, is that version's to say, and the later rung MUST answer it
        -32022 (streamable-http §Protocol Version Header; versioning
        §Protocol Version Negotiation), not -32602 for a field 2026-07-28
        requires or a value it lacks, such as a new log level; nothing reads
        the capabilities of a request refused there. Under 2026-07-28 an
        optional field is absent or of its type: a ``null`` is no
        ``Implementation``, no log level and no progress token (schema
        ``$defs.RequestMetaObject``: an ``Implementation`` has a string ``name``
        and ``version``; logging §Error Handling: a value that is
        not a recognized level SHOULD be -32602; progress §Progress Flow:
        a token MUST be a string or an integer).
        """
        meta = params.get("_meta")
        if not isinstance(meta, dict):
            raise InvalidParams(f"Missing params._meta; {SUPPORTED_NAMED}")
        version = meta.get(META_PROTOCOL_VERSION)
        if not isinstance(version, str):
            raise InvalidParams(
                f"params._meta must carry a string '{META_PROTOCOL_VERSION}'; {SUPPORTED_NAMED}"
            )
        if version not in SUPPORTED_VERSIONS:
            return cls(protocol_version=version, capabilities=ClientCapabilities({}))
        capabilities = meta.get(META_CLIENT_CAPABILITIES)
        if not isinstance(capabilities, dict):
            raise InvalidParams(f"params._meta must carry an object '{META_CLIENT_CAPABILITIES}'")
        client_info = meta.get(META_CLIENT_INFO)
        if META_CLIENT_INFO in meta and not is_implementation(client_info):
            raise InvalidParams(
                f"'{META_CLIENT_INFO}' must be an object with a string 'name' and 'version'"
            )
        log_level = meta.get(META_LOG_LEVEL)
        if META_LOG_LEVEL in meta and log_level not in LOG_LEVELS:
            raise InvalidParams(f"Unknown log level: {log_level!r}")
        progress_token = meta.get("progressToken")
        if "progressToken" in meta and (
            isinstance(progress_token, bool) or not isinstance(progress_token, str | int)
        ):
            raise InvalidParams("progressToken must be a string or an integer")
        return cls(
            protocol_version=version,
            capabilities=ClientCapabilities(capabilities),
            client_info=client_info,
            log_level=log_level,
            progress_token=progress_token,
        )

    def logs_at(self, level: str) -> bool:
        """Whether a message at ``level`` may be sent: only at or above logLevel.

        Spec: logging §Per-request log level.
        """
        if self.log_level is None:
            return False
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level)


def require_supported_version(version: str) -> None:
    """-32022 unless this server speaks ``version`` (streamable-http §Protocol Version Header)."""
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedProtocolVersion(version, list(SUPPORTED_VERSIONS))
