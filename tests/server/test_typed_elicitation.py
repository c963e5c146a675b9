"""``ctx.elicit`` on the wire: a form from a class, a typed answer, on both paths.

On a plain call the form goes out in an ``input_required`` round and the
retry's answer comes back as an instance; in a task it goes on the task
(``input_required``) and ``tasks/update`` answers it. A form the spec does
not allow fails the call as the server's bug, one line in the log.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
from trio.testing import wait_all_tasks_blocked

from presa_trio.server import Accepted, RequestContext, Server
from presa_trio.tasks import TASKS_EXTENSION, Policy, TasksExtension
from presa_trio.testing import McpClient, RequestFailed, connect
from presa_trio.wire.errors import INTERNAL_ERROR, INVALID_PARAMS
from presa_trio.wire.mrtr import Elicitation, InputRequired
from tests.expect import error_of

DECLARED: dict[str, Any] = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
UNDECLARED: dict[str, Any] = {"elicitation": {}}


@attrs.frozen
class Confirm:
    sure: bool
    reason: str | None = None


@dataclasses.dataclass
class When:
    day: datetime.date


@dataclasses.dataclass
class Meeting:
    at: datetime.time


NUMBERED_TITLE = {"type": "string", "title": 5}

CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {"sure": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["sure"],
}


def build() -> Server:
    server = Server("typed-elicitation", "1.0.0")
    tasks = TasksExtension()
    server.add_extension(tasks)

    @tasks.tool(Policy.OPTIONAL, needs=["elicitation"])
    async def delete(ctx: RequestContext, path: str) -> str:
        """Asks before deleting, then asks when."""
        answer = await ctx.elicit(f"Delete {path}?", Confirm)
        if not isinstance(answer, Accepted):
            return answer.action
        if not answer.data.sure:
            return f"kept: {answer.data.reason}"
        when = await ctx.elicit("When?", When)
        if when.action != "accept":
            return f"not now ({when.action})"
        return f"deleting {path} on {when.data.day.isoformat()}"

    @server.tool(needs=["elicitation"])
    async def raw(ctx: RequestContext) -> str:
        """Asks with a hand-written schema."""
        answer = await ctx.elicit(
            "Name?", {"type": "object", "properties": {"n": {"type": "string"}}}
        )
        return repr(answer.data)

    @server.tool(needs=["elicitation"])
    async def bad_title(ctx: RequestContext) -> str:
        """Asks with a hand-written form whose field has a title that is no string."""
        await ctx.elicit("Name?", {"type": "object", "properties": {"n": NUMBERED_TITLE}})
        return "unreachable"

    @server.tool(needs=["elicitation"])
    async def bad_request(ctx: RequestContext) -> InputRequired:
        """Asks, by hand, with a form that has no properties."""
        return InputRequired({"k": Elicitation("Name?", {"type": "object"})})

    @server.tool(needs=["elicitation"])
    async def bad_form(ctx: RequestContext) -> str:
        """Asks with a form the spec does not allow."""
        await ctx.elicit("When?", Meeting)
        return "unreachable"

    return server


@pytest.fixture
async def client() -> AsyncIterator[McpClient]:
    async with connect(build()) as opened:
        yield opened


def accept(content: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": content}


async def test_the_plain_path_asks_round_by_round_and_answers_instances(
    client: McpClient,
) -> None:
    """Spec-mandated (client/elicitation §Form Mode Elicitation Requests;
    basic/patterns/mrtr §InputRequests): each ``elicit`` is a form-mode
    ``elicitation/create`` with the class's schema, under the keys ``elicit-1``,
    ``elicit-2`` in order; answers given earlier are carried in ``requestState``."""
    first = await client.call_tool("delete", {"path": "a.txt"}, capabilities=UNDECLARED)
    assert first["resultType"] == "input_required"
    assert first["inputRequests"] == {
        "elicit-1": {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": "Delete a.txt?",
                "requestedSchema": CONFIRM_SCHEMA,
            },
        }
    }
    second = await client.call_tool(
        "delete",
        {"path": "a.txt"},
        input_responses={"elicit-1": accept({"sure": True})},
        capabilities=UNDECLARED,
    )
    asked = second["inputRequests"]["elicit-2"]["params"]["requestedSchema"]
    assert asked["properties"] == {"day": {"type": "string", "format": "date"}}
    done = await client.call_tool(
        "delete",
        {"path": "a.txt"},
        input_responses={"elicit-2": accept({"day": "2026-07-28"})},
        request_state=second["requestState"],
        capabilities=UNDECLARED,
    )
    assert done["content"] == [{"type": "text", "text": "deleting a.txt on 2026-07-28"}]


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ({"action": "decline"}, "decline"),
        ({"action": "cancel"}, "cancel"),
        (accept({"sure": False, "reason": "busy"}), "kept: busy"),
    ],
)
async def test_declined_cancelled_and_a_no_are_typed_outcomes(
    client: McpClient, answer: dict[str, Any], text: str
) -> None:
    """Spec-mandated (client/elicitation §Response Actions)."""
    done = await client.call_tool(
        "delete", {"path": "a"}, input_responses={"elicit-1": answer}, capabilities=UNDECLARED
    )
    assert done["content"] == [{"type": "text", "text": text}]


async def test_content_that_does_not_fit_the_form_is_invalid_params(client: McpClient) -> None:
    """Spec-mandated (basic/patterns/mrtr §Error Handling: information in
    ``inputResponses`` that cannot be parsed is a protocol error)."""
    params = {
        "name": "delete",
        "arguments": {"path": "a"},
        "inputResponses": {"elicit-1": accept({"sure": "yes"})},
    }
    response = await client.call("tools/call", params, capabilities=UNDECLARED)
    error = error_of(response, 400, INVALID_PARAMS)
    assert error["message"].startswith("inputResponses['elicit-1']: the content does not fit")


async def test_a_hand_written_schema_answers_the_content(client: McpClient) -> None:
    """presa-defined (docs/api.md, typed elicitation): with a dict schema, ``data``
    is the content as sent."""
    done = await client.call_tool(
        "raw", input_responses={"elicit-1": accept({"n": "Ada"})}, capabilities=UNDECLARED
    )
    assert done["content"] == [{"type": "text", "text": "{'n': 'Ada'}"}]


async def test_a_form_the_spec_does_not_allow_fails_the_call_with_one_log_line(
    client: McpClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Spec-mandated (client/elicitation §Requested Schema; server/tools §Error
    Handling: server errors are protocol errors): the form is the server's bug,
    -32603; the log names the form and the field in one line."""
    with caplog.at_level(logging.ERROR):
        response = await client.call("tools/call", {"name": "bad_form"}, capabilities=UNDECLARED)
    error_of(response, 500, INTERNAL_ERROR)
    assert (
        "elicitation form Meeting, field 'at': format 'time' is not one of email, uri, date, "
        "date-time" in caplog.text
    )


