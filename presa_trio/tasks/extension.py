"""The Tasks extension (``io.modelcontextprotocol/tasks``) on the core's hook interface.

Usage::

    tasks = TasksExtension()
    server.add_extension(tasks)

    @tasks.tool(Policy.OPTIONAL, description="Sleeps, then answers")
    async def slow(ctx: RequestContext, arguments: dict) -> str: ...

What it adds to a :class:`~presa_trio.server.Server`, all through
:class:`~presa_trio.server.Extension`:

- ``capabilities.extensions["io.modelcontextprotocol/tasks"] = {}`` in
  ``server/discover``, and no legacy ``capabilities.tasks`` (SEP-2663
  §Capability Negotiation);
- three rows of the method table, ``tasks/get``, ``tasks/update`` and
  ``tasks/cancel``, and nothing else under ``tasks/``, so ``tasks/result`` and
  ``tasks/list`` are -32601 (SEP-2663 §Backward Compatibility; spec-notes
  §34); each row says ``Mcp-Name`` = ``params.taskId`` (SEP-2663
  §Streamable HTTP: Routing Headers), which the HTTP edge checks before any
  handler runs;
- a wrapper around ``tools/call`` that applies each tool's :class:`Policy`;
- ``notifications.taskIds`` on ``subscriptions/listen``: every stored change
  of a subscribed task goes out as ``notifications/tasks`` on that stream;
- with :meth:`TasksExtension.enable_events` (SEP-2694, draft): ``tasks/stream``,
  whose ``Mcp-Name`` is checked when sent and may be left out
  (:data:`~presa_trio.wire.tasks.NAME_CHECKED_WHEN_SENT`).

The task policy is presa's registration API, not wire data: nothing on the
wire marks a tool as task-capable (SEP-2663 §Capability Negotiation; spec-notes §36).

Order of checks on ``tasks/*`` (presa's order, spec-notes §33): the
edge checks headers and ``_meta``, the dispatcher the method; then here,
-32021 for an undeclaring request, the params' shape (-32602), the lookup
(unknown, expired and other-scope ids are -32602 alike), then the scopes the
task's creating call needed (a 403 as for that ``tools/call``; spec-notes §49).

Spec: SEP-2663 §Capability Negotiation, §Task Polling, §Task Update Requests,
§Task Cancellation, §Task Status Notifications, §Protocol Errors.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

import attrs
import trio

from presa_trio.auth.principal import Principal, access_scope, holds, require_scopes
from presa_trio.server.context import RequestContext
from presa_trio.server.faults import report_fault
from presa_trio.server.refusals import name_of, refuse_uncalled
from presa_trio.server.registered import AnyToolHandler, RegisteredTool, ToolOutput
from presa_trio.server.registry import (
    Extension,
    Method,
    MethodHandler,
    Server,
    SubscriptionPart,
)
from presa_trio.server.results import describe
from presa_trio.server.signatures import SignatureError, is_async
from presa_trio.server.subscriptions import Change
from presa_trio.server.tools import (
    PreparedCall,
    map_outcome,
    prepare_call,
    read_call_params,
    run_handler,
)
from presa_trio.tasks.context import Job, WorkerContext, detached_meta, drop
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.model import Task
from presa_trio.tasks.params import read_answers, read_subscribed_ids, read_task_id
from presa_trio.tasks.runner import TaskRunner, capacity_error
from presa_trio.tasks.stores.base import (
    RelaysChanges,
    StoreDefect,
    StoreRefused,
    StoreUnavailable,
    Work,
)
from presa_trio.tasks.stores.record import from_json, to_json
from presa_trio.tasks.stream import stream_events
from presa_trio.wire.convert import to_wire
from presa_trio.wire.errors import (
    InternalError,
    MissingRequiredClientCapability,
    OverCapacity,
)
from presa_trio.wire.meta import ClientCapabilities, RequestMeta
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import InputRequired
from presa_trio.wire.tasks import (
    EVENT_STREAMS,
    NAME_CHECKED_WHEN_SENT,
    TASK_AUGMENTED,
    TASK_NAME_PARAMS,
    TASK_NOTIFICATION,
    TASKS_EXTENSION,
)

log = logging.getLogger(__name__)


class Policy(enum.Enum):
    """How a tool's calls are served (spec-notes §36).

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


