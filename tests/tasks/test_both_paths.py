"""One tool, two paths: the plain call and the task answer alike.

Each test calls the same tool once without the Tasks extension declared
(the plain path) and once with it (a task, read back with ``tasks/get``),
and compares what the client learns.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server, ToolError
from presa_trio.tasks import TASKS_EXTENSION, Policy, TaskRunner, TasksExtension
from presa_trio.testing import McpClient, request, running
from presa_trio.wire.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    InvalidParams,
    McpError,
)
from presa_trio.wire.mrtr import Elicitation, InputRequired, ListRoots, Sampling
from tests.expect import error_of, incident_of, result_of, without_incident
from tests.nesting import DEEP, answers_at_every_depth

UNDECLARED: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
DECLARED: dict[str, Any] = {**UNDECLARED, "extensions": {TASKS_EXTENSION: {}}}
CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def leaf(kind: str) -> Exception:
    return {
        "tool": ToolError(f"tool failure {kind}"),
        "tool2": ToolError("second tool failure"),
        "params": InvalidParams("widget must be blue"),
        "crash": RuntimeError("secret=hunter2"),
    }[kind]


async def raise_leaves(kinds: list[str], nested: bool) -> None:
    """Raise each leaf from a child task; with ``nested``, one nursery deeper."""

    async def fail(kind: str) -> None:
        # No checkpoint before raising: every child raises, none is cancelled first.
        raise leaf(kind)

    async with trio.open_nursery() as outer:
        if nested:
            async with trio.open_nursery() as inner:
                for kind in kinds:
                    inner.start_soon(fail, kind)
        else:
            for kind in kinds:
                outer.start_soon(fail, kind)


def build() -> tuple[McpApp, TasksExtension]:
    server = Server("both-paths", "1.0.0")
    tasks = TasksExtension(TaskRunner(ttl_ms=60_000))
    server.add_extension(tasks)

    @tasks.tool(
        Policy.OPTIONAL,
        description="Fails from inside its own nurseries",
        input_schema={
            "type": "object",
            "properties": {
                "leaves": {"type": "array", "items": {"type": "string"}},
                "nested": {"type": "boolean"},
            },
            "required": ["leaves"],
        },
    )
    async def grouped(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        await raise_leaves(arguments["leaves"], arguments.get("nested", False))
        return "unreachable"

    @tasks.tool(Policy.OPTIONAL, description="Asks twice, one after the other")
    async def two_asks(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        first = await ctx.ask({"a": Elicitation("First?", CONFIRM)})
        second = await ctx.ask(
            {
                "b": Elicitation("Second?", CONFIRM),
                "c": Elicitation("?", {"type": "object", "properties": {}}),
            }
        )
        actions = [first.elicitation("a").action] + [second.elicitation(k).action for k in "bc"]
        return " ".join(actions)

    @tasks.tool(Policy.OPTIONAL, description="Asks two questions under one key")
    async def one_key_twice(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        first = await ctx.ask({"k": Elicitation("First?", CONFIRM)})
        second = await ctx.ask({"k": Elicitation("Something else?", CONFIRM)})
        return f"{first.elicitation('k').action} {second.elicitation('k').action}"

    @tasks.tool(Policy.OPTIONAL, description="Asks from two child tasks at once")
    async def fan_out(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        got: list[str] = []

        async def one(key: str) -> None:
            answers = await ctx.ask({key: Elicitation(f"{key}?", CONFIRM)})
            got.append(answers.elicitation(key).action)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, "left")
            nursery.start_soon(one, "right")
        return " ".join(sorted(got))

    @tasks.tool(Policy.OPTIONAL, description="Asks the client's model and the client's roots")
    async def model_and_roots(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        answers = await ctx.ask({"fact": Sampling("A fact?", max_tokens=10), "where": ListRoots()})
        uris = [root["uri"] for root in answers.roots("where")]
        return f"{answers.sampling('fact').text} {uris}"

    @tasks.tool(Policy.OPTIONAL, description="Raises a spec error whose data JSON cannot hold")
    async def unwritable_error(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        raise InvalidParams("ratio out of range", {"ratio": float("nan")})

    @tasks.tool(Policy.OPTIONAL, description="Raises a spec error whose message is no string")
    async def unworded_error(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        raise McpError(cast(str, 42))

    @tasks.tool(Policy.OPTIONAL, description="Raises an error of its own whose code is no integer")
    async def uncoded_error(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        # As a subclass of the tool's own would set it (a class here would join
        # the package's error classes, which tests/wire/test_error_codes.py walks).
        error = McpError("out of widgets")
        error.code = cast(int, "E_WIDGETS")  # type: ignore[misc]
        raise error

    @tasks.tool(
        Policy.OPTIONAL,
        description="Raises an error of its own with the code it is given",
        input_schema={
            "type": "object",
            "properties": {"code": {"type": "integer"}},
            "required": ["code"],
        },
    )
    async def coded_error(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        error = McpError("out of widgets")
        error.code = arguments["code"]  # type: ignore[misc]
        raise error

    @tasks.tool(Policy.OPTIONAL, description="Asks a question whose schema JSON cannot hold")
    async def unwritable_question(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        schema = {
            "type": "object",
            "properties": {"x": {"type": "number", "maximum": float("nan")}},
        }
        await ctx.ask({"k": Elicitation("How much?", schema)})
        return "unreachable"

    @tasks.tool(Policy.OPTIONAL, description="Refuses its arguments, naming them in the error")
    async def echo_error(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        raise InvalidParams("not these arguments", {"got": arguments})

    @tasks.tool(Policy.OPTIONAL, description="Asks only for what it lacks: here, nothing")
    async def ask_nothing(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        answers = await ctx.ask({})
        return f"{len(answers)} answers"

    def rounds_then_task(ctx: RequestContext, params: dict[str, Any]) -> Policy:
        return Policy.REQUIRED if params.get("inputResponses") else Policy.SYNC

    @tasks.tool(rounds_then_task, description="A multi round-trip round, then a task")
    async def round_then_ask(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        before = ctx.elicitation("k")
        if before is None:
            return InputRequired({"k": Elicitation("Before?", CONFIRM)})
        after = await ctx.ask({"k": Elicitation("Again?", CONFIRM)})
        return f"{before.action} {after.elicitation('k').action}"

    return McpApp.for_server(server), tasks


@pytest.fixture
def built() -> tuple[McpApp, TasksExtension]:
    return build()


@pytest.fixture
async def client(built: tuple[McpApp, TasksExtension]) -> AsyncIterator[McpClient]:
    async with running(built[0]) as opened:
        yield opened


async def both_paths(
    client: McpClient, name: str, arguments: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """The plain call's response and the task's final ``tasks/get`` result."""
    params = {"name": name, "arguments": arguments}
    plain = await client.call("tools/call", params, capabilities=UNDECLARED)
    created = result_of(await client.call("tools/call", params, capabilities=DECLARED))
    assert created["resultType"] == "task"
    await wait_all_tasks_blocked()
    got = await client.call("tasks/get", {"taskId": created["taskId"]}, capabilities=DECLARED)
    return plain, result_of(got)


async def task_answered(
    client: McpClient, params: dict[str, Any], answers: dict[str, Any]
) -> dict[str, Any]:
    """The final ``tasks/get`` result of a task of ``params`` given ``answers`` once it asks."""
    created = result_of(await client.call("tools/call", params, capabilities=DECLARED))
    task = {"taskId": created["taskId"]}
    await wait_all_tasks_blocked()
    update = {**task, "inputResponses": answers}
    result_of(await client.call("tasks/update", update, capabilities=DECLARED))
    await wait_all_tasks_blocked()
    return result_of(await client.call("tasks/get", task, capabilities=DECLARED))


def bare(result: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in result.items() if key != "_meta"}


@pytest.mark.parametrize("nested", [False, True], ids=["group", "nested-group"])
@pytest.mark.parametrize(
    ("leaves", "expected"),
    [
        (["tool"], {"isError": ["tool failure tool"]}),
        (["tool", "tool2"], {"isError": ["tool failure tool", "second tool failure"]}),
        (["params"], {"code": INVALID_PARAMS, "message": "widget must be blue"}),
        (["tool", "params"], {"code": INVALID_PARAMS, "message": "widget must be blue"}),
        (["crash"], {"code": INTERNAL_ERROR, "message": "Internal error"}),
        (["params", "crash"], {"code": INTERNAL_ERROR, "message": "Internal error"}),
        (["tool", "crash"], {"code": INTERNAL_ERROR, "message": "Internal error"}),
    ],
    ids=["tool", "two-tools", "params", "tool+params", "crash", "params+crash", "tool+crash"],
)
async def test_what_a_tool_raises_in_its_nurseries_is_answered_alike_on_both_paths(
    client: McpClient,
    caplog: pytest.LogCaptureFixture,
    leaves: list[str],
    nested: bool,
    expected: dict[str, Any],
) -> None:
    """presa-defined (E-21; server/tools §Error Handling; SEP-2663 §Task Execution
    Errors: the task ends with what the request would have answered; T-61, T-62):
    exception groups at any depth are opened; a crash outranks a protocol error,
    which outranks tool failures, and a crash's detail reaches the log only."""
    with caplog.at_level(logging.ERROR):
        plain, task = await both_paths(client, "grouped", {"leaves": leaves, "nested": nested})
    if "isError" in expected:
        # One text block per ToolError, in the group's order (which is Trio's).
        for result in (result_of(plain), task["result"]):
            assert (result["isError"], result["resultType"]) == (True, "complete")
            texts = sorted(block["text"] for block in result["content"])
            assert texts == sorted(expected["isError"])
        assert task["status"] == "completed"
    else:
        status = 400 if expected["code"] == INVALID_PARAMS else 500
        assert without_incident(error_of(plain, status, expected["code"])) == expected
        assert (task["status"], without_incident(task["error"])) == ("failed", expected)
    assert "hunter2" not in plain.body.decode() + str(task)
    if "crash" in leaves:
        assert "hunter2" in caplog.text


