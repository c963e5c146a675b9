"""List results are one page, the same on every connection; a cursor presa never issued
is refused."""

from __future__ import annotations

from typing import Any

import pytest

from presa_trio.testing import McpClient, request
from presa_trio.wire.errors import INVALID_PARAMS
from tests.expect import error_of, result_of

LISTS = [
    ("tools/list", "tools"),
    ("prompts/list", "prompts"),
    ("resources/list", "resources"),
    ("resources/templates/list", "resourceTemplates"),
]


@pytest.mark.parametrize(("method", "key"), LISTS)
async def test_a_list_is_a_single_page_without_next_cursor(
    client: McpClient, method: str, key: str
) -> None:
    """presa-defined (spec-notes §14): presa never splits a list, so a result has no
    nextCursor, and an explicit null cursor means the first page."""
    result = result_of(await client.call(method, {"cursor": None}))
    assert isinstance(result[key], list)
    assert "nextCursor" not in result


@pytest.mark.parametrize(("method", "key"), LISTS)
async def test_a_cursor_the_server_never_issued_is_invalid_params(
    client: McpClient, method: str, key: str
) -> None:
    """Spec-mandated (server/utilities/pagination §Error Handling; E-17): an invalid
    cursor SHOULD be -32602, HTTP 400."""
    error_of(await client.call(method, {"cursor": "bm90LWlzc3VlZA"}), 400, INVALID_PARAMS)


@pytest.mark.parametrize(("method", "key"), LISTS)
async def test_an_empty_cursor_is_a_cursor_too(client: McpClient, method: str, key: str) -> None:
    """Spec-mandated (server/utilities/pagination §Implementation Guidelines: an empty
    string is a valid cursor, only ``null`` is none; §Error Handling; E-17): ``""``
    is a cursor presa never issued, so -32602, not the first page."""
    error_of(await client.call(method, {"cursor": ""}), 400, INVALID_PARAMS)


#: Requests a client may send between two lists on its connection.
OTHER_REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("tools/call", {"name": "test_trigger_tool_change"}),
    ("tools/call", {"name": "test_error_handling"}),
    ("prompts/get", {"name": "test_simple_prompt"}),
    ("resources/read", {"uri": "test://template/7/data"}),
    (
        "completion/complete",
        {
            "ref": {"type": "ref/prompt", "name": "test_simple_prompt"},
            "argument": {"name": "a", "value": ""},
        },
    ),
]


@pytest.mark.parametrize(("method", "key"), LISTS)
async def test_a_list_is_the_same_on_every_connection_whatever_came_before(
    client: McpClient, method: str, key: str
) -> None:
    """Spec-mandated (server/tools, server/prompts, server/resources §Capabilities: the
    set MUST NOT vary per-connection or as a side effect of other requests on the
    connection): two connections, one that declares every client capability and one
    that declares none, get the same list, byte for byte, before and after each
    other request either of them sends."""
    first, second = ("127.0.0.1", 50001), ("127.0.0.2", 50002)

    async def listed(connection: tuple[str, int], capabilities: dict[str, object]) -> bytes:
        response = await client.post(request(method, capabilities=capabilities), client=connection)
        result_of(response)
        return response.body

    before = await listed(first, {"sampling": {}, "elicitation": {}, "roots": {}})
    for other, params in OTHER_REQUESTS:
        result_of(await client.post(request(other, params), client=first))
        assert await listed(first, {"sampling": {}, "elicitation": {}, "roots": {}}) == before
        assert await listed(second, {}) == before