async def test_a_keyword_of_the_wrong_type_is_never_sent(
    client: McpClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Spec-mandated (schema.ts ``StringSchema.title``: a string; mrtr §Error
    Handling: server errors are protocol errors): a form that would not validate
    is the server's bug, -32603, and the log names the field."""
    with caplog.at_level(logging.ERROR):
        response = await client.call("tools/call", {"name": "bad_title"}, capabilities=UNDECLARED)
    error_of(response, 500, INTERNAL_ERROR)
    assert "elicitation form, field 'n': title is a string, not 5" in caplog.text


async def test_a_hand_built_request_outside_the_subset_is_never_sent(
    client: McpClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Spec-mandated (schema.ts ``ElicitRequestFormParams.requestedSchema``: its
    ``properties`` are required): ``Elicitation(message, schema)`` is held to the
    subset as ``ctx.elicit`` is; a form outside it is -32603, the log names it."""
    with caplog.at_level(logging.ERROR):
        response = await client.call("tools/call", {"name": "bad_request"}, capabilities=UNDECLARED)
    error_of(response, 500, INTERNAL_ERROR)
    assert "elicitation/create: a form needs its properties, an object" in caplog.text


async def test_in_a_task_the_form_waits_on_the_task_and_tasks_update_answers_it(
    client: McpClient,
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests): the task shows the form as
    an input request while ``input_required``; ``tasks/update`` answers each
    ``elicit`` in turn and the tool gets instances."""
    created = await client.call_tool("delete", {"path": "b.txt"}, capabilities=DECLARED)
    task_id = created["taskId"]
    await wait_all_tasks_blocked()
    waiting = await client.get_task(task_id)
    assert waiting["status"] == "input_required"
    request = waiting["inputRequests"]["elicit-1"]
    assert request["params"]["requestedSchema"] == CONFIRM_SCHEMA
    await client.update_task(task_id, {"elicit-1": accept({"sure": True})})
    await wait_all_tasks_blocked()
    assert list((await client.get_task(task_id))["inputRequests"]) == ["elicit-2"]
    await client.update_task(task_id, {"elicit-2": accept({"day": "2026-08-01"})})
    await wait_all_tasks_blocked()
    done = await client.get_task(task_id)
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "deleting b.txt on 2026-08-01"}]


