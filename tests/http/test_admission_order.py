"""The order of the admission ladder (spec-notes §10): the first failing rung answers.

One request is built with a fault at rung k and at every later rung that can
fail alongside it; the answer must be rung k's. A well-formed ``tools/call``
to the fixture's ``test_x_mcp_header`` is the starting point, since only a
tool with an ``x-mcp-header`` argument reaches rung 10. Faults are applied
from the highest rung down, so a lower rung's fault to the same part of the
request (the body, a header) is the one that stays.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from presa_trio.testing import McpClient, headers_for, request
from presa_trio.wire.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from presa_trio.wire.meta import META_PROTOCOL_VERSION
from tests.expect import assert_still_serving, error_of, rejection_of, result_of

GOOD = request("tools/call", {"name": "test_x_mcp_header", "arguments": {"region": "eu"}})

#: What each rung answers when it fails: an HTTP status, or (status, JSON-RPC code).
ANSWERS: dict[int, int | tuple[int, int]] = {
    1: 404,
    2: 421,
    3: 405,
    4: 415,
    5: 406,
    6: (400, PARSE_ERROR),
    7: (400, INVALID_REQUEST),
    8: (400, INVALID_PARAMS),
    9: (400, HEADER_MISMATCH),
    10: (400, HEADER_MISMATCH),
    11: (400, UNSUPPORTED_PROTOCOL_VERSION),
    12: (404, METHOD_NOT_FOUND),
    13: (400, INVALID_PARAMS),
}


def faults_from(rung: int) -> list[int]:
    """Rung ``rung`` and every later one; rung 10 needs ``tools/call``, which 12 replaces."""
    return [r for r in range(rung, 14) if not (rung == 10 and r == 12)]


def probe(rungs: list[int]) -> tuple[dict[str, Any], bytes, dict[str, str]]:
    """The request with a fault at each of ``rungs``: options, body and headers."""
    message = copy.deepcopy(GOOD)
    params = message["params"]
    options: dict[str, Any] = {}
    body: bytes | None = None
    for rung in sorted(rungs, reverse=True):
        if rung == 13:
            params["inputResponses"] = 5
        elif rung == 12:
            message["method"] = "tools/nothing"
        elif rung == 11:
            params["_meta"][META_PROTOCOL_VERSION] = "v999.0.0"
        elif rung == 8:
            del params["_meta"]
        elif rung == 7:
            message["method"] = 5
        elif rung == 6:
            body = b"not json"
    headers = headers_for(message if isinstance(message["method"], str) else GOOD)
    headers["mcp-param-region"] = "eu"
    if 11 in rungs:
        headers["mcp-protocol-version"] = "v999.0.0"
    for rung in sorted(rungs, reverse=True):
        if rung == 10:
            headers["mcp-param-region"] = "us"
        elif rung == 9:
            headers["mcp-method"] = "wrong/method"
        elif rung == 5:
            headers["accept"] = "text/html"
        elif rung == 4:
            headers["content-type"] = "text/plain"
        elif rung == 3:
            options["method"] = "GET"
        elif rung == 2:
            headers["host"] = "evil.example.com"
        elif rung == 1:
            options["path"] = "/other"
    return options, body if body is not None else json.dumps(message).encode(), headers


async def test_the_unfaulted_probe_is_served(client: McpClient) -> None:
    """Spec-mandated (streamable-http §Sending Messages item 6; H-30): the starting request
    passes every rung."""
    options, body, headers = probe([])
    result = result_of(await client.post(body, headers, **options))
    assert result["content"] == [{"type": "text", "text": "region=eu"}]


@pytest.mark.parametrize("rung", range(1, 14), ids=lambda rung: f"rung-{rung}")
async def test_the_first_failing_rung_answers(client: McpClient, rung: int) -> None:
    """Spec-mandated (spec-notes §10: rungs in order, the first failure answers; H-31):
    a request failing at ``rung`` and at every later rung it can fail at alongside
    gets ``rung``'s answer: the plain HTTP status for rungs 1-5, else the JSON-RPC
    code with its status, no ``id`` only when the body could not be read."""
    options, body, headers = probe(faults_from(rung))
    response = await client.post(body, headers, **options)
    expected = ANSWERS[rung]
    if isinstance(expected, int):
        rejection_of(response, expected)
    else:
        status, code = expected
        error_of(response, status, code, None if rung == 6 else 1)
    await assert_still_serving(client)