async def test_asking_twice_works_on_the_plain_path_round_by_round(client: McpClient) -> None:
    """Spec-mandated (basic/patterns/mrtr §Error Handling: ask again for missing
    information rather than fail; §Server Requirements: state carried in
    requestState). A tool written with ``ask`` runs unchanged without the Tasks
    extension: each round asks for what is missing, a partial answer is asked again,
    and answers already given are carried, never asked twice."""

    async def call(**extra: Any) -> dict[str, Any]:
        params = {"name": "two_asks", "arguments": {}, **extra}
        return result_of(await client.call("tools/call", params, capabilities=UNDECLARED))

    accept = {"action": "accept", "content": {"ok": True}}
    first = await call()
    second = await call(inputResponses={"a": accept})
    partial = await call(
        inputResponses={"b": {"action": "decline"}}, requestState=second["requestState"]
    )
    done = await call(
        inputResponses={"c": {"action": "cancel"}}, requestState=partial["requestState"]
    )
    assert (first["resultType"], list(first["inputRequests"])) == ("input_required", ["a"])
    assert sorted(second["inputRequests"]) == ["b", "c"]
    assert list(partial["inputRequests"]) == ["c"]
    assert done["content"] == [{"type": "text", "text": "accept decline cancel"}]


async def test_asks_from_several_child_tasks_make_one_round(client: McpClient) -> None:
    """presa-defined (E-21): pending input raised from several children of the
    tool's nursery is one ``input_required`` asking for every key."""
    params: dict[str, Any] = {"name": "fan_out", "arguments": {}}
    first = result_of(await client.call("tools/call", params, capabilities=UNDECLARED))
    assert sorted(first["inputRequests"]) == ["left", "right"]
    answers = {"left": {"action": "decline"}, "right": {"action": "cancel"}}
    params |= {"inputResponses": answers, "requestState": first["requestState"]}
    done = result_of(await client.call("tools/call", params, capabilities=UNDECLARED))
    assert done["content"] == [{"type": "text", "text": "cancel decline"}]