@pytest.mark.parametrize("day", ["2026-13-45", "someday"])
async def test_in_a_task_a_date_the_form_cannot_read_is_refused_by_the_update(
    client: McpClient, day: str
) -> None:
    """Spec-mandated (basic/patterns/mrtr §Error Handling; client/elicitation §Form Mode
    Security; spec-notes §29, §63): a ``date`` field holding no date is -32602 from
    ``tasks/update``, as the plain path's retry is, and the key stays outstanding for a
    corrected answer; the task is never failed by it."""
    created = await client.call_tool("delete", {"path": "d"}, capabilities=DECLARED)
    task_id = created["taskId"]
    await wait_all_tasks_blocked()
    await client.update_task(task_id, {"elicit-1": accept({"sure": True})})
    await wait_all_tasks_blocked()
    with pytest.raises(RequestFailed) as refused:
        await client.update_task(task_id, {"elicit-2": accept({"day": day})})
    assert (refused.value.status, refused.value.code) == (400, INVALID_PARAMS)
    assert (
        refused.value.message
        == f"inputResponses['elicit-2']: content.day: {day!r} is not an ISO 8601 date"
    )
    await wait_all_tasks_blocked()
    waiting = await client.get_task(task_id)
    assert (waiting["status"], list(waiting["inputRequests"])) == ("input_required", ["elicit-2"])
    await client.update_task(task_id, {"elicit-2": accept({"day": "2026-08-02"})})
    await wait_all_tasks_blocked()
    done = await client.get_task(task_id)
    assert done["result"]["content"] == [{"type": "text", "text": "deleting d on 2026-08-02"}]


async def test_a_date_the_form_cannot_read_is_refused_alike_on_the_plain_path(
    client: McpClient,
) -> None:
    """Spec-mandated (basic/patterns/mrtr §Error Handling; spec-notes §63): the retry
    that brings it gets the same -32602."""
    params = {
        "name": "delete",
        "arguments": {"path": "a"},
        "inputResponses": {"elicit-1": accept({"sure": True}), "elicit-2": accept({"day": "x"})},
    }
    response = await client.call("tools/call", params, capabilities=UNDECLARED)
    error = error_of(response, 400, INVALID_PARAMS)
    assert (
        error["message"] == "inputResponses['elicit-2']: content.day: 'x' is not an ISO 8601 date"
    )


async def test_in_a_task_a_decline_is_the_typed_outcome(client: McpClient) -> None:
    """Spec-mandated (client/elicitation §Response Actions; SEP-2663 §Task Update Requests)."""
    created = await client.call_tool("delete", {"path": "c"}, capabilities=DECLARED)
    await wait_all_tasks_blocked()
    await client.update_task(created["taskId"], {"elicit-1": {"action": "decline"}})
    await wait_all_tasks_blocked()
    done = await client.get_task(created["taskId"])
    assert done["result"]["content"] == [{"type": "text", "text": "decline"}]
