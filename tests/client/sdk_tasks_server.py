"""A Tasks server built on the official Python SDK, answering as its Tasks branch does.

Run as ``python -m tests.client.sdk_tasks_server``: like
:mod:`tests.client.sdk_server` it binds a free loopback port, prints
``serving http://127.0.0.1:PORT/mcp`` on stderr and serves the SDK's
Streamable HTTP app with uvicorn.

The SDK (``mcp`` 2.3) has no Tasks extension of its own, so this one is
written on its public extension API (``mcp.server.extension``): every call
of a tool runs to its end inside ``tools/call``, which then answers with a
``CreateTaskResult`` already ``completed`` (or ``failed``) that carries no
``result`` (SEP-2663 §Task Creation: a ``CreateTaskResult`` never does);
``tasks/get`` answers the DetailedTask, with its ``result`` or ``error``
(SEP-2663 §Tasks). A client that reads the outcome from the creation
answer alone finds none.
"""

from __future__ import annotations

import datetime
import secrets
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolRequestParams, RequestParams
from pydantic import BaseModel

from tests.client.sdk_server import serve_on_loopback

TASKS = "io.modelcontextprotocol/tasks"


class TaskIdParams(RequestParams):
    task_id: str


class Tasks(Extension):
    """Each tool call becomes a task that has ended by the time it is announced."""

    identifier = TASKS

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}

    def methods(self) -> list[MethodBinding]:
        return [MethodBinding("tasks/get", TaskIdParams, self.get)]

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
        task: dict[str, Any] = {
            "taskId": secrets.token_urlsafe(24),
            "createdAt": now,
            "lastUpdatedAt": now,
            "ttlMs": None,
            "pollIntervalMs": 50,
        }
        outcome: dict[str, Any]
        try:
            result = await call_next(ctx)
        except MCPError as error:
            outcome = {"status": "failed", "error": {"code": error.code, "message": error.message}}
        else:
            shown = (
                result.model_dump(by_alias=True, exclude_none=True, mode="json")
                if isinstance(result, BaseModel)
                else result
            )
            outcome = {"status": "completed", "result": shown}
        self.tasks[task["taskId"]] = {**task, **outcome}
        return {"resultType": "task", **task, "status": outcome["status"]}

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        task = self.tasks.get(params.task_id)
        if task is None:
            raise MCPError(-32602, f"Unknown task: {params.task_id}")
        return dict(task)


server = MCPServer("sdk-tasks-fixture", version="2.3.0", extensions=[Tasks()])


@server.tool(description="Computes for a while, then names its label.")
def slow_compute(seconds: float, label: str) -> str:
    return f"computed {label} in {seconds}s"


@server.tool(description="A job that fails as a tool does: a result with isError.")
def failing_job() -> str:
    raise ToolError("the job failed on purpose")


@server.tool(description="A job that fails with a JSON-RPC error.")
def protocol_error_job() -> str:
    raise MCPError(-32010, "the job broke the protocol on purpose")


if __name__ == "__main__":
    serve_on_loopback(server.streamable_http_app(stateless_http=True))