async def test_an_invalid_answer_to_ask_is_invalid_params_on_the_plain_path(
    client: McpClient,
) -> None:
    """Spec-mandated (basic/patterns/mrtr §Error Handling: information that cannot
    be parsed is a protocol error; E-22)."""
    params = {"name": "two_asks", "arguments": {}, "inputResponses": {"a": {"action": "bogus"}}}
    error = error_of(
        await client.call("tools/call", params, capabilities=UNDECLARED), 400, INVALID_PARAMS
    )
    assert "inputResponses['a']" in error["message"]


async def test_ask_without_the_capability_is_32021_on_the_plain_path(client: McpClient) -> None:
    """Spec-mandated (basic/patterns/mrtr §Server Requirements; T-76): an input
    request for a capability the request did not declare is never sent."""
    response = await client.call("tools/call", {"name": "two_asks"}, capabilities={})
    assert error_of(response, 400, -32021)["data"] == {"requiredCapabilities": {"elicitation": {}}}


async def test_invalid_arguments_create_no_task(
    client: McpClient, built: tuple[McpApp, TasksExtension]
) -> None:
    """Spec-mandated (server/tools §Error Handling; E-18): the task path checks the
    arguments as the plain path does, before any task exists, and answers the
    same ``isError`` result."""
    params = {"name": "grouped", "arguments": {"leaves": "tool"}}
    plain = result_of(await client.call("tools/call", params, capabilities=UNDECLARED))
    declared = result_of(await client.call("tools/call", params, capabilities=DECLARED))
    assert declared["isError"] is True
    assert bare(declared) == bare(plain)
    assert "/leaves: " in plain["content"][0]["text"]
    assert (await built[1].runner.store.counts()).stored == 0


