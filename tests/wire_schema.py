"""Check what presa sends against the official schema: every message, by its method.

``tests/schemas/mcp-2026-07-28.json`` is the 2026-07-28 ``schema.json``,
unchanged, as published in the specification repository
(modelcontextprotocol/modelcontextprotocol at b0f60ba5409db7a6582440a7b473cc0398890f15;
:data:`CORE_SHA256`). ``tests/schemas/tasks-sep-2663.json`` is the Tasks
extension's types, written from the TypeScript of SEP-2663, which
publishes no schema; its definitions refer to the core's, but for
``JSONObject`` (a task's ``result`` and ``error``), written from schema.ts,
whose values may be null or any number (spec-notes §65).

The schema alone is lax where a result is a union: ``CallToolResultResponse``
accepts ``InputRequiredResult``, which any object with a ``resultType``
matches. So a result is checked against the one definition its
``resultType`` names, for its method (:func:`result_problems`), an error
against the definition its code has (:func:`error_problems`), and a
notification against the one for its method (:func:`notification_problems`).
Each returns the problems found, one line each (``[]``: valid).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry
from referencing.jsonschema import DRAFT202012

SCHEMAS = Path(__file__).parent / "schemas"
CORE_FILE = SCHEMAS / "mcp-2026-07-28.json"
TASKS_FILE = SCHEMAS / "tasks-sep-2663.json"
#: The published file's digest: the copy here is that file, byte for byte.
CORE_SHA256 = "ef70b61f99b6d2e5e3b46863822eab08dff6a45bedc7a08914e0e5b133f40203"
CORE = "urn:mcp:2026-07-28"
TASKS = "urn:presa:tasks-sep-2663"

#: The result definition of each method's ``resultType: "complete"`` answer
#: (schema ``$defs.*ResultResponse``; SEP-2663 for ``tasks/*``).
COMPLETE_RESULTS: Mapping[str, str] = {
    "server/discover": f"{CORE}#/$defs/DiscoverResult",
    "tools/list": f"{CORE}#/$defs/ListToolsResult",
    "tools/call": f"{CORE}#/$defs/CallToolResult",
    "resources/list": f"{CORE}#/$defs/ListResourcesResult",
    "resources/templates/list": f"{CORE}#/$defs/ListResourceTemplatesResult",
    "resources/read": f"{CORE}#/$defs/ReadResourceResult",
    "prompts/list": f"{CORE}#/$defs/ListPromptsResult",
    "prompts/get": f"{CORE}#/$defs/GetPromptResult",
    "completion/complete": f"{CORE}#/$defs/CompleteResult",
    "subscriptions/listen": f"{CORE}#/$defs/SubscriptionsListenResult",
    "tasks/get": f"{TASKS}#/$defs/GetTaskResult",
    "tasks/update": f"{TASKS}#/$defs/AcknowledgementResult",
    "tasks/cancel": f"{TASKS}#/$defs/AcknowledgementResult",
}
#: The methods that may answer ``input_required`` (mrtr §Supported Requests;
#: schema: only their ``*ResultResponse`` admits ``InputRequiredResult``).
MAY_ASK = frozenset({"tools/call", "prompts/get", "resources/read"})
#: The methods that may answer ``task`` (SEP-2663 §Supported Methods).
MAY_BECOME_TASK = frozenset({"tools/call"})

#: ``InputRequiredResult``, and its prose: "At least one of ``inputRequests``
#: or ``requestState`` MUST be present" (schema ``$defs.InputRequiredResult``).
INPUT_REQUIRED: dict[str, Any] = {
    "allOf": [{"$ref": f"{CORE}#/$defs/InputRequiredResult"}],
    "anyOf": [{"required": ["inputRequests"]}, {"required": ["requestState"]}],
}

#: A JSON-RPC error object (schema ``$defs.Error``).
ERROR = f"{CORE}#/$defs/Error"
#: Errors whose code has a definition of its own (schema ``$defs.*Error``).
ERRORS_BY_CODE: Mapping[int, str] = {
    -32020: f"{CORE}#/$defs/HeaderMismatchError",
    -32021: f"{CORE}#/$defs/MissingRequiredClientCapabilityError",
    -32022: f"{CORE}#/$defs/UnsupportedProtocolVersionError",
}

#: The definition of each notification a server sends (schema
#: ``$defs.ServerNotification``; SEP-2663 for ``notifications/tasks``).
NOTIFICATIONS: Mapping[str, str] = {
    "notifications/cancelled": f"{CORE}#/$defs/CancelledNotification",
    "notifications/progress": f"{CORE}#/$defs/ProgressNotification",
    "notifications/message": f"{CORE}#/$defs/LoggingMessageNotification",
    "notifications/resources/updated": f"{CORE}#/$defs/ResourceUpdatedNotification",
    "notifications/resources/list_changed": f"{CORE}#/$defs/ResourceListChangedNotification",
    "notifications/tools/list_changed": f"{CORE}#/$defs/ToolListChangedNotification",
    "notifications/prompts/list_changed": f"{CORE}#/$defs/PromptListChangedNotification",
    "notifications/subscriptions/acknowledged": (
        f"{CORE}#/$defs/SubscriptionsAcknowledgedNotification"
    ),
    "notifications/tasks": f"{TASKS}#/$defs/TaskStatusNotification",
}


def load(path: Path) -> Any:
    return json.loads(path.read_text())


REGISTRY: Registry[Any] = Registry().with_resources(
    [
        (CORE, DRAFT202012.create_resource(load(CORE_FILE))),
        (TASKS, DRAFT202012.create_resource(load(TASKS_FILE))),
    ]
)


def problems(instance: Any, schema: Mapping[str, Any]) -> list[str]:
    """Where ``instance`` breaks ``schema``, one line each, deepest first."""
    validator = Draft202012Validator(dict(schema), registry=REGISTRY)
    found = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: -len(e.absolute_path)):
        # An anyOf/oneOf says only "not valid under any"; its branches say why.
        for cause in error.context or [error]:
            where = "/".join(str(p) for p in cause.absolute_path) or "(top)"
            found.append(f"{where}: {cause.message[:300]}")
    return found


def ref(uri: str) -> dict[str, Any]:
    return {"$ref": uri}


def envelope_problems(message: Mapping[str, Any]) -> list[str]:
    """The JSON-RPC envelope: a result response or an error response."""
    kind = "JSONRPCErrorResponse" if "error" in message else "JSONRPCResultResponse"
    found = problems(message, ref(f"{CORE}#/$defs/{kind}"))
    if "error" in message and "result" in message:
        found.append("(top): both 'result' and 'error'")
    return found


def result_problems(
    method: str, result: Mapping[str, Any], *, tasks_declared: bool = False
) -> list[str]:
    """``result`` against the definition its ``resultType`` names for ``method``.

    ``task`` is valid only from a method that may become a task, to a client
    that declared the extension (SEP-2663 §Capability Negotiation);
    ``input_required`` only from the three that may ask.
    """
    kind = result.get("resultType")
    if kind == "complete":
        return problems(result, ref(COMPLETE_RESULTS[method]))
    if kind == "input_required" and method in MAY_ASK:
        return problems(result, INPUT_REQUIRED)
    if kind == "task" and method in MAY_BECOME_TASK and tasks_declared:
        return problems(result, ref(f"{TASKS}#/$defs/CreateTaskResult"))
    return [f"resultType: {kind!r} is not an answer of {method}"]


def error_problems(error_message: Mapping[str, Any]) -> list[str]:
    """An error response against the definition of its code, if it has one."""
    code = error_message.get("error", {}).get("code")
    if code in ERRORS_BY_CODE:
        return problems(error_message, ref(ERRORS_BY_CODE[code]))
    return []


def notification_problems(message: Mapping[str, Any]) -> list[str]:
    """A server notification against the definition of its method."""
    method = message.get("method")
    if not isinstance(method, str) or method not in NOTIFICATIONS:
        return [f"method: {method!r} is no notification a 2026-07-28 server sends"]
    return problems(message, ref(NOTIFICATIONS[method]))


def core_digest() -> str:
    return hashlib.sha256(CORE_FILE.read_bytes()).hexdigest()
