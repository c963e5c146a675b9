"""The schema checks themselves: the published file, and shapes they must refuse and accept."""

from __future__ import annotations

from typing import Any

import pytest

from tests import wire_schema

TASK = {
    "taskId": "786512e2-9e0d-44bd-8f29-789f320fe840",
    "status": "working",
    "createdAt": "2025-11-25T10:30:00Z",
    "lastUpdatedAt": "2025-11-25T10:40:00Z",
    "ttlMs": 60000,
    "pollIntervalMs": 5000,
}
COMPLETED = {**TASK, "status": "completed", "result": {"content": [], "resultType": "complete"}}


def test_the_schema_here_is_the_published_file() -> None:
    """presa-defined (tests/wire_schema.py): the copy is the 2026-07-28 schema.json, unchanged."""
    assert wire_schema.core_digest() == wire_schema.CORE_SHA256


def test_the_checks_accept_the_seps_own_examples() -> None:
    """Spec-mandated (SEP-2663 §Task Creation, §Task Status Notifications: the
    examples): the Tasks types accept what the SEP shows."""
    created = {"resultType": "task", **TASK, "statusMessage": "The operation is now in progress."}
    assert wire_schema.result_problems("tools/call", created, tasks_declared=True) == []
    notification = {"jsonrpc": "2.0", "method": "notifications/tasks", "params": COMPLETED}
    assert wire_schema.notification_problems(notification) == []
    polled = {**COMPLETED, "resultType": "complete"}
    assert wire_schema.result_problems("tasks/get", polled) == []


def test_a_task_result_and_error_may_hold_any_json_value() -> None:
    """Spec-mandated (SEP-2663 §Task Status: ``CompletedTask.result`` and
    ``FailedTask.error`` are ``JSONObject``, whose values are schema.ts's
    ``JSONValue``, null and any number included; spec-notes §65): a tool's
    structured result or an error's ``data`` holding a fraction or a null is a
    valid task, in ``tasks/get`` and in ``notifications/tasks`` alike."""
    held = {"ratio": 0.5, "missing": None, "nested": [1.25, None, {"x": None}]}
    result = {"content": [], "structuredContent": held, "resultType": "complete"}
    completed = {**COMPLETED, "result": result}
    failed = {**TASK, "status": "failed", "error": {"code": -32602, "message": "x", "data": held}}
    for task in (completed, failed):
        assert wire_schema.result_problems("tasks/get", {**task, "resultType": "complete"}) == []
        notification = {"jsonrpc": "2.0", "method": "notifications/tasks", "params": task}
        assert wire_schema.notification_problems(notification) == []


@pytest.mark.parametrize(
    ("method", "result", "tasks_declared"),
    [
        (
            "tools/call",
            {"resultType": "complete", "content": [{"type": "text", "text": None}]},
            False,
        ),
        ("tools/call", {"resultType": "input_required"}, False),
        ("tools/list", {"resultType": "input_required", "requestState": "s"}, False),
        ("tools/call", {"resultType": "task", **TASK}, False),
        ("prompts/get", {"resultType": "task", **TASK}, True),
        ("tools/call", {"resultType": "task", **TASK, "ttlMs": 1.5}, True),
        (
            "tools/call",
            {"resultType": "task", **{k: v for k, v in TASK.items() if k != "ttlMs"}},
            True,
        ),
        ("tasks/get", {**TASK, "resultType": "task"}, True),
        ("tasks/get", {**COMPLETED, "resultType": "complete", "result": None}, True),
        ("tasks/cancel", {"resultType": "task"}, True),
        (
            "server/discover",
            {"resultType": "complete", "supportedVersions": [], "capabilities": {}},
            False,
        ),
        (
            "resources/list",
            {"resultType": "complete", "resources": [], "ttlMs": -1, "cacheScope": "public"},
            False,
        ),
    ],
)
def test_the_checks_refuse_a_result_the_schema_forbids(
    method: str, result: dict[str, Any], tasks_declared: bool
) -> None:
    """presa-defined (tests/wire_schema.py): each check can fail."""
    assert wire_schema.result_problems(method, result, tasks_declared=tasks_declared) != []


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602}},
        {"jsonrpc": "2.0", "id": 1, "result": {"content": []}},
        {"jsonrpc": "2.0", "id": 1.5, "result": {"resultType": "complete"}},
    ],
)
def test_the_checks_refuse_an_envelope_the_schema_forbids(message: dict[str, Any]) -> None:
    """presa-defined (tests/wire_schema.py): each check can fail."""
    assert wire_schema.envelope_problems(message) != []


def test_the_checks_refuse_errors_and_notifications_the_schema_forbids() -> None:
    """presa-defined (tests/wire_schema.py): each check can fail."""
    unsupported = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "x"}}
    assert wire_schema.error_problems(unsupported) != []
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    assert wire_schema.notification_problems(progress) != []
    unresulted = {k: v for k, v in COMPLETED.items() if k != "result"}
    task = {"jsonrpc": "2.0", "method": "notifications/tasks", "params": unresulted}
    assert wire_schema.notification_problems(task) != []
    unknown = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert wire_schema.notification_problems(unknown) != []
