"""The typed in-process client: every client call of the protocol, results as wire models.

:func:`open_client` serves a :class:`~presa_trio.server.Server` in-process
(as :func:`~presa_trio.testing.connect` does) and hands back a
:class:`Client` with one method per request a client sends:

- tools: :meth:`Client.list_tools`, :meth:`Client.call_tool` (a
  :class:`~presa_trio.testing.results.ToolResult`, with the log messages
  the tool sent);
- resources: :meth:`Client.list_resources`,
  :meth:`Client.list_resource_templates`, :meth:`Client.read_resource`
  (a concrete resource or a template's match), and subscriptions through
  :meth:`Client.listen` (``resource_subscriptions=[uri]``, list changes,
  tasks);
- prompts: :meth:`Client.list_prompts`, :meth:`Client.get_prompt`;
  completion: :meth:`Client.complete`;
- tasks: :meth:`Client.start_task`, then the
  :class:`~presa_trio.testing.tasks.TaskHandle` to wait, answer, cancel and
  stream;
- anything else: :meth:`Client.send_request`, the raw result.

Results are the wire's own attrs models (:mod:`presa_trio.wire.models`),
read with :func:`~presa_trio.wire.convert.from_wire`. Every request carries
the client's capabilities and, unless ``log_level=None``, asks for log
messages at ``debug`` and up. Every input request a tool, resource or
prompt makes on the way is answered through one
:data:`~presa_trio.testing.answers.Answerer`, and the request retried, as
multi round-trip requests ask (:func:`~presa_trio.testing.answers.send_answering`).
presa's lists are always one page, so the list calls send no cursor.

Spec: 2026-07-28 server/tools, server/resources, server/prompts,
server/utilities/completion, server/utilities/logging,
basic/patterns/subscriptions, basic/patterns/mrtr; SEP-2663.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import attrs

from presa_trio.server import Server
from presa_trio.testing.answers import Answerer, AnswerFunction, answer_function, send_answering
from presa_trio.testing.driver import (
    DEFAULT_CAPABILITIES,
    TASKS_CAPABILITIES,
    McpClient,
    Reply,
    connect,
    meta,
)
from presa_trio.testing.results import ToolResult
from presa_trio.testing.streams import Listener, open_listener
from presa_trio.testing.tasks import TaskHandle
from presa_trio.wire.convert import from_wire
from presa_trio.wire.meta import META_LOG_LEVEL
from presa_trio.wire.models import (
    Completion,
    GetPromptResult,
    JSONObject,
    Prompt,
    Resource,
    ResourceContents,
    ResourceTemplate,
    Tool,
)


@attrs.define(eq=False)
class Client:
    """A typed client of one in-process server; :attr:`raw` is the wire-level one."""

    raw: McpClient
    answer: AnswerFunction
    capabilities: Mapping[str, Any]
    # The level asked for in each request's ``_meta``; ``None`` asks for no log messages.
    log_level: str | None = "debug"

    def meta(self, *, tasks: bool = False) -> JSONObject:
        """Each request's ``_meta``: version, capabilities (Tasks too if ``tasks``), log level."""
        capabilities = dict(self.capabilities)
        if tasks:  # beside the extensions the client declares already
            extensions = {**capabilities.get("extensions", {}), **TASKS_CAPABILITIES["extensions"]}
            capabilities["extensions"] = extensions
        level = {} if self.log_level is None else {META_LOG_LEVEL: self.log_level}
        return meta(capabilities, **level)

    async def send_request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        answer: Answerer | None = None,
    ) -> Reply:
        """Any request, with this client's ``_meta``, each ``input_required`` round answered.

        ``params`` may bring its own ``_meta`` (build one with
        :meth:`meta`). A JSON-RPC error raises
        :class:`~presa_trio.testing.RequestFailed`.
        """
        answering = self.answer if answer is None else answer_function(answer)
        full = {"_meta": self.meta(), **(params or {})}
        return await send_answering(self.raw, method, full, answering)

    async def list_tools(self) -> list[Tool]:
        """``tools/list``."""
        return from_wire((await self.send_request("tools/list")).result["tools"], list[Tool])

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        answer: Answerer | None = None,
    ) -> ToolResult:
        """Call a tool without the Tasks extension, answering each round it asks.

        Each ``input_required`` is answered by ``answer`` (else the client's
        own) and retried with its ``requestState``, as a client must. The
        result keeps the log messages the tool sent before it. A task tool
        called with the Tasks extension among the client's ``capabilities``
        answers a task: that fails the test, naming :meth:`start_task`.
        """
        params = {"name": name, "arguments": dict(arguments or {})}
        reply = await self.send_request("tools/call", params, answer=answer)
        if reply.result.get("resultType") == "task":
            raise AssertionError(
                f"{name} answered task {reply.result.get('taskId')}, the client's capabilities"
                " declaring the Tasks extension: call it with start_task"
            )
        return ToolResult.read(reply.result, reply.notifications)

    async def start_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        answer: Answerer | None = None,
    ) -> TaskHandle:
        """Call a task tool with the Tasks extension declared; its task.

        Spec: SEP-2663 §Task Creation — a call that declares the extension
        may be answered with a task (``resultType: "task"``).
        """
        params = {"name": name, "arguments": dict(arguments or {}), "_meta": self.meta(tasks=True)}
        created = (await self.raw.send_request("tools/call", params)).result
        if created.get("resultType") != "task":
            raise AssertionError(f"{name} answered {created.get('resultType')}, not a task")
        answering = self.answer if answer is None else answer_function(answer)
        return TaskHandle(self.raw, created["taskId"], answering)

    async def list_resources(self) -> list[Resource]:
        """``resources/list``: the concrete resources."""
        resources = (await self.send_request("resources/list")).result["resources"]
        return from_wire(resources, list[Resource])

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        """``resources/templates/list``: the URI templates."""
        templates = (await self.send_request("resources/templates/list")).result
        return from_wire(templates["resourceTemplates"], list[ResourceTemplate])

    async def read_resource(
        self, uri: str, *, answer: Answerer | None = None
    ) -> list[ResourceContents]:
        """``resources/read`` of a resource, or of a URI a template matches: its contents.

        An unknown URI raises :class:`~presa_trio.testing.RequestFailed`
        with -32602 (SEP-2164).
        """
        reply = await self.send_request("resources/read", {"uri": uri}, answer=answer)
        return from_wire(reply.result["contents"], list[ResourceContents])

    async def list_prompts(self) -> list[Prompt]:
        """``prompts/list``."""
        return from_wire((await self.send_request("prompts/list")).result["prompts"], list[Prompt])

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        answer: Answerer | None = None,
    ) -> GetPromptResult:
        """``prompts/get``: the prompt's messages for these arguments."""
        params = {"name": name, "arguments": dict(arguments or {})}
        reply = await self.send_request("prompts/get", params, answer=answer)
        return from_wire(reply.result, GetPromptResult)

    async def complete(
        self,
        kind: str,
        ref: str,
        argument: str,
        value: str,
        *,
        context: Mapping[str, str] | None = None,
    ) -> Completion:
        """``completion/complete``: values for ``argument`` of a prompt or a template.

        ``kind`` and ``ref`` as ``@server.completion`` takes them:
        ``("ref/prompt", name)`` or ``("ref/resource", uri_template)``;
        ``context`` the arguments already chosen.

        Spec: server/utilities/completion §Requesting Completions, §Reference Types.
        """
        key = "name" if kind == "ref/prompt" else "uri"
        params: JSONObject = {
            "ref": {"type": kind, key: ref},
            "argument": {"name": argument, "value": value},
        }
        if context is not None:
            params["context"] = {"arguments": dict(context)}
        reply = await self.send_request("completion/complete", params)
        return from_wire(reply.result["completion"], Completion)

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Iterable[str] = (),
        task_ids: Iterable[str] = (),
    ) -> AsyncIterator[Listener]:
        """Open ``subscriptions/listen`` for these changes; acknowledged when the block starts.

        ``resource_subscriptions`` subscribes to resources by URI
        (``notifications/resources/updated``); ``task_ids`` watches tasks
        (``notifications/tasks``, the Tasks extension declared). Leaving the
        block closes the stream.

        Spec: basic/patterns/subscriptions §Notification Filter; resources
        §Subscriptions; SEP-2663 §Task Status Notifications.
        """
        flags = {
            "toolsListChanged": tools_list_changed,
            "promptsListChanged": prompts_list_changed,
            "resourcesListChanged": resources_list_changed,
        }
        wanted: JSONObject = {key: True for key, on in flags.items() if on}
        if uris := list(resource_subscriptions):
            wanted["resourceSubscriptions"] = uris
        if ids := list(task_ids):
            wanted["taskIds"] = ids
        async with open_listener(self.raw, wanted, self.meta(tasks=bool(ids))) as listener:
            yield listener


@asynccontextmanager
async def open_client(
    server: Server,
    *,
    answer: Answerer | None = None,
    capabilities: Mapping[str, Any] = DEFAULT_CAPABILITIES,
    log_level: str | None = "debug",
) -> AsyncIterator[Client]:
    """A :class:`Client` of ``server``, served in-process for the block.

    ``answer`` answers the input requests of every call that passes none;
    ``capabilities`` are what each request declares (default: elicitation,
    sampling and roots); ``log_level`` the level of log messages each
    request asks for (``None``: none).

    Failure policy: the server runs in a nursery behind the block. An
    exception the block raises alone comes out as itself, so
    ``pytest.raises`` around this block matches a failed ``assert`` in it;
    a failure of the server ends the block and comes out as an
    ``ExceptionGroup`` (with the block's own, if both failed), never
    unwrapped (:mod:`presa_trio.testing.background`).
    """
    async with connect(server) as raw:
        yield Client(raw, answer_function(answer), capabilities, log_level)
