"""Assertions on what the server put on the wire: status, content type, JSON-RPC body."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from presa_trio.testing import McpClient, Response
from presa_trio.wire.envelope import RequestId
from presa_trio.wire.errors import INTERNAL_ERROR


def final_message(response: Response) -> dict[str, Any]:
    """The JSON-RPC response: the JSON body, or the last event of an SSE body."""
    if response.headers.get("content-type") == "text/event-stream":
        return response.events()[-1]
    message: dict[str, Any] = response.json()
    return message


def error_of(
    response: Response, status: int, code: int, request_id: RequestId | None = 1
) -> dict[str, Any]:
    """Assert a JSON-RPC error answered with ``status`` and ``code``; return ``error``."""
    assert response.status == status, response.body
    assert response.headers["content-type"] == "application/json"
    message = response.json()
    assert message["jsonrpc"] == "2.0"
    assert "result" not in message
    if request_id is None:  # unread: no id at all (spec-notes §52)
        assert "id" not in message, message
    else:
        assert message["id"] == request_id
    assert message["error"]["code"] == code
    assert isinstance(message["error"]["message"], str)
    error: dict[str, Any] = message["error"]
    return error


def result_of(response: Response, request_id: RequestId = 1) -> dict[str, Any]:
    """Assert a 200 answer carrying a result for ``request_id``; return ``result``."""
    assert response.status == 200, response.body
    message = final_message(response)
    assert "error" not in message, message
    assert message["jsonrpc"] == "2.0"
    assert message["id"] == request_id
    result: dict[str, Any] = message["result"]
    return result


def rejection_of(response: Response, status: int) -> None:
    """Assert a plain HTTP rejection: ``status`` and no JSON-RPC body."""
    assert response.status == status, response.body
    assert response.headers.get("content-type") != "application/json"


async def tools_by_name(client: McpClient) -> dict[str, dict[str, Any]]:
    """The server's ``tools/list``, each tool by its name."""
    tools = result_of(await client.call("tools/list"))["tools"]
    return {tool["name"]: tool for tool in tools}


async def assert_still_serving(client: McpClient) -> None:
    """The server answers a well-formed request after whatever came before."""
    result = result_of(await client.call("server/discover"))
    assert result["supportedVersions"] == ["2026-07-28"]


def incident_of(error: dict[str, Any], log_text: str) -> str:
    """Assert a generic -32603 whose ``data.incident`` the log repeats; return the id."""
    assert (error["code"], error["message"]) == (INTERNAL_ERROR, "Internal error")
    assert set(error["data"]) == {"incident"}
    incident: str = error["data"]["incident"]
    assert f"(incident {incident})" in log_text
    return incident


async def assert_handler_fault(
    client: McpClient,
    caplog: pytest.LogCaptureFixture,
    method: str,
    params: dict[str, Any],
    logged: str,
) -> None:
    """Assert ``method`` is answered a generic -32603 (HTTP 500) whose incident the
    log repeats beside ``logged``, and that the server serves on."""
    with caplog.at_level(logging.ERROR):
        response = await client.call(method, params)
    incident_of(error_of(response, 500, INTERNAL_ERROR), caplog.text)
    assert logged in caplog.text
    await assert_still_serving(client)


def without_incident(error: dict[str, Any]) -> dict[str, Any]:
    """``error`` without a -32603's ``data.incident`` (a fresh id each time)."""
    if error.get("code") != INTERNAL_ERROR or set(error.get("data", {})) != {"incident"}:
        return error
    return {key: value for key, value in error.items() if key != "data"}
