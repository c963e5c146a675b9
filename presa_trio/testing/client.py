"""The typed in-process client: tool results as objects, questions answered for you.

:func:`open_client` serves a :class:`~presa_trio.server.Server` in-process
(as :func:`~presa_trio.testing.connect` does) and hands back a
:class:`Client`. Its :meth:`Client.call_tool` returns a :class:`ToolResult`
and answers every input request the tool makes on the way, through one
:data:`Answerer`: a function of the request (sync or async), or a list of
scripted answers taken in order. Multi round-trip retries (mrtr) and task
questions (``tasks/update``) are then handled alike, with no retry written
by hand. :meth:`Client.start_task` makes a task of a task tool and returns a
:class:`TaskHandle` to wait for a status, answer, cancel or read its result.

Answers are built with :func:`accept`, :func:`decline`, :func:`sampled` and
:func:`roots`.

Spec: 2026-07-28 basic/patterns/mrtr; server/tools §Tool Result; SEP-2663
§Task Polling, §Task Update Requests, §Task Cancellation.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from presa_trio.server import Server
from presa_trio.testing.driver import (
    DEFAULT_CAPABILITIES,
    TASKS_CAPABILITIES,
    McpClient,
    connect,
)
from presa_trio.wire.models import JSONObject

#: Answers one input request: ``(key, request)`` in, the response out. The
#: request is its wire form: ``{"method": "elicitation/create", "params": …}``.
AnswerFunction = Callable[[str, JSONObject], JSONObject | Awaitable[JSONObject]]
#: A function, or scripted answers used in order.
Answerer = AnswerFunction | Iterable[JSONObject]
#: How long a task helper waits before it fails the test, in seconds.
TASK_WAIT = 10.0
TERMINAL = frozenset({"completed", "failed", "cancelled"})


def accept(content: JSONObject | None = None) -> JSONObject:
    """An accepted elicitation carrying ``content``."""
    return {"action": "accept", "content": dict(content or {})}


def decline() -> JSONObject:
    """A declined elicitation."""
    return {"action": "decline"}


def sampled(text: str, model: str = "test-model") -> JSONObject:
    """The client's model answering a sampling request with ``text``."""
    return {"role": "assistant", "model": model, "content": {"type": "text", "text": text}}


def roots(*uris: str) -> JSONObject:
    """The client's roots, by URI."""
    return {"roots": [{"uri": uri} for uri in uris]}


class NoAnswer(AssertionError):
    """The tool asked something the test gave no answer for."""


def answer_function(answerer: Answerer | None) -> AnswerFunction:
    """One function for every form of :data:`Answerer`."""
    if answerer is None:

        def unanswered(key: str, request: JSONObject) -> JSONObject:
            raise NoAnswer(f"the tool asked {key!r} ({request.get('method')}); pass answer=")

        return unanswered
    if callable(answerer):
        return answerer
    script = iter(list(answerer))

    def scripted(key: str, request: JSONObject) -> JSONObject:
        try:
            return next(script)
        except StopIteration:
            raise NoAnswer(f"the tool asked {key!r} after the scripted answers ran out") from None

    return scripted


async def answer_all(answer: AnswerFunction, requests: Mapping[str, JSONObject]) -> JSONObject:
    """Every request answered, by key, in the order the server listed them."""
    responses: JSONObject = {}
    for key, request in requests.items():
        given = answer(key, request)
        responses[key] = await given if inspect.isawaitable(given) else given
    return responses


@attrs.frozen
class ToolResult:
    """A complete ``CallToolResult``, read."""

    content: list[JSONObject]
    structured: JSONObject | None
    is_error: bool
    # The result as received, ``_meta`` and all.
    raw: JSONObject

    @classmethod
    def read(cls, result: JSONObject) -> ToolResult:
        return cls(
            result["content"], result.get("structuredContent"), result.get("isError", False), result
        )

    @property
    def text(self) -> str:
        """The text of the text blocks, one per line."""
        return "\n".join(block["text"] for block in self.content if block.get("type") == "text")


@attrs.frozen
class TaskState:
    """A task as ``tasks/get`` shows it."""

    task_id: str
    status: str
    status_message: str | None
    input_requests: JSONObject
    result: ToolResult | None
    error: JSONObject | None

    @classmethod
    def read(cls, task: JSONObject) -> TaskState:
        result = task.get("result")
        return cls(
            task["taskId"],
            task["status"],
            task.get("statusMessage"),
            task.get("inputRequests") or {},
            None if result is None else ToolResult.read(result),
            task.get("error"),
        )


