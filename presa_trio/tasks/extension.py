"""The Tasks extension (``io.modelcontextprotocol/tasks``) on the core's hook interface.

Usage::

    tasks = TasksExtension()
    server.add_extension(tasks)

    @tasks.tool(Policy.OPTIONAL, description="Sleeps, then answers")
    async def slow(ctx: RequestContext, arguments: dict) -> str: ...

What it adds to a :class:`~presa_trio.server.Server`, all through
:class:`~presa_trio.server.extensions.Extension`:

- ``capabilities.extensions["io.modelcontextprotocol/tasks"] = {}`` in
  ``server/discover`` (T-01), and no legacy ``capabilities.tasks`` (T-02);
- ``tasks/get``, ``tasks/update``, ``tasks/cancel`` and nothing else under
  ``tasks/``, so ``tasks/result`` and ``tasks/list`` are -32601 (T-15, T-16);
- ``Mcp-Name`` = ``params.taskId`` on those three (SEP-2663 §Streamable HTTP:
  Routing Headers; T-56), checked by the HTTP edge before any handler runs;
- a wrapper around ``tools/call`` that applies each tool's :class:`Policy`;
- a wrapper around ``subscriptions/listen`` for ``notifications.taskIds``.

The task policy is presa's registration API, not wire data: nothing on the
wire marks a tool as task-capable (SEP-2663 §Capability Negotiation; D-03).

Order of checks on ``tasks/*`` (tasks ref §4.5, presa's order; D-21): the
edge checks headers and ``_meta``, the dispatcher the method; then here,
-32021 for an undeclaring request, the params' shape (-32602), and the
lookup, where unknown, expired and other-scope ids are -32602 alike.

Spec: SEP-2663 §Capability Negotiation, §Task Polling, §Task Update Requests,
§Task Cancellation, §Task Status Notifications, §Protocol Errors.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attrs
import trio

from presa_trio.server import rounds
from presa_trio.server.context import RequestContext
from presa_trio.server.extensions import Extension, MethodHandler
from presa_trio.server.tools import invoke_tool, read_call_params
from presa_trio.tasks.model import JSONObject
from presa_trio.tasks.runner import Job, TaskRunner, WorkerContext
from presa_trio.wire.convert import to_wire
from presa_trio.wire.errors import InternalError, InvalidParams, MissingRequiredClientCapability
from presa_trio.wire.mrtr import InputRequired, parse_input_responses

if TYPE_CHECKING:
    from presa_trio.server.registry import Server, ToolHandler

log = logging.getLogger(__name__)

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

#: Longest accepted ``taskId``, in UTF-8 bytes; presa's ids are 32 (D-25).
MAX_TASK_ID_BYTES = 256


class Policy(enum.Enum):
    """How a tool's calls are served (tasks ref §3.2).

    ======== ======================== ===================
    policy   request declares Tasks   it does not
    ======== ======================== ===================
    SYNC     plain result             plain result
    OPTIONAL task                     plain result
    REQUIRED task                     -32021
    ======== ======================== ===================
    """

    SYNC = "sync"
    OPTIONAL = "optional"
    REQUIRED = "required"


#: A policy decided per call from the request context and the raw params.
PolicyFunction = Callable[[RequestContext, dict[str, Any]], Policy]


def anonymous_scope(ctx: RequestContext) -> str:
    """Every caller shares one access scope: presa has no authentication yet.

    With auth off, holding a task's id is the only check, which is why ids
    are unguessable (SEP-2663 §Security Implications; T-63).
    """
    return "anonymous"


def read_task_id(params: dict[str, Any]) -> str:
    """``params.taskId``: a non-empty string of at most 256 bytes, else -32602."""
    task_id = params.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise InvalidParams("A non-empty string taskId is required")
    if len(task_id.encode()) > MAX_TASK_ID_BYTES:
        raise InvalidParams(f"taskId is longer than {MAX_TASK_ID_BYTES} bytes")
    return task_id


def read_answers(params: dict[str, Any]) -> dict[str, JSONObject]:
    """``tasks/update`` ``inputResponses``: required; non-empty keys; object values.

    Only the shape is checked; a value is the tool's to validate, and one
    under a key that is not outstanding is never looked at (D-17; T-78).
    """
    if "inputResponses" not in params:
        raise InvalidParams("tasks/update requires an inputResponses object")
    answers = parse_input_responses(params)
    if not all(answers):
        raise InvalidParams("inputResponses keys must be non-empty")
    return answers


@attrs.define(eq=False)
class TasksExtension(Extension):
    """The extension object: register task tools on it, then add it to a server."""

    # Class-level hook data (no settings: the extension defines none, D-01).
    id = TASKS_EXTENSION
    name_params = MappingProxyType(
        {"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
    )

    runner: TaskRunner = attrs.field(factory=TaskRunner)
    # Which access scope a request acts in (SEP-2663 §Security Implications).
    scope_of: Callable[[RequestContext], str] = anonymous_scope
    # Tool name -> its policy; a tool not listed is SYNC.
    policies: dict[str, Policy | PolicyFunction] = attrs.field(factory=dict)
    _server: Server | None = None

    # --- registration -----------------------------------------------------------

    def attach(self, server: Server) -> None:
        self._server = server

    def set_policy(self, tool: str, policy: Policy | PolicyFunction) -> None:
        """Serve calls of ``tool`` according to ``policy`` (a value or a function)."""
        self.policies[tool] = policy

    def tool(
        self, policy: Policy | PolicyFunction, name: str | None = None, **options: Any
    ) -> Callable[[ToolHandler], ToolHandler]:
        """``@server.tool(...)`` plus :meth:`set_policy`, for a server this is added to."""
        if self._server is None:
            raise RuntimeError("add the extension to a server before registering tools on it")
        server = self._server

        def register(handler: ToolHandler) -> ToolHandler:
            tool_name = name or handler.__name__
            server.tool(tool_name, **options)(handler)
            self.set_policy(tool_name, policy)
            return handler

        return register

    def policy_for(self, ctx: RequestContext, name: str, params: dict[str, Any]) -> Policy:
        policy = self.policies.get(name, Policy.SYNC)
        return policy if isinstance(policy, Policy) else policy(ctx, params)

    # --- hooks ------------------------------------------------------------------

    def methods(self) -> Mapping[str, MethodHandler]:
        return {
            "tasks/get": self.get_task,
            "tasks/update": self.update_task,
            "tasks/cancel": self.cancel_task,
        }

    def wrap(self, method: str, handler: MethodHandler) -> MethodHandler:
        wrappers = {"tools/call": self.call_tool, "subscriptions/listen": self.listen}
        wrapper = wrappers.get(method)
        if wrapper is None:
            return handler

        async def wrapped(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
            return await wrapper(handler, ctx, params)

        return wrapped

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The runner's server-lifetime nursery and reaper, inside the server's."""
        await self.runner.run(task_status=task_status)

    def require_declared(self, ctx: RequestContext) -> None:
        """-32021 unless this very request declares the extension (T-03, T-07, T-59).

        Any JSON object under the key is a declaration; its settings are
        ignored, since the extension defines none (D-01). A legacy
        ``capabilities.tasks`` is not a declaration (SEP-2663 §Backward
        Compatibility).
        """
        if not ctx.capabilities.has_extension(TASKS_EXTENSION):
            raise MissingRequiredClientCapability.for_extension(TASKS_EXTENSION)

    # --- tools/call ---------------------------------------------------------------

    async def call_tool(
        self, call: MethodHandler, ctx: RequestContext, params: dict[str, Any]
    ) -> dict[str, Any]:
        """Answer with the tool's result, or with a task, as its policy says.

        A declaring request to a task tool gets a ``CreateTaskResult``: flat,
        ``resultType: "task"``, the ``working`` seed (SEP-2663 §Task Creation,
        §Polymorphic Results; T-13, T-21). Any multi round-trip rounds happen
        before, synchronously, and the worker sees their verified answers
        (T-25). A legacy ``params.task`` is never read (T-08).
        """
        name, arguments = read_call_params(params)
        policy = self.policy_for(ctx, name, params)
        declared = ctx.capabilities.has_extension(TASKS_EXTENSION)
        if policy is Policy.SYNC or (policy is Policy.OPTIONAL and not declared):
            return await call(ctx, params)
        self.require_declared(ctx)
        if name not in ctx.server.tools:
            raise InvalidParams(f"Unknown tool: {name}")
        rounds.open_round(ctx, params, rounds.binding_for("tools/call", name, arguments))
        self.runner.limits.check_input(arguments)
        task = await self.runner.start(self.scope_of(ctx), tool_job(name, arguments), ctx)
        return {**task.to_wire(), "resultType": "task"}

    # --- tasks/* ------------------------------------------------------------------

    async def get_task(self, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
        """``tasks/get``: the DetailedTask, ``resultType: "complete"`` (T-27–T-32)."""
        self.require_declared(ctx)
        task_id = read_task_id(params)
        return self.runner.get(self.scope_of(ctx), task_id).detailed()

    async def update_task(self, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
        """``tasks/update``: apply the answers, then an empty ack (T-40–T-45).

        presa chooses read-your-writes: the next ``tasks/get`` already shows
        the answered keys gone, though the SEP allows the ack to run ahead.
        """
        self.require_declared(ctx)
        task_id = read_task_id(params)
        answers = read_answers(params)
        self.runner.update(self.scope_of(ctx), task_id, answers)
        return {}

    async def cancel_task(self, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
        """``tasks/cancel``: ``cancelled`` at once (if not terminal), then an empty ack.

        Stronger than the SEP's eventual cancellation (T-46–T-49; D-20).
        """
        self.require_declared(ctx)
        task_id = read_task_id(params)
        self.runner.cancel(self.scope_of(ctx), task_id)
        return {}

    # --- subscriptions/listen -----------------------------------------------------

    async def listen(
        self, listen: MethodHandler, ctx: RequestContext, params: dict[str, Any]
    ) -> dict[str, Any]:
        """``notifications.taskIds`` needs the declaration and a list of strings.

        presa sends no ``notifications/tasks`` yet, so the acknowledgement
        lists no task ids: the core echoes only the filter keys it serves
        (SEP-2663 §Task Status Notifications; T-52, T-53; D-23).
        """
        wanted = params.get("notifications")
        if isinstance(wanted, dict) and "taskIds" in wanted:
            self.require_declared(ctx)
            task_ids = wanted["taskIds"]
            if not isinstance(task_ids, list) or not all(
                isinstance(task_id, str) and task_id for task_id in task_ids
            ):
                raise InvalidParams("notifications.taskIds must be a list of task ids")
        return await listen(ctx, params)


def tool_job(name: str, arguments: dict[str, Any]) -> Job:
    """The work of a task made from a ``tools/call``: the same call, detached.

    It runs the tool through :func:`~presa_trio.server.tools.invoke_tool`,
    as the synchronous path does, so both map outcomes alike: an ``isError``
    result is a result (``completed``), a raised error is an error
    (``failed``) (SEP-2663 §Task Execution Errors; T-61, T-62; D-14). A tool
    cannot ask for input by returning :class:`InputRequired` inside a task:
    that is a programming error, -32603; it must use :func:`~presa_trio.tasks.ask`.
    """

    async def job(ctx: WorkerContext) -> JSONObject:
        outcome = await invoke_tool(ctx.server, ctx, name, arguments)
        if isinstance(outcome, InputRequired):
            log.error("tool %s returned InputRequired inside a task; use tasks.ask", name)
            raise InternalError("Task worker returned a continuation")
        result: JSONObject = {**to_wire(outcome), "resultType": "complete"}
        return result

    return job
