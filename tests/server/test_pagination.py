"""List results are one page; a cursor presa never issued is refused."""

from __future__ import annotations

import pytest

from presa_trio.testing import McpClient
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