@attrs.define(eq=False)
class TaskHandle:
    """One task, driven: read it, wait for it, answer it, cancel it."""

    client: McpClient
    task_id: str
    answer: AnswerFunction

    async def state(self) -> TaskState:
        return TaskState.read(await self.client.get_task(self.task_id))

    async def wait_for(self, *statuses: str) -> TaskState:
        """The task once it is in one of ``statuses``; fail the test after 10 s.

        It watches the task on a ``subscriptions/listen`` stream and reads it
        once the stream is acknowledged, so no change is missed and nothing
        polls (SEP-2663 §Task Status Notifications).
        """
        watch = {"taskIds": [self.task_id]}
        with trio.fail_after(TASK_WAIT):
            async with self.client.listen(watch, capabilities=TASKS_CAPABILITIES) as stream:
                await stream.next_message()  # the acknowledgement
                state = await self.state()
                while state.status not in statuses:
                    message = await stream.next_message()
                    state = TaskState.read(message["params"])
        return state

    async def respond(self, responses: Mapping[str, JSONObject]) -> None:
        """``tasks/update`` with these answers."""
        await self.client.update_task(self.task_id, responses)

    async def cancel(self) -> TaskState:
        """``tasks/cancel``; the task as it is then (``cancelled`` unless it had ended)."""
        await self.client.cancel_task(self.task_id)
        return await self.state()

    async def result(self) -> ToolResult:
        """Answer each question the task asks, until it ends; its result.

        A task that ends ``failed`` or ``cancelled`` fails the test.
        """
        while (state := await self.wait_for("input_required", *TERMINAL)).status not in TERMINAL:
            await self.respond(await answer_all(self.answer, state.input_requests))
        if state.result is None:
            raise AssertionError(f"task {self.task_id} ended {state.status}: {state.error}")
        return state.result


@attrs.define(eq=False)
class Client:
    """A typed client of one in-process server; :attr:`raw` is the wire-level one."""

    raw: McpClient
    answer: AnswerFunction
    capabilities: Mapping[str, Any]

    async def list_tools(self) -> list[JSONObject]:
        reply = await self.raw.send_request("tools/list", {}, capabilities=self.capabilities)
        tools: list[JSONObject] = reply.result["tools"]
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        answer: Answerer | None = None,
    ) -> ToolResult:
        """Call a tool without the Tasks extension, answering each round it asks.

        Each ``input_required`` is answered by ``answer`` (else the client's
        own) and retried with its ``requestState``, as a client must.
        """
        answering = self.answer if answer is None else answer_function(answer)
        responses: JSONObject | None = None
        state: str | None = None
        while True:
            result = await self.raw.call_tool(
                name,
                arguments,
                input_responses=responses,
                request_state=state,
                capabilities=self.capabilities,
            )
            if result.get("resultType") != "input_required":
                return ToolResult.read(result)
            responses = await answer_all(answering, result.get("inputRequests") or {})
            state = result.get("requestState")

    async def start_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        answer: Answerer | None = None,
    ) -> TaskHandle:
        """Call a task tool with the Tasks extension declared; its task."""
        declared = {**self.capabilities, "extensions": TASKS_CAPABILITIES["extensions"]}
        created = await self.raw.call_tool(name, arguments, capabilities=declared)
        if created.get("resultType") != "task":
            raise AssertionError(f"{name} answered {created.get('resultType')}, not a task")
        answering = self.answer if answer is None else answer_function(answer)
        return TaskHandle(self.raw, created["taskId"], answering)


@asynccontextmanager
async def open_client(
    server: Server,
    *,
    answer: Answerer | None = None,
    capabilities: Mapping[str, Any] = DEFAULT_CAPABILITIES,
) -> AsyncIterator[Client]:
    """A :class:`Client` of ``server``, served in-process for the block.

    ``answer`` answers the input requests of every call that passes none;
    ``capabilities`` are what each request declares (default: elicitation,
    sampling and roots).
    """
    async with connect(server) as raw:
        yield Client(raw, answer_function(answer), capabilities)
