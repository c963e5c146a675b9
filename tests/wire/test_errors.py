"""The spec's errors: each exception carries its JSON-RPC code and HTTP status.

Spec: basic/index §Error Codes.
"""

from __future__ import annotations

import pytest

from presa_trio.wire import errors

#: (exception, JSON-RPC code as in schema.ts, HTTP status, spec-notes §1 for -32603)
TABLE = [
    (errors.ParseError(), -32700, 400),
    (errors.InvalidRequest(), -32600, 400),
    (errors.MethodNotFound(), -32601, 404),
    (errors.InvalidParams(), -32602, 400),
    (errors.InternalError(), -32603, 500),
    (errors.HeaderMismatch(), -32020, 400),
    (errors.MissingRequiredClientCapability.for_capability("sampling"), -32021, 400),
    (errors.UnsupportedProtocolVersion("v999.0.0", ["2026-07-28"]), -32022, 400),
]


@pytest.mark.parametrize(("error", "code", "status"), TABLE, ids=lambda v: type(v).__name__)
def test_each_error_has_the_specs_code_and_http_status(
    error: errors.McpError, code: int, status: int
) -> None:
    """Spec-mandated (schema.ts error constants; streamable-http §Request Metadata:
    -32601 is 404, -32020/-32021/-32022 are 400; basic/index §Error Codes; E-01 to
    E-08). -32603 is 500 by presa's choice (spec-notes §1)."""
    assert (error.code, error.http_status) == (code, status)
    assert error.to_wire()["code"] == code
    assert isinstance(error.to_wire()["message"], str)


def test_missing_capability_data_is_a_client_capabilities_object() -> None:
    """Spec-mandated (schema $defs.MissingRequiredClientCapabilityError: data is
    required and requiredCapabilities is ClientCapabilities-shaped; runner
    server-stateless/sep-2575-server-rejects-undeclared-capability fails an array; E-07, T-72)."""
    wire = errors.MissingRequiredClientCapability.for_capability("sampling").to_wire()
    assert wire["data"] == {"requiredCapabilities": {"sampling": {}}}
    settings = errors.MissingRequiredClientCapability.for_capability(
        "elicitation", {"url": {}}
    ).to_wire()
    assert settings["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}


def test_missing_extension_data_names_the_extension() -> None:
    """Spec-mandated (SEP-2133; schema ClientCapabilities.extensions; E-07): an undeclared
    extension is required under ``extensions``."""
    wire = errors.MissingRequiredClientCapability.for_extension("io.example/x").to_wire()
    assert wire["data"] == {"requiredCapabilities": {"extensions": {"io.example/x": {}}}}


def test_unsupported_version_data_names_supported_and_requested() -> None:
    """Spec-mandated (schema $defs.UnsupportedProtocolVersionError; runner
    server-stateless/sep-2575-server-unsupported-version-error; E-08)."""
    wire = errors.UnsupportedProtocolVersion("v999.0.0", ["2026-07-28"]).to_wire()
    assert wire["data"] == {"supported": ["2026-07-28"], "requested": "v999.0.0"}


def test_data_is_left_out_when_there_is_none() -> None:
    """Spec-mandated (JSON-RPC 2.0 §5.1: data may be omitted)."""
    assert "data" not in errors.InvalidParams("x").to_wire()


def test_each_incident_has_an_id_of_its_own() -> None:
    """presa-defined (spec-notes §1: -32603 says no more than an incident id,
    which the log record of its cause repeats): two faults never share an id, so a
    client's report leads to one traceback."""
    first, second = errors.InternalError.incident(), errors.InternalError.incident()
    assert isinstance(first.incident_id, str)
    assert first.incident_id != second.incident_id


@pytest.mark.parametrize("code", [True, 1.5, "E_WIDGETS"], ids=["bool", "float", "string"])
def test_an_error_whose_code_is_no_integer_is_not_well_formed(code: object) -> None:
    """Spec-mandated (schema $defs.Error: ``code`` is an integer): JSON ``true``, which
    Python counts as the integer 1, is no code either, so such an error is never sent
    as it is (the edge answers -32603 instead)."""
    error = errors.McpError("out of widgets")
    error.code = code  # type: ignore[misc,assignment]
    assert not error.is_well_formed()
    error.code = 7  # type: ignore[misc]
    assert error.is_well_formed()
