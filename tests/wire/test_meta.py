"""Per-request ``_meta``: protocol version and capabilities come with every request.

Spec: basic/index §_meta.
"""

from __future__ import annotations

from typing import Any

import pytest

from presa_trio.wire.errors import (
    INVALID_PARAMS,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
)
from presa_trio.wire.meta import (
    ClientCapabilities,
    RequestMeta,
    require_supported_version,
)

VERSION = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


def params(**meta: Any) -> dict[str, Any]:
    base: dict[str, Any] = {VERSION: "2026-07-28", CAPABILITIES: {}}
    base.update(meta)
    return {"_meta": {k: v for k, v in base.items() if v is not ...}}


def rejection_code(value: dict[str, Any]) -> int:
    with pytest.raises(McpError) as caught:
        RequestMeta.from_params(value)
    return caught.value.code


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"_meta": None},
        {"_meta": []},
        params(**{VERSION: ...}),
        params(**{CAPABILITIES: ...}),
        params(**{CAPABILITIES: ["sampling"]}),
        params(**{VERSION: 20260728}),
    ],
    ids=[
        "no-meta",
        "meta-null",
        "meta-array",
        "no-version",
        "no-capabilities",
        "capabilities-array",
        "version-not-string",
    ],
)
def test_incomplete_meta_is_invalid_params(value: dict[str, Any]) -> None:
    """Runner-scored (server-stateless/sep-2575-request-meta-invalid-missing-meta,
    -missing-protocol-version, -missing-client-capabilities; H-13): -32602; a non-string
    version is -32602 too (basic/index §_meta)."""
    assert rejection_code(value) == INVALID_PARAMS


def test_client_info_is_optional() -> None:
    """Runner-scored (server-stateless/sep-2575-request-meta-client-info-optional)."""
    assert RequestMeta.from_params(params()).client_info is None


@pytest.mark.parametrize(
    "meta",
    [
        {"io.modelcontextprotocol/logLevel": "verbose"},
        {"io.modelcontextprotocol/logLevel": 3},
        {"progressToken": True},
        {"progressToken": 1.5},
        {"progressToken": 1.0},
        {"io.modelcontextprotocol/clientInfo": "me"},
        {"io.modelcontextprotocol/logLevel": None},
        {"progressToken": None},
        {"io.modelcontextprotocol/clientInfo": None},
        {"io.modelcontextprotocol/clientInfo": {}},
        {"io.modelcontextprotocol/clientInfo": {"name": "me"}},
        {"io.modelcontextprotocol/clientInfo": {"name": 1, "version": "1.0"}},
    ],
    ids=[
        "log-level-unknown",
        "log-level-number",
        "token-bool",
        "token-float",
        "token-integral-float",
        "info-string",
        "log-level-null",
        "token-null",
        "info-null",
        "info-empty",
        "info-without-version",
        "info-name-not-string",
    ],
)
def test_malformed_optional_meta_is_invalid_params(meta: dict[str, Any]) -> None:
    """Spec-mandated (basic/index §_meta; server/utilities/logging §Error Handling: a
    value that is not a recognized level SHOULD be -32602; basic/patterns/progress
    §Progress Flow: a token MUST be a string or integer, written as an integer literal:
    spec-notes §56): an optional field present is of its type, and ``null`` is none of
    them (schema ``$defs.RequestMetaObject``)."""
    assert rejection_code(params(**meta)) == INVALID_PARAMS


#: server/utilities/logging §Log Levels: RFC 5424's severities, least severe first.
SEVERITIES = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


@pytest.mark.parametrize("level", SEVERITIES)
def test_a_log_level_admits_itself_and_everything_more_severe(level: str) -> None:
    """Spec-mandated (server/utilities/logging: messages at or above the level, in
    §Log Levels' order)."""
    meta = RequestMeta.from_params(params(**{"io.modelcontextprotocol/logLevel": level}))
    index = SEVERITIES.index(level)
    assert [meta.logs_at(other) for other in SEVERITIES] == [
        i >= index for i in range(len(SEVERITIES))
    ]


def test_without_a_log_level_nothing_is_logged() -> None:
    """Runner-scored (server-stateless/sep-2575-server-no-log-without-loglevel)."""
    meta = RequestMeta.from_params(params())
    assert not any(meta.logs_at(level) for level in SEVERITIES)


def test_only_2026_07_28_is_supported() -> None:
    """Runner-scored (server-stateless/sep-2575-server-unsupported-version-error; H-27, E-08):
    -32022 with the requested version and the supported list."""
    require_supported_version("2026-07-28")
    with pytest.raises(McpError) as caught:
        require_supported_version("v999.0.0")
    assert caught.value.code == UNSUPPORTED_PROTOCOL_VERSION
    assert caught.value.data == {"supported": ["2026-07-28"], "requested": "v999.0.0"}


@pytest.mark.parametrize(
    ("raw", "declared"),
    [
        ({}, set()),
        ({"sampling": {}}, {"sampling"}),
        ({"sampling": True, "roots": None}, set()),
        ({"roots": {"listChanged": True}, "elicitation": {}}, {"roots", "elicitation"}),
    ],
)
def test_a_capability_is_declared_by_an_object(raw: dict[str, Any], declared: set[str]) -> None:
    """Spec-mandated (schema $defs.ClientCapabilities: each capability is an object)."""
    capabilities = ClientCapabilities(raw)
    assert {n for n in ("sampling", "elicitation", "roots") if capabilities.has(n)} == declared


@pytest.mark.parametrize(
    ("elicitation", "form", "url"),
    [
        (None, False, False),
        ({}, True, False),
        ({"form": {}}, True, False),
        ({"url": {}}, False, True),
        ({"form": {}, "url": {}}, True, True),
        ({"url": True}, False, False),
    ],
)
def test_empty_elicitation_means_form_mode_only(
    elicitation: dict[str, Any] | None, form: bool, url: bool
) -> None:
    """Spec-mandated (client/elicitation §Capabilities: ``{}`` is form mode only;
    schema $defs.ClientCapabilities: each mode is declared by an object)."""
    raw = {} if elicitation is None else {"elicitation": elicitation}
    capabilities = ClientCapabilities(raw)
    assert capabilities.has_elicitation_mode("form") is form
    assert capabilities.has_elicitation_mode("url") is url


def test_an_extension_is_declared_by_an_object_under_extensions() -> None:
    """Spec-mandated (SEP-2133: extensions are declared in capabilities.extensions)."""
    capabilities = ClientCapabilities({"extensions": {"io.example/a": {}, "io.example/b": 1}})
    assert capabilities.has_extension("io.example/a")
    assert not capabilities.has_extension("io.example/b")
    assert not ClientCapabilities({}).has_extension("io.example/a")