async def test_an_invalid_task_update_answer_is_refused_and_the_key_stays_outstanding(
    client: McpClient,
) -> None:
    """Spec-mandated (SEP-2663 §Task Update Requests; basic/patterns/mrtr §Error
    Handling; E-22, T-44): an answer that is no ElicitResult is -32602, nothing is
    recorded, the key is still asked for, and a corrected answer then completes the
    task. An answer to a key that is not outstanding is still ignored unread."""
    params = {"name": "two_asks", "arguments": {}}
    created = result_of(await client.call("tools/call", params, capabilities=DECLARED))
    task = {"taskId": created["taskId"]}
    await wait_all_tasks_blocked()

    async def update(answers: dict[str, Any]) -> Any:
        params = {**task, "inputResponses": answers}
        return await client.call("tasks/update", params, capabilities=DECLARED)

    async def status() -> dict[str, Any]:
        return result_of(await client.call("tasks/get", task, capabilities=DECLARED))

    bogus = error_of(await update({"a": {"action": "bogus"}}), 400, INVALID_PARAMS)
    assert "inputResponses['a']" in bogus["message"]
    still = await status()
    assert (still["status"], list(still["inputRequests"])) == ("input_required", ["a"])
    result_of(await update({"a": {"action": "accept", "content": {}}, "zz": {"junk": 1}}))
    await wait_all_tasks_blocked()
    assert sorted((await status())["inputRequests"]) == ["b", "c"]
    result_of(await update({"b": {"action": "decline"}, "c": {"action": "cancel"}}))
    await wait_all_tasks_blocked()
    done = await status()
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "accept decline cancel"}]


async def test_content_that_does_not_fit_the_form_is_refused_by_the_update(
    client: McpClient,
) -> None:
    """Spec-mandated (client/elicitation §Form Mode Security: servers SHOULD validate
    received data matches the requested schema; SEP-2663 §Rationale: servers SHOULD
    return errors for clearly invalid requests; basic/patterns/mrtr §Error Handling):
    accepted content outside the form the task asks is -32602 from ``tasks/update``,
    as it is on the plain path, nothing is recorded and the task still asks, rather
    than the task failing on it."""
    params = {"name": "two_asks", "arguments": {}}
    created = result_of(await client.call("tools/call", params, capabilities=DECLARED))
    task = {"taskId": created["taskId"]}
    await wait_all_tasks_blocked()
    misfit = {"a": {"action": "accept", "content": {"ok": "yes"}}}
    update = {**task, "inputResponses": misfit}
    refused = error_of(
        await client.call("tasks/update", update, capabilities=DECLARED), 400, INVALID_PARAMS
    )
    assert refused["message"].startswith("inputResponses['a']: the content does not fit")
    await wait_all_tasks_blocked()
    still = result_of(await client.call("tasks/get", task, capabilities=DECLARED))
    assert (still["status"], list(still["inputRequests"])) == ("input_required", ["a"])
    plain = await client.call("tools/call", {**params, "inputResponses": misfit})
    assert error_of(plain, 400, INVALID_PARAMS)["message"] == refused["message"]


