"""One command's run: its connection, console and task follower, and what every command shares.

:class:`Run` is what each command (:mod:`.commands`, :mod:`.describe`,
:mod:`.listen`, :mod:`.complete`, :mod:`.raw`) is given: the parsed
options, the :class:`~presa_trio.client.connection.Connection`, the
:class:`~presa_trio.client.output.Console` and the
:class:`~presa_trio.client.follow.TaskFollower`. It answers multi
round-trip requests round after round, and prints how a task ended.

A tool, prompt or resource template named on the command line is looked
up in the server's list before anything is sent for it (:func:`find_tool`,
:func:`find_prompt`, :func:`find_template`): its schema types the
arguments, and a name the list lacks is a usage error (exit 2) naming the
ones it has, for all three alike.

Spec: basic/patterns/mrtr §Client Behavior; SEP-2663 §Task Status;
server/tools §Listing Tools; server/prompts §Listing Prompts;
server/resources §Resource Templates.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import attrs

from presa_trio.client.answers import Answerer, input_requests
from presa_trio.client.connection import Connection
from presa_trio.client.errors import (
    ProtocolFailure,
    UsageProblem,
)
from presa_trio.client.events import status_of
from presa_trio.client.follow import TaskFollower, ended_status
from presa_trio.client.output import Console, tool_result_text
from presa_trio.client.signin import SignIn
from presa_trio.client.tool_headers import usable_tools
from presa_trio.client.transport import object_at
from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import Status

#: Multi round-trip rounds a request may take before the client gives up.
MAX_ROUNDS = 16
#: The final kinds of result this client knows: the core's, and the Tasks extension's,
#: which it declares on every request (basic/index §ResultType; SEP-2663 §Polymorphic
#: Results). ``input_required`` is a round, not a final result.
KNOWN_RESULT_TYPES = ("complete", "task")
#: Names an error about an unknown tool or prompt lists.
SHOWN_NAMES = 12


@attrs.define(eq=False)
class Run:
    """One command's connection, answerer and console."""

    args: argparse.Namespace
    connection: Connection
    console: Console
    follower: TaskFollower
    #: The sign-in over HTTP without --token; None over stdio or with a token.
    signin: SignIn | None = None

    @property
    def answerer(self) -> Answerer:
        return self.follower.answerer

    async def rounds(self, method: str, params: JSONObject, **options: Any) -> JSONObject:
        """``method`` until its result is not ``input_required``, answering each round.

        Spec: basic/patterns/mrtr §Client Behavior — retry the same request
        with ``inputResponses`` and the ``requestState`` given, unchanged; a
        ``requestState`` that is no string cannot be echoed as one, and is the
        server's mistake (§InputRequiredResult: an opaque string), as is a
        round with neither requests nor state (§Server Requirements (Basic
        Workflow) 6) and a ``resultType`` this client does not know
        (basic/index §ResultType: it MUST be considered invalid).
        """
        where = self.connection.where
        sent = dict(params)
        for _ in range(MAX_ROUNDS):
            result = await self.connection.request(method, sent, **options)
            kind = result.get("resultType", "complete")
            if kind != "input_required":
                if kind not in KNOWN_RESULT_TYPES:
                    raise ProtocolFailure(
                        f"{where} answered {method} with resultType {kind!r}, "
                        "which this client does not know"
                    )
                return result
            requests = input_requests(result, where)
            state = result.get("requestState")
            if not (state is None or isinstance(state, str)):
                raise ProtocolFailure(f"{where} sent a requestState that is no string")
            if result.get("inputRequests") is None and state is None:
                raise ProtocolFailure(
                    f"{where} answered {method} input_required with neither inputRequests "
                    "nor requestState"
                )
            answers = {key: await self.answerer.answer(key, req) for key, req in requests.items()}
            sent = {**params, "inputResponses": answers}
            if state is not None:
                sent["requestState"] = state
        raise ProtocolFailure(f"{where} still asks for input after {MAX_ROUNDS} rounds")

    def finish(self, task: JSONObject) -> int:
        """A task that ended: its result printed, its exit status returned."""
        status = status_of(task)
        if status is Status.COMPLETED:
            result = object_at(task, "result")
            self.console.result(result, tool_result_text(result))
        elif status is Status.CANCELLED and self.console.json:
            self.console.result(task, "")
        return ended_status(task, self.console)


def named(
    items: Sequence[JSONObject], name: str, where: str, kind: str, key: str = "name"
) -> JSONObject:
    """The item whose ``key`` is ``name``, else a usage error listing those there are."""
    for item in items:
        if isinstance(item, dict) and item.get(key) == name:
            return item
    names = [str(item.get(key)) for item in items if isinstance(item, dict)]
    more = f", and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
    shown = ", ".join(names[:SHOWN_NAMES]) + more if names else "none"
    raise UsageProblem(f"{where} has no {kind} {name!r} (its {kind}s: {shown})")


async def find_tool(run: Run, name: str) -> JSONObject:
    """The tool ``tools/list`` lists as ``name`` (those with a usable ``x-mcp-header``)."""
    tools = usable_tools(await run.connection.list_all("tools/list", "tools"), run.console.note)
    return named(tools, name, run.connection.where, "tool")


async def find_prompt(run: Run, name: str) -> JSONObject:
    """The prompt ``prompts/list`` lists as ``name``."""
    prompts = await run.connection.list_all("prompts/list", "prompts")
    return named(prompts, name, run.connection.where, "prompt")


async def find_template(run: Run, uri_template: str) -> JSONObject:
    """The resource template ``resources/templates/list`` lists as ``uri_template``."""
    templates = await run.connection.list_all("resources/templates/list", "resourceTemplates")
    return named(templates, uri_template, run.connection.where, "template", "uriTemplate")