def refuse_policy(tool: str, policy: object) -> None:
    """Refuse a policy that is neither a :class:`Policy` nor a plain function returning one.

    A string (``"optional"``) or an ``async def`` would be called on every
    ``tools/call`` of the tool and fail there, each call a -32603.
    """
    if isinstance(policy, Policy) or (callable(policy) and not is_async(policy)):
        return
    raise SignatureError(
        f"tool {tool!r}: the policy is {policy!r}; give Policy.SYNC, Policy.OPTIONAL, "
        "Policy.REQUIRED or a plain function (ctx, params) -> Policy"
    )


def caller_scope(ctx: RequestContext) -> str:
    """The caller's access scope: its verified principal, else ``anonymous``.

    With authorization on, each principal (issuer, subject, client) has its
    own scope: another caller's task is an unknown task (SEP-2663 §Security
    Implications, "Auth binding"). With it off every caller shares one scope,
    where holding a task's id is the only check, which is why ids are
    unguessable (spec-notes §37).
    """
    return access_scope(ctx.principal)


@contextmanager
def store_errors() -> Iterator[None]:
    """A request's answer to each class of store failure (the runner's failure policy).

    - unavailable: -32603, ``data.retryable: true`` (trying again later can
      succeed); the detail goes to the log only;
    - refused data: -32603, ``data.retryable: false``, saying what the
      store would not hold: sending the same again cannot succeed;
    - a defect: -32603 with an incident id, the traceback logged under it.
    """
    try:
        yield
    except StoreUnavailable as error:
        log.warning("task store unavailable: %s", error)
        raise InternalError("The task store is unavailable", {"retryable": True}) from None
    except StoreRefused as error:
        log.warning("task store refused a request's data: %s", error)
        raise InternalError(f"Could not store the request: {error}", {"retryable": False}) from None
    except StoreDefect:
        raise report_fault(log, "task store failed") from None