async def test_a_task_asks_under_a_key_its_rounds_already_used(client: McpClient) -> None:
    """Spec-mandated (SEP-2663 §Composition with Multi Round-Trip Requests): the
    task's input keys are its own; a key the multi round-trip phase before the
    CreateTaskResult used is asked for again, not answered from that phase."""
    params: dict[str, Any] = {"name": "round_then_ask", "arguments": {}}
    first = result_of(await client.call("tools/call", params, capabilities=DECLARED))
    assert (first["resultType"], list(first["inputRequests"])) == ("input_required", ["k"])
    answered = {**params, "inputResponses": {"k": {"action": "accept", "content": {}}}}
    created = result_of(await client.call("tools/call", answered, capabilities=DECLARED))
    task = {"taskId": created["taskId"]}
    await wait_all_tasks_blocked()
    waiting = result_of(await client.call("tasks/get", task, capabilities=DECLARED))
    assert (waiting["status"], list(waiting["inputRequests"])) == ("input_required", ["k"])
    update = {**task, "inputResponses": {"k": {"action": "decline"}}}
    result_of(await client.call("tasks/update", update, capabilities=DECLARED))
    await wait_all_tasks_blocked()
    done = result_of(await client.call("tasks/get", task, capabilities=DECLARED))
    assert done["result"]["content"] == [{"type": "text", "text": "accept decline"}]


async def test_one_key_asked_twice_is_an_internal_error_on_both_paths(
    client: McpClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Spec-mandated (basic/patterns/mrtr §Server Requirements (Basic Workflow) 2: keys
    are unique within the scope of the request; SEP-2663 §Task Update Requests: a
    key never refers to two distinct requests): a tool asking a second question
    under a key it asked already is the tool's bug, a generic -32603 on the plain
    path as in a task; the plain call handed it the first question's answer."""
    params: dict[str, Any] = {"name": "one_key_twice", "arguments": {}}
    answer = {"k": {"action": "accept", "content": {"ok": True}}}
    with caplog.at_level(logging.ERROR):
        first = result_of(await client.call("tools/call", params, capabilities=UNDECLARED))
        retry = {**params, "inputResponses": answer, "requestState": first["requestState"]}
        plain = await client.call("tools/call", retry, capabilities=UNDECLARED)
        done = await task_answered(client, params, answer)
    expected = {"code": INTERNAL_ERROR, "message": "Internal error"}
    assert without_incident(error_of(plain, 500, INTERNAL_ERROR)) == expected
    assert (done["status"], without_incident(done["error"])) == ("failed", expected)


#: A valid CreateMessageResult and ListRootsResult, each with a member of
#: another result's shape: results are open objects (schema ``$defs.Result``).
ODD_ANSWERS: dict[str, Any] = {
    "fact": {
        "role": "assistant",
        "model": "m",
        "content": {"type": "text", "text": "Water is wet."},
        "action": "extra",
    },
    "where": {"roots": [{"uri": "file:///w"}], "action": "accept", "content": {}},
}


async def test_each_answer_is_read_as_the_kind_it_was_asked_for(client: McpClient) -> None:
    """Spec-mandated (basic/patterns/mrtr §Error Handling; SEP-2663 §Task Update
    Requests): an answer is read as the result of the request issued under its
    key, so members another kind of result has do not change how it reads, on
    the plain path and in a task."""
    expected = [{"type": "text", "text": "Water is wet. ['file:///w']"}]
    params: dict[str, Any] = {"name": "model_and_roots", "arguments": {}}
    plain = {**params, "inputResponses": ODD_ANSWERS}
    answered = await client.call("tools/call", plain, capabilities=UNDECLARED)
    assert result_of(answered)["content"] == expected
    done = await task_answered(client, params, ODD_ANSWERS)
    assert (done["status"], done["result"]["content"]) == ("completed", expected)


@pytest.mark.parametrize(
    "tool", ["unwritable_error", "unworded_error", "uncoded_error", "unwritable_question"]
)
async def test_what_json_cannot_hold_is_an_internal_error_on_both_paths(
    client: McpClient, caplog: pytest.LogCaptureFixture, tool: str
) -> None:
    """Spec-mandated (SEP-2663 §Task Execution Errors: the task holds what the
    request would have answered; RFC 8259 §6: NaN is not JSON; E-05): an error
    or an input request the encoder refuses, or an error whose code is no integer
    or whose message is no string (schema ``$defs.Error``), is the tool's fault, a
    generic -32603 on the plain path, and the task ends ``failed`` with it, so its
    ``tasks/get`` can be written and it is never left ``working``."""
    with caplog.at_level(logging.ERROR):
        plain, task = await both_paths(client, tool, {})
    expected = {"code": INTERNAL_ERROR, "message": "Internal error"}
    assert without_incident(error_of(plain, 500, INTERNAL_ERROR)) == expected
    assert (task["status"], without_incident(task["error"])) == ("failed", expected)
    incident_of(task["error"], caplog.text)


@pytest.mark.parametrize(
    "code", [-32002, -32042, -32003, -32000, -32019, -32023, -32099, -32100, -32500, -32768]
)
async def test_a_reserved_code_the_spec_does_not_define_is_an_internal_error_on_both_paths(
    client: McpClient, caplog: pytest.LogCaptureFixture, code: int
) -> None:
    """Spec-mandated (2026-07-28 basic/index §Error Codes: -32002 and -32042 MUST NOT be
    emitted, no undefined code of -32020…-32099 may be, -32000…-32019 SHOULD NOT be
    used, and new codes go outside JSON-RPC's reserved -32768…-32000; E-09): a tool's
    own error with such a code is the tool's fault, a generic -32603 with the detail in
    the log, on the plain path and in the task, never sent as it is."""
    with caplog.at_level(logging.ERROR):
        plain, task = await both_paths(client, "coded_error", {"code": code})
    expected = {"code": INTERNAL_ERROR, "message": "Internal error"}
    assert without_incident(error_of(plain, 500, INTERNAL_ERROR)) == expected
    assert (task["status"], without_incident(task["error"])) == ("failed", expected)
    incident_of(task["error"], caplog.text)


@pytest.mark.parametrize("code", [-31999, -32769, -1, 0, 4001])
async def test_an_application_code_outside_the_reserved_range_is_sent_on_both_paths(
    client: McpClient, code: int
) -> None:
    """Spec-mandated (2026-07-28 basic/index §Error Codes: codes outside -32768…-32000
    are free for application-defined errors; E-09, E-21): a tool's own error with one
    is the answer, as raised, on the plain path and in the task."""
    plain, task = await both_paths(client, "coded_error", {"code": code})
    expected = {"code": code, "message": "out of widgets"}
    assert error_of(plain, 500, code) == expected
    assert (task["status"], task["error"]) == ("failed", expected)


async def test_a_task_whose_error_holds_any_depth_the_parser_accepts_is_still_readable(
    client: McpClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Spec-mandated (SEP-2663 §Task Polling (Response) item 5: a ``failed`` task's
    ``tasks/get`` returns the task and its error; spec-notes §25): a tool whose error
    carries its arguments, nested as deep as the body's parser accepts, ends
    ``failed`` with an error every later ``tasks/get`` can write: the tool's own, or,
    within a few tens of levels of the encoder's limit (a response is written from
    deeper in the stack than the worker checks it), a generic -32603."""
    params = {"name": "echo_error", "arguments": {"deep": DEEP}}
    body = request("tools/call", params, capabilities=DECLARED)
    tasks = 0
    async for depth, created in answers_at_every_depth(client, body):
        if "error" in created.json():  # too deep to measure: no task (spec-notes §31)
            assert created.json()["error"]["data"]["limit"] == "max_input_bytes", depth
            continue
        await wait_all_tasks_blocked()
        task = {"taskId": result_of(created)["taskId"]}
        with caplog.at_level(logging.CRITICAL):
            got = await client.call("tasks/get", task, capabilities=DECLARED)
        assert got.status == 200, (depth, got.json())
        failed = result_of(got)
        assert (failed["status"], failed["error"]["code"]) in {
            ("failed", INVALID_PARAMS),
            ("failed", INTERNAL_ERROR),
        }, depth
        tasks += 1
    assert tasks > 0  # the depths tried reached the task runner, not only the parser


async def test_asking_for_nothing_answers_at_once_on_both_paths(client: McpClient) -> None:
    """presa-defined (spec-notes §25: one outcome for the plain call and the
    task): an ``ask`` of no requests returns no answers at once, and the task,
    like the plain call, never becomes ``input_required``."""
    plain, task = await both_paths(client, "ask_nothing", {})
    expected = [{"type": "text", "text": "0 answers"}]
    assert result_of(plain)["content"] == expected
    assert (task["status"], task["result"]["content"]) == ("completed", expected)