@attrs.define(eq=False, repr=False)
class TasksExtension(Extension):
    """The extension object: register task tools on it, then add it to a server."""

    # Class-level hook data (no settings: the extension defines none, spec-notes §16).
    id = TASKS_EXTENSION

    runner: TaskRunner = attrs.field(factory=TaskRunner)
    # Which access scope a request acts in (SEP-2663 §Security Implications).
    scope_of: Callable[[RequestContext], str] = caller_scope
    # Tool name -> its policy; a tool not listed is SYNC.
    policies: dict[str, Policy | PolicyFunction] = attrs.field(factory=dict)
    # Tools declared safe to run again after their process stopped.
    rerunnable: set[str] = attrs.field(factory=set)
    # Task event streams (SEP-2694, a draft) once :meth:`enable_events` ran; else off.
    events: TaskEventLog | None = attrs.field(default=None, init=False)
    settings: Mapping[str, Any] = attrs.field(factory=dict, init=False)
    _server: Server | None = None

    # --- registration -----------------------------------------------------------

    def attach(self, server: Server) -> None:
        self._server = server
        self.runner.on_change = self.publish
        self.runner.revive = self.revive

    def enable_events(self, events: TaskEventLog) -> None:
        """Serve ``tasks/stream``, advertise ``eventStreams`` (SEP-2694); before serving.

        Once served, ``server/discover`` would advertise ``eventStreams`` and the
        method table, built already, would answer ``tasks/stream`` -32601: refused.
        """
        if self._server is not None and self._server.served:
            raise RuntimeError("enable task event streams before the server is served")
        self.events = self.runner.events = events
        self.settings = {EVENT_STREAMS: {}}

    def publish(self, scope: str, task: Task) -> None:
        """Offer a stored change to the listen streams (they pick by scope and id).

        The notification is built only while some stream listens: most
        changes (a status message, a write nobody watches) reach no one.
        """
        if self._server is not None and self._server.changes.listening:
            change = Change(TASK_NOTIFICATION, task.detailed(), about=(scope, task.task_id))
            self._server.changes.publish(change)

    def set_policy(
        self, tool: str, policy: Policy | PolicyFunction, *, rerun: bool = False
    ) -> None:
        """Serve calls of ``tool`` according to ``policy`` (a value or a function).

        ``rerun=True`` declares that the tool may run again from the start
        if the process running its task stops: it has no side effect that a
        second run would repeat. Such a task is recovered by the next
        process; any other is written ``failed``.
        """
        refuse_policy(tool, policy)
        self.policies[tool] = policy
        if rerun:
            self.rerunnable.add(tool)
        else:
            self.rerunnable.discard(tool)

    def tool(
        self,
        policy: Policy | PolicyFunction,
        name: str | None = None,
        *,
        rerun: bool = False,
        **options: Any,
    ) -> Callable[[AnyToolHandler], AnyToolHandler]:
        """``@server.tool(...)`` plus :meth:`set_policy`, for a server this is added to.

        The handler is returned unchanged, typed as it was.
        """
        if not isinstance(policy, Policy) and is_async(
            policy
        ):  # ``@tasks.tool``: the handler came where the policy belongs
            refuse_uncalled("tool", policy, "@tasks.tool(Policy.…)")
        if self._server is None:
            raise RuntimeError("add the extension to a server before registering tools on it")
        server = self._server

        def register(handler: AnyToolHandler) -> AnyToolHandler:
            tool_name = name_of(handler, "a tool") if name is None else name
            refuse_policy(tool_name, policy)
            server.tool(tool_name, **options)(handler)
            self.set_policy(tool_name, policy, rerun=rerun)
            return handler

        return register

    def policy_for(self, ctx: RequestContext, name: str, params: dict[str, Any]) -> Policy:
        """The tool's policy for this call; a policy function's answer that is no
        :class:`Policy` is its bug, -32603, never a call served as a task."""
        policy = self.policies.get(name, Policy.SYNC)
        if isinstance(policy, Policy):
            return policy
        decided = policy(ctx, params)
        if not isinstance(decided, Policy):
            raise report_fault(
                log,
                "the policy function of tool %s returned %s, not a Policy",
                name,
                describe(decided),
            )
        return decided

    # --- hooks ------------------------------------------------------------------

    def methods(self) -> Iterable[Method]:
        handlers: dict[str, MethodHandler] = {
            "tasks/get": self.get_task,
            "tasks/update": self.update_task,
            "tasks/cancel": self.cancel_task,
        }
        if self.events is not None:
            handlers["tasks/stream"] = self.stream_task
        return [
            Method(
                name,
                handler,
                name_param=TASK_NAME_PARAMS[name],
                name_required=name not in NAME_CHECKED_WHEN_SENT,
            )
            for name, handler in handlers.items()
        ]

    def wrap(self, method: str, handler: MethodHandler) -> MethodHandler:
        if method not in TASK_AUGMENTED:
            return handler

        async def wrapped(
            server: Server, ctx: RequestContext, params: dict[str, Any]
        ) -> dict[str, Any]:
            return await self.call_tool(handler, server, ctx, params)

        return wrapped

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The runner's server-lifetime nursery and reaper, inside the server's.

        A store many processes share (PostgreSQL) carries the server's own change
        notifications between them too, in the runner's nursery: a listen stream
        in any process hears what the code announces in another, whoever made the
        runner (the command line's ``--store``, or ``TaskRunner(store)`` in code).
        """
        runner = self.runner
        if self._server is not None and isinstance(runner.store, RelaysChanges):
            runner.relay = partial(runner.store.relay_changes, self._server.changes, runner.owner)
        await runner.run(task_status=task_status)

    async def unready(self) -> str | None:
        return await self.runner.unready()

    def require_declared(self, ctx: RequestContext) -> None:
        """-32021 unless this very request declares the extension.

        Spec: SEP-2663 §Capability Negotiation. Any JSON object under the key
        is a declaration; its settings are ignored, since the extension
        defines none (spec-notes §16). A legacy ``capabilities.tasks`` is not
        a declaration (SEP-2663 §Backward Compatibility).
        """
        if not ctx.capabilities.has_extension(TASKS_EXTENSION):
            raise MissingRequiredClientCapability.for_extension(TASKS_EXTENSION)

    # --- tools/call ---------------------------------------------------------------

    async def call_tool(
        self, call: MethodHandler, server: Server, ctx: RequestContext, params: dict[str, Any]
    ) -> dict[str, Any]:
        """Answer with the tool's result, or with a task, as its policy says.

        A declaring request to a task tool gets a ``CreateTaskResult``: flat,
        ``resultType: "task"``, the ``working`` seed (SEP-2663 §Task Creation,
        §Polymorphic Results). Any multi round-trip rounds happen before,
        synchronously, and the worker sees their verified answers. A legacy
        ``params.task`` is never read (SEP-2663 §Backward Compatibility).

        Before any task exists, the call is prepared as a plain one
        (:func:`~presa_trio.server.tools.prepare_call`): an unknown tool is
        -32602, and arguments that break the tool's ``inputSchema`` get the
        same ``isError`` result as a plain call, with no task created.

        At a full task limit an OPTIONAL tool's call runs as a plain call;
        a REQUIRED tool's is :class:`~presa_trio.wire.errors.OverCapacity`.
        """
        name, _ = read_call_params(params)
        policy = self.policy_for(ctx, name, params)
        declared = ctx.capabilities.has_extension(TASKS_EXTENSION)
        if policy is Policy.SYNC or (policy is Policy.OPTIONAL and not declared):
            return await call(server, ctx, params)
        self.require_declared(ctx)
        prepared = prepare_call(server, ctx, params)
        if not isinstance(prepared, PreparedCall):
            result: dict[str, Any] = to_wire(prepared)
            return result
        registered, arguments = prepared.registered, prepared.arguments
        limits = self.runner.limits
        # The task keeps its input whole: the arguments, and the multi round-trip
        # answers and state it starts with, unasked answers included.
        if limits.input_too_large(arguments, ctx.input_responses, ctx.state):
            message = f"Task input is larger than max_input_bytes ({limits.max_input_bytes})"
            raise capacity_error("max_input_bytes", retryable=False, message=message)
        # The registry's name and the shared declaration, not this request's
        # decoded copies: the work is kept as long as the task.
        shared = detached_meta(ctx.meta)
        work = Work(
            tool=registered.tool.name,
            arguments=arguments,
            protocol_version=shared.protocol_version,
            capabilities=shared.capabilities.raw,
            input_responses=ctx.input_responses,
            state=ctx.state,
            rerun=name in self.rerunnable,
            principal=to_json(ctx.principal),
        )
        job = ToolJob(registered, arguments)
        try:
            with store_errors():
                task = await self.runner.start(self.scope_of(ctx), job, ctx, work)
        except OverCapacity as full:  # the server decides (spec-notes §31)
            if policy is not Policy.OPTIONAL:
                raise
            log.info("%s: no task (%s), answered as a plain call", name, full.limit)
            return await call(server, ctx, params)
        return {**task.to_wire(), "resultType": "task"}

    def revive(self, work: Work) -> tuple[Job, RequestContext] | None:
        """A stored ``tools/call`` as a job again, with its creating request rebuilt.

        The request is what the work description kept of it (version,
        capabilities, verified answers, state); its stream is long gone.
        None (the task is failed as interrupted) unless the tool is
        registered here and declared re-runnable here too: its code, as
        this process has it, is what would run again.
        """
        registered = None if self._server is None else self._server.tools.get(work.tool)
        if self._server is None or registered is None or work.tool not in self.rerunnable:
            return None
        meta = RequestMeta(work.protocol_version, ClientCapabilities(work.capabilities))
        creator = RequestContext(
            request_id=0,
            method="tools/call",
            meta=meta,
            server=self._server,
            send=drop,
            input_responses=work.input_responses,
            state=work.state,
            principal=from_json(work.principal, Principal),
        )
        return ToolJob(registered, work.arguments), creator

    # --- tasks/* ------------------------------------------------------------------

    async def get_task(
        self, server: Server, ctx: RequestContext, params: dict[str, Any]
    ) -> dict[str, Any]:
        """``tasks/get``: the DetailedTask, ``resultType: "complete"`` (SEP-2663 §Task Polling)."""
        self.require_declared(ctx)
        return (await self.scoped_task(ctx, self.scope_of(ctx), read_task_id(params))).detailed()

    async def scoped_task(self, ctx: RequestContext, scope: str, task_id: str) -> Task:
        """The caller's task, if its token holds the scopes the task needs (never change)."""
        with store_errors():
            task = await self.runner.get(scope, task_id)
        require_scopes(ctx.principal, ctx.access, ctx.method, task.required_scopes)
        return task

    async def update_task(
        self, server: Server, ctx: RequestContext, params: dict[str, Any]
    ) -> dict[str, Any]:
        """``tasks/update``: check and apply the answers, then an empty ack.

        Spec: SEP-2663 §Task Update Requests. An answer to an outstanding key
        must be a valid result for the kind of request issued under it (an
        ``ElicitResult`` for an elicitation, …); if one is not, the whole
        update is -32602, nothing is recorded, and every key stays
        outstanding, so the client can correct it, as on the plain multi
        round-trip path (basic/patterns/mrtr §Error Handling). The check is
        part of the write (:meth:`TaskRunner.update`): it reads the
        outstanding requests from the very task the compare-and-set replaces,
        so the task is read once. Answers to keys
        that are not outstanding are ignored, unread (spec-notes §29).

        presa chooses read-your-writes: the next ``tasks/get`` already shows
        the answered keys gone, though the SEP allows the ack to run ahead.
        """
        self.require_declared(ctx)
        task_id = read_task_id(params)
        answers = read_answers(params)
        scope = self.scope_of(ctx)
        if ctx.principal is not None:
            await self.scoped_task(ctx, scope, task_id)
        with store_errors():
            await self.runner.update(scope, task_id, answers)
        return {}

    async def cancel_task(
        self, server: Server, ctx: RequestContext, params: dict[str, Any]
    ) -> dict[str, Any]:
        """``tasks/cancel``: ``cancelled`` at once (if not terminal), then an empty ack.

        Stronger than the SEP's eventual cancellation (SEP-2663 §Task Cancellation; spec-notes §28).
        """
        self.require_declared(ctx)
        task_id = read_task_id(params)
        scope = self.scope_of(ctx)
        if ctx.principal is not None:
            await self.scoped_task(ctx, scope, task_id)
        with store_errors():
            await self.runner.cancel(scope, task_id)
        return {}

    async def stream_task(
        self, server: Server, ctx: RequestContext, params: dict[str, Any]
    ) -> dict[str, Any]:
        """``tasks/stream`` (SEP-2694): :func:`~presa_trio.tasks.stream.stream_events`."""
        self.require_declared(ctx)
        with store_errors():
            return await stream_events(self, server.changes, ctx, read_task_id(params), params)

    # --- subscriptions/listen ----------------------------------------------------

    async def subscription(
        self, ctx: RequestContext, wanted: Mapping[str, Any]
    ) -> SubscriptionPart | None:
        """``notifications.taskIds``: the caller's live tasks, then their changes.

        Asking needs the declaration (-32021) and a list of at most 100 task
        ids (-32602). Unknown, expired and other-scope ids are dropped
        silently — indistinguishable, as everywhere — as are those whose
        scopes the token lacks; the acknowledgement
        echoes the ids kept, if any. Each later stored change of a kept task
        arrives as ``notifications/tasks`` carrying the DetailedTask that
        ``tasks/get`` would return at that moment (SEP-2663 §Task Status
        Notifications).
        """
        if "taskIds" not in wanted:
            return None
        self.require_declared(ctx)
        scope = self.scope_of(ctx)
        with store_errors():
            kept = [
                t
                for t in dict.fromkeys(read_subscribed_ids(wanted))
                if holds(ctx.principal, await self.runner.scopes_of(scope, t))
            ]
        topics = {(scope, task_id) for task_id in kept}
        return SubscriptionPart(
            honoured={"taskIds": kept} if kept else {},
            wants=lambda change: change.method == TASK_NOTIFICATION and change.about in topics,
        )


# No weak reference slot: a parked task holds one, and nothing refers to it weakly.
@attrs.frozen(weakref_slot=False)
class ToolJob:
    """The work of a task made from a ``tools/call``: the same call, detached.

    It runs the handler and maps its outcome with the plain path's own
    functions, :func:`~presa_trio.server.tools.run_handler` and
    :func:`~presa_trio.server.tools.map_outcome`, so both paths map alike:
    an ``isError`` result is a result (``completed``), a raised error is an
    error (``failed``) (SEP-2663 §Task Execution Errors;
    spec-notes §25). A tool cannot ask for input by returning
    :class:`InputRequired` inside a task: that is a programming error,
    -32603; it must use ``ctx.ask``.

    The call's nursery is the task's own, opened by
    :meth:`~presa_trio.tasks.supervisor.Supervisor._supervise`, so the plain
    path's nursery wrapper (:func:`~presa_trio.server.tools.run_call`) would
    have nothing to do.
    """

    registered: RegisteredTool
    arguments: dict[str, Any]

    async def __call__(self, ctx: WorkerContext) -> JSONObject:
        return self.result_of(await run_handler(self.registered, ctx, self.arguments))

    def result_of(self, output: ToolOutput) -> JSONObject:
        """The task's result: the handler's outcome as the plain path maps it."""
        outcome = map_outcome(self.registered, output)
        if isinstance(outcome, InputRequired):
            name = self.registered.tool.name
            log.error("tool %s returned InputRequired inside a task; use ctx.ask", name)
            raise InternalError("Task worker returned a continuation")
        result: JSONObject = {**to_wire(outcome), "resultType": "complete"}
        return result
