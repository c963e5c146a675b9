"""Multi round-trip requests through the ASGI app: every rule of basic/patterns/mrtr.

Rules of this file: each test names its rule of the mrtr page (or a spec-notes entry)
in its docstring; a retry is always a new request with a new id, carrying
the original params plus ``inputResponses`` and the echoed
``requestState``; every refusal is checked on the wire (400 and -32602 or
-32021) and followed by a request that still works.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presa_trio.demo import build_app
from presa_trio.http.app import McpApp
from presa_trio.server import Extension, Method, RequestContext, Server, rounds
from presa_trio.testing import McpClient, request, running
from presa_trio.wire.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
)
from presa_trio.wire.mrtr import Elicitation, InputRequired, ListRoots, Sampling
from presa_trio.wire.request_state import StateSealer
from tests.expect import assert_handler_fault, assert_still_serving, error_of, result_of
from tests.nesting import DEEP, answers_at_every_depth

ELICIT = "test_input_required_result_elicitation"
REQUEST_STATE = "test_input_required_result_request_state"
ALICE = {"action": "accept", "content": {"name": "Alice"}}
CONFIRM = {"action": "accept", "content": {"ok": True}}
KEY = b"shared-key-for-every-process-000"


def call(tool: str, request_id: int = 1, **params: Any) -> dict[str, Any]:
    return request("tools/call", {"name": tool, "arguments": {}, **params}, request_id=request_id)


def input_required(response: Any, request_id: int = 1) -> dict[str, Any]:
    """Assert an InputRequiredResult as plain JSON (mrtr §InputRequiredResult) and return it."""
    assert response.headers["content-type"] == "application/json"
    result = result_of(response, request_id)
    assert result["resultType"] == "input_required"
    assert "inputRequests" in result or "requestState" in result
    assert "ttlMs" not in result
    return result


def complete(response: Any, request_id: int = 2) -> dict[str, Any]:
    result = result_of(response, request_id)
    assert result["resultType"] == "complete"
    return result


async def first_round(client: McpClient, tool: str) -> dict[str, Any]:
    return input_required(await client.post(call(tool)))


class Clock:
    """A wall clock the test moves by hand (requestState expiry is wall time)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def asking_server(clock: Clock | None = None, key: bytes = KEY) -> Server:
    """Handlers that ask for input regardless of what the client declared."""
    server = Server("asking", "1.0.0", sealer=StateSealer([key]), clock=clock or Clock())

    def ask(what: str) -> InputRequired:
        requests: dict[str, Any] = {
            "elicitation": {"who": Elicitation("Who?", {"type": "object", "properties": {}})},
            "sampling": {"guess": Sampling("Guess", 10)},
            "roots": {"where": ListRoots()},
        }
        return InputRequired(requests[what], state={"asked": what})

    @server.tool(description="Asks with whatever the argument names.")
    async def ask_with(ctx: RequestContext, arguments: dict[str, Any]) -> Any:
        if ctx.state is not None and ctx.input_responses:
            return "answered"
        return ask(arguments["what"])

    @server.resource("test://needs-consent", name="needs-consent")
    async def guarded(ctx: RequestContext) -> Any:
        answer = ctx.elicitation("consent")
        if answer is None:
            return InputRequired(
                {"consent": Elicitation("Allow?", {"type": "object", "properties": {}})}
            )
        return f"consent: {answer.action}"

    @server.resource_template("test://items/{id}", name="item")
    async def item(ctx: RequestContext, variables: dict[str, str]) -> Any:
        if ctx.state is None:
            return InputRequired(state={"id": variables["id"]})
        return f"item {ctx.state['id']}"

    return server


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def asking(clock: Clock) -> AsyncIterator[McpClient]:
    async with running(McpApp.for_server(asking_server(clock))) as client:
        yield client


# --- which requests may ask (mrtr §Supported Requests) -----------------------------------


async def test_a_tool_call_may_ask_for_input_and_complete_on_retry(client: McpClient) -> None:
    """Runner-scored (input-required-result-basic-elicitation/sep-2322-elicitation-incomplete,
    -complete; input-required-result-result-type/sep-2322-result-type-included): a bare
    ``{method, params}`` per key, no jsonrpc and no id (mrtr §InputRequests)."""
    result = await first_round(client, ELICIT)
    assert set(result["inputRequests"]) == {"user_name"}
    asked = result["inputRequests"]["user_name"]
    assert set(asked) == {"method", "params"}
    assert asked["method"] == "elicitation/create"
    assert asked["params"]["mode"] == "form"
    assert "requestState" not in result

    retry = call(ELICIT, 2, inputResponses={"user_name": ALICE})
    assert complete(await client.post(retry))["content"][0]["text"]


@pytest.mark.parametrize(
    ("tool", "key", "answer"),
    [
        (
            "test_input_required_result_sampling",
            "capital_question",
            {
                "role": "assistant",
                "content": {"type": "text", "text": "The capital of France is Paris."},
                "model": "test-model",
                "stopReason": "endTurn",
            },
        ),
        (
            "test_input_required_result_list_roots",
            "client_roots",
            {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]},
        ),
    ],
    ids=["sampling", "roots"],
)
async def test_sampling_and_roots_are_asked_for_the_same_way(
    client: McpClient, tool: str, key: str, answer: dict[str, Any]
) -> None:
    """Runner-scored (input-required-result-basic-sampling/sep-2322-sampling-incomplete,
    -complete; input-required-result-basic-list-roots/sep-2322-list-roots-incomplete,
    -complete)."""
    result = await first_round(client, tool)
    method = {"capital_question": "sampling/createMessage", "client_roots": "roots/list"}[key]
    assert result["inputRequests"][key]["method"] == method
    retry = call(tool, 2, inputResponses={key: answer})
    assert complete(await client.post(retry))["content"]


async def test_a_prompt_may_ask_for_input(client: McpClient) -> None:
    """Runner-scored (input-required-result-non-tool-request/sep-2322-non-tool-incomplete,
    -complete)."""
    params = {"name": "test_input_required_result_prompt"}
    first = input_required(await client.post(request("prompts/get", params)))
    assert first["inputRequests"]["user_context"]["method"] == "elicitation/create"
    answer = {"user_context": {"action": "accept", "content": {"context": "test context"}}}
    retry = request("prompts/get", {**params, "inputResponses": answer}, request_id=2)
    assert complete(await client.post(retry))["messages"]


async def test_a_resource_read_may_ask_for_input(asking: McpClient) -> None:
    """Spec-mandated (mrtr §Supported Requests: resources/read supports
    InputRequiredResult)."""
    uri = "test://needs-consent"
    first = input_required(await asking.post(request("resources/read", {"uri": uri})))
    assert set(first["inputRequests"]) == {"consent"}
    answer = {"consent": {"action": "decline"}}
    retry = request("resources/read", {"uri": uri, "inputResponses": answer}, request_id=2)
    assert complete(await asking.post(retry))["contents"][0]["text"] == "consent: decline"


def ask_everywhere_server() -> Server:
    """A resource, a template and a prompt that ask with ``ctx.ask`` and ``ctx.elicit``."""
    server = Server("ask-everywhere", "1.0.0")
    question = {"ok": Elicitation("Allow?", {"type": "object", "properties": {}})}

    @server.resource("test://asks", name="asks")
    async def asks(ctx: RequestContext) -> str:
        answers = await ctx.ask(question)
        return f"resource: {answers.elicitation('ok').action}"

    @server.resource_template("test://elicits/{id}", name="elicits")
    async def elicits(ctx: RequestContext, variables: dict[str, str]) -> str:
        answer = await ctx.elicit("Allow?", {"type": "object", "properties": {}})
        return f"item {variables['id']}: {answer.action}"

    @server.prompt(description="Asks before it renders.")
    async def asking_prompt(ctx: RequestContext) -> str:
        answers = await ctx.ask(question)
        return f"prompt: {answers.elicitation('ok').action}"

    @server.prompt(description="Asks from a child task of its own nursery.")
    async def nursery_prompt(ctx: RequestContext) -> str:
        shown: list[str] = []

        async def ask_in_child() -> None:
            answers = await ctx.ask(question)
            shown.append(f"prompt: {answers.elicitation('ok').action}")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask_in_child)
        return shown[0]

    return server


@pytest.mark.parametrize(
    ("method", "params", "key", "text"),
    [
        ("resources/read", {"uri": "test://asks"}, "ok", "resource: decline"),
        ("resources/read", {"uri": "test://elicits/7"}, "elicit-1", "item 7: decline"),
        ("prompts/get", {"name": "asking_prompt"}, "ok", "prompt: decline"),
        ("prompts/get", {"name": "nursery_prompt"}, "ok", "prompt: decline"),
    ],
    ids=["resource-ask", "template-elicit", "prompt-ask", "prompt-ask-in-nursery"],
)
async def test_a_resource_or_prompt_may_ask_as_a_tool_does(
    method: str, params: dict[str, Any], key: str, text: str
) -> None:
    """Spec-mandated (mrtr §Supported Requests: prompts/get and resources/read may answer
    InputRequiredResult): ``ctx.ask`` and ``ctx.elicit`` in their handlers ask as in a
    tool, an input_required round and then the result, never -32603."""
    async with running(McpApp.for_server(ask_everywhere_server())) as client:
        first = input_required(await client.post(request(method, params)))
        assert set(first["inputRequests"]) == {key}
        answers = {key: {"action": "decline"}}
        retry = {**params, "inputResponses": answers, "requestState": first["requestState"]}
        result = complete(await client.post(request(method, retry, request_id=2)))
    shown = result["contents"][0]["text"] if "contents" in result else None
    shown = shown or result["messages"][0]["content"]["text"]
    assert shown == text


async def test_prompt_state_is_bound_to_the_prompts_arguments() -> None:
    """Spec-mandated (mrtr §Server Requirements 5: ``requestState`` carries a digest of
    the salient parameters, and state presented on a request that does not match is
    rejected; E-16): a prompt's state, retried with other arguments, is -32602; with
    its own arguments, the round completes."""
    server = Server("asking-prompt", "1.0.0")
    question = {"ok": Elicitation("Allow?", {"type": "object", "properties": {}})}

    @server.prompt(description="Asks before it greets.")
    async def greet(ctx: RequestContext, who: str) -> str:
        answers = await ctx.ask(question)
        return f"{who}: {answers.elicitation('ok').action}"

    def get(who: str, request_id: int, **more: Any) -> dict[str, Any]:
        params = {"name": "greet", "arguments": {"who": who}, **more}
        return request("prompts/get", params, request_id=request_id)

    async with running(McpApp.for_server(server)) as client:
        token = input_required(await client.post(get("ann", 1)))["requestState"]
        answers = {"ok": {"action": "decline"}}
        other = get("bob", 2, inputResponses=answers, requestState=token)
        error_of(await client.post(other), 400, INVALID_PARAMS, 2)
        own = get("ann", 3, inputResponses=answers, requestState=token)
        result = complete(await client.post(own), 3)
    assert result["messages"][0]["content"]["text"] == "ann: decline"


async def test_a_question_beside_a_failure_is_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Spec-mandated (basic/index §Error Codes: -32603 Internal error; mrtr §Basic
    Workflow: ``input_required`` asks for what the request still needs): a prompt
    whose nursery raises a pending question beside an unexpected exception failed,
    a generic -32603 with the failure logged, never a round that hides it."""
    server = Server("asking-beside-a-failure", "1.0.0")
    question = {"ok": Elicitation("Allow?", {"type": "object", "properties": {}})}

    @server.prompt(description="Asks in one child while the other fails.")
    async def failing_prompt(ctx: RequestContext) -> str:
        async def ask() -> None:
            await ctx.ask(question)

        async def fail() -> None:
            raise RuntimeError("the prompt's own failure")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            nursery.start_soon(fail)
        return "never"

    async with running(McpApp.for_server(server)) as client:
        await assert_handler_fault(
            client, caplog, "prompts/get", {"name": "failing_prompt"}, "the prompt's own failure"
        )


def child_asking_server() -> Server:
    """A tool registered with ``nursery=True`` whose child task asks."""
    server = Server("child-asking", "1.0.0")

    @server.tool(needs=["elicitation"], nursery=True, description="Asks from a child.")
    async def ask_in_child(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        send, receive = trio.open_memory_channel[str](1)

        async def ask(shown: trio.MemorySendChannel[str]) -> None:
            async with shown:
                answers = await ctx.ask(
                    {"ok": Elicitation("OK?", {"type": "object", "properties": {}})}
                )
                await shown.send(f"child: {answers.elicitation('ok').action}")

        ctx.nursery.start_soon(ask, send)
        async with receive:
            return await receive.receive()

    return server


async def test_a_child_in_the_calls_nursery_may_ask() -> None:
    """Spec-mandated (mrtr §Basic Workflow: the server responds requesting more
    information; spec-notes §47: a tool registered with ``nursery=True`` reads the same
    on both paths): a child of ``ctx.nursery`` that asks on a plain call makes the call
    ``input_required`` for its key, as the tool's own ask does, never -32603; the retry
    that answers it completes."""
    async with running(McpApp.for_server(child_asking_server())) as client:
        first = input_required(await client.post(call("ask_in_child")))
        assert set(first["inputRequests"]) == {"ok"}
        answered = {"ok": {"action": "decline"}}
        retry = call("ask_in_child", 2, inputResponses=answered, requestState=first["requestState"])
        assert complete(await client.post(retry))["content"][0]["text"] == "child: decline"


async def test_state_alone_is_a_valid_round(asking: McpClient) -> None:
    """Spec-mandated (mrtr §Client Requirements 1: without inputRequests the client MAY
    retry at once; §Server Requirements 6: at least one of the two)."""
    uri = "test://items/7"
    first = input_required(await asking.post(request("resources/read", {"uri": uri})))
    assert "inputRequests" not in first
    retry = request(
        "resources/read", {"uri": uri, "requestState": first["requestState"]}, request_id=2
    )
    assert complete(await asking.post(retry))["contents"][0]["text"] == "item 7"


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/list", {}),
        ("prompts/list", {}),
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("server/discover", {}),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                "argument": {"name": "arg1", "value": "t"},
            },
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
async def test_other_requests_never_answer_input_required(
    client: McpClient, method: str, params: dict[str, Any]
) -> None:
    """Runner-scored (input-required-result-unsupported-methods/
    sep-2322-not-on-unsupported-requests): servers MUST NOT send InputRequiredResult on
    any other request, even one carrying inputResponses and requestState
    (mrtr §Supported Requests)."""
    retry_fields = {"inputResponses": {"user_name": ALICE}, "requestState": "v1.x.y"}
    result = result_of(await client.call(method, {**params, **retry_fields}))
    assert result["resultType"] == "complete"
    assert "inputRequests" not in result


# --- requestState (mrtr §Server Requirements (Basic Workflow) 3-5) ------------------


async def test_request_state_round_trips_through_the_client(client: McpClient) -> None:
    """Runner-scored (input-required-result-request-state/sep-2322-request-state-incomplete,
    -complete): an opaque string, echoed exactly, verified, then the handler's state."""
    first = await first_round(client, REQUEST_STATE)
    assert isinstance(first["requestState"], str)
    retry = call(
        REQUEST_STATE, 2, inputResponses={"confirm": CONFIRM}, requestState=first["requestState"]
    )
    assert complete(await client.post(retry))["content"][0]["text"].startswith("state-ok")


def tamperings(token: str) -> dict[str, str]:
    payload = token.split(".")[1]
    flipped = "A" if payload[3] != "A" else "B"
    return {
        "runner-suffix": token + "-TAMPERED",
        "truncated": token[:-5],
        "payload-char": token[:6] + flipped + token[7:],
        "dropped-signature": token.rsplit(".", 1)[0],
        "non-ascii": token[:5] + "é" + token[6:],
        "not-a-token": "hello",
    }


@pytest.mark.parametrize(
    "how",
    ["runner-suffix", "truncated", "payload-char", "dropped-signature", "non-ascii", "not-a-token"],
)
async def test_tampered_state_is_invalid_params(client: McpClient, how: str) -> None:
    """Runner-scored (input-required-result-tampered-state/sep-2322-reject-tampered-state; E-16):
    requestState is attacker-controlled; state that fails verification MUST be
    rejected (mrtr §Server Requirements 4): 400, -32602, and never -32603."""
    tool = "test_input_required_result_tampered_state"
    first = await first_round(client, tool)
    bad = tamperings(first["requestState"])[how]
    retry = call(tool, 2, inputResponses={"confirm": CONFIRM}, requestState=bad)
    error_of(await client.post(retry), 400, INVALID_PARAMS, 2)
    good = call(tool, 3, inputResponses={"confirm": CONFIRM}, requestState=first["requestState"])
    complete(await client.post(good), 3)


@pytest.mark.parametrize("state", [5, True, {"s": 1}, ["v1.a.b"], ""], ids=repr)
async def test_request_state_that_is_not_a_token_string_is_invalid_params(
    client: McpClient, state: Any
) -> None:
    """Spec-mandated (schema: requestState is a string; mrtr §Error Handling:
    otherwise -32602; E-16)."""
    retry = call(REQUEST_STATE, 2, inputResponses={"confirm": CONFIRM}, requestState=state)
    error_of(await client.post(retry), 400, INVALID_PARAMS, 2)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
async def test_any_single_byte_change_to_issued_state_is_invalid_params(
    data: st.DataObject,
) -> None:
    """Spec-mandated (mrtr §Server Requirements (Basic Workflow) 4; E-16), property: whatever
    byte of an issued requestState changes, the retry is 400 -32602."""
    app = build_app(sealer=StateSealer([KEY]))
    async with running(app) as client:
        token = (await first_round(client, REQUEST_STATE))["requestState"].encode()
        index = data.draw(st.integers(0, len(token) - 1), label="index")
        byte = data.draw(st.integers(0x20, 0xFF).filter(lambda b: b != token[index]), label="byte")
        changed = (token[:index] + bytes([byte]) + token[index + 1 :]).decode("latin-1")
        retry = call(REQUEST_STATE, 2, inputResponses={"confirm": CONFIRM}, requestState=changed)
        error_of(await client.post(retry), 400, INVALID_PARAMS, 2)


async def test_state_from_another_server_key_is_invalid_params() -> None:
    """Spec-mandated (mrtr §Server Requirements 4: integrity protected; E-16): state signed
    with another key (a foreign server) is refused."""
    async with running(build_app(sealer=StateSealer([b"one" * 11]))) as issuer:
        token = (await first_round(issuer, REQUEST_STATE))["requestState"]
    async with running(build_app(sealer=StateSealer([b"two" * 11]))) as other:
        retry = call(REQUEST_STATE, 2, inputResponses={"confirm": CONFIRM}, requestState=token)
        error_of(await other.post(retry), 400, INVALID_PARAMS, 2)
        await assert_still_serving(other)


async def test_a_retry_may_reach_another_process_sharing_the_key() -> None:
    """Spec-mandated (mrtr §Basic Workflow: the server processing the retry needs
    nothing beyond the retry itself, so no server state waits for it)."""
    async with running(build_app(sealer=StateSealer([KEY]))) as issuer:
        token = (await first_round(issuer, REQUEST_STATE))["requestState"]
    async with running(build_app(sealer=StateSealer([b"new-key" * 4, KEY]))) as other:
        retry = call(REQUEST_STATE, 2, inputResponses={"confirm": CONFIRM}, requestState=token)
        complete(await other.post(retry))


async def test_expired_state_is_invalid_params(asking: McpClient, clock: Clock) -> None:
    """Spec-mandated (mrtr §Server Requirements 5: a short expiry, rejecting state
    presented after it lapses; E-16)."""
    first = input_required(await asking.post(call("ask_with", arguments={"what": "roots"})))
    answer: dict[str, Any] = {"where": {"roots": []}}
    retry = call(
        "ask_with",
        2,
        arguments={"what": "roots"},
        inputResponses=answer,
        requestState=first["requestState"],
    )
    clock.now += StateSealer([KEY]).lifetime_s + 1
    error_of(await asking.post(retry), 400, INVALID_PARAMS, 2)
    clock.now -= 2
    complete(await asking.post(retry))


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/call", {"name": "test_input_required_result_tampered_state", "arguments": {}}),
        ("tools/call", {"name": REQUEST_STATE, "arguments": {"other": "arguments"}}),
        ("prompts/get", {"name": "test_input_required_result_prompt"}),
        ("resources/read", {"uri": "test://static-text"}),
    ],
    ids=["other-tool", "other-arguments", "other-method", "resource"],
)
async def test_state_presented_on_another_request_is_invalid_params(
    client: McpClient, method: str, params: dict[str, Any]
) -> None:
    """Spec-mandated (mrtr §Server Requirements 5: an identifier for the originating
    request, the method and a digest of its salient parameters, rejecting state
    presented on a request that does not match; E-16)."""
    token = (await first_round(client, REQUEST_STATE))["requestState"]
    retry = request(
        method,
        {**params, "inputResponses": {"confirm": CONFIRM}, "requestState": token},
        request_id=2,
    )
    error_of(await client.post(retry), 400, INVALID_PARAMS, 2)


@pytest.mark.parametrize("where", ["arguments", "inputResponses"])
async def test_no_nesting_the_parser_accepts_fails_a_round(client: McpClient, where: str) -> None:
    """Spec-mandated (mrtr §Error Handling: a protocol error is a JSON-RPC error with an
    appropriate code): whatever depth of arguments, or of an answer to a key nobody
    asked (carried in the next requestState), the body's parser accepts, sealing the
    round's state is answered 200 or -32602, never -32603 from a RecursionError."""
    tool = "confirm_delete"  # asks with ctx.ask: its state carries the answers given
    body = call(tool, 2, arguments={"filename": "f"}, inputResponses={})
    body["params"][where]["deep"] = DEEP
    statuses = set()
    async for depth, response in answers_at_every_depth(client, body):
        assert response.status in (200, 400), (depth, response.body)
        statuses.add(response.status)
    assert statuses == {200, 400}, statuses
    await assert_still_serving(client)


async def test_each_round_issues_new_state(client: McpClient) -> None:
    """Runner-scored (input-required-result-multi-round/sep-2322-multi-round-r1, -r2, -r3):
    round two asks anew with a different state; round three completes."""
    tool = "test_input_required_result_multi_round"
    r1 = await first_round(client, tool)
    r2 = input_required(
        await client.post(
            call(tool, 2, inputResponses={"step1": ALICE}, requestState=r1["requestState"])
        ),
        2,
    )
    assert set(r2["inputRequests"]) == {"step2"}
    assert r2["requestState"] != r1["requestState"]
    colour = {"step2": {"action": "accept", "content": {"color": "blue"}}}
    r3 = complete(
        await client.post(call(tool, 3, inputResponses=colour, requestState=r2["requestState"])), 3
    )
    assert r3["content"][0]["text"] == "Alice likes blue."


# --- capability gating (mrtr §Server Requirements (Basic Workflow) 7) ------------------


async def test_only_declared_capabilities_are_asked_for(client: McpClient) -> None:
    """Runner-scored (input-required-result-capability-check/
    sep-2322-respect-client-capabilities): a client declaring only sampling gets a
    non-empty inputRequests without elicitation."""
    message = request(
        "tools/call",
        {"name": "test_input_required_result_capabilities", "arguments": {}},
        capabilities={"sampling": {}},
    )
    result = input_required(await client.post(message))
    methods = {r["method"] for r in result["inputRequests"].values()}
    assert methods == {"sampling/createMessage"}


CAPABILITIES = "test_input_required_result_capabilities"
SAMPLING_AND_FORMS: dict[str, Any] = {"sampling": {}, "elicitation": {}}


async def capability_retry(client: McpClient, answers: dict[str, Any]) -> Any:
    """The capability fixture's first round, then its retry with ``answers``."""
    params: dict[str, Any] = {"name": CAPABILITIES, "arguments": {}}
    message = request("tools/call", params, capabilities=SAMPLING_AND_FORMS)
    first = input_required(await client.post(message))
    retry = {**params, "inputResponses": answers, "requestState": first["requestState"]}
    return await client.post(
        request("tools/call", retry, request_id=2, capabilities=SAMPLING_AND_FORMS)
    )


@pytest.mark.parametrize(
    "answers",
    [{"sample": {"x": 1}}, {"ask": {"action": "accept", "content": {"reply": 5}}}],
    ids=["no-sampling-result", "content-outside-form"],
)
async def test_the_capability_fixture_refuses_an_answer_it_cannot_read(
    client: McpClient, answers: dict[str, Any]
) -> None:
    """Spec-mandated (mrtr §Error Handling: an answer that cannot be parsed is a
    protocol error; client/elicitation §Form Mode Security): as every other fixture."""
    error_of(await capability_retry(client, answers), 400, INVALID_PARAMS, 2)


async def test_the_capability_fixture_counts_only_the_answers_it_asked_for(
    client: McpClient,
) -> None:
    """Spec-mandated (mrtr §Error Handling: what the server does not recognize is
    ignored, and missing information is asked for again): an answer only under a key
    it never asked is no answer; one valid answer completes."""
    unknown = await capability_retry(client, {"unrelated": {"x": 1}})
    assert set(input_required(unknown, 2)["inputRequests"]) == {"sample", "ask"}
    valid = {"ask": {"action": "accept", "content": {"reply": "hi"}}}
    text = complete(await capability_retry(client, valid))["content"][0]["text"]
    assert text == "Received 1 answer(s)."


@pytest.mark.parametrize(
    ("what", "declared", "required"),
    [
        ("elicitation", {"sampling": {}, "roots": {}}, {"elicitation": {}}),
        ("elicitation", {"elicitation": {"url": {}}}, {"elicitation": {}}),
        ("sampling", {"elicitation": {}, "roots": {}}, {"sampling": {}}),
        ("roots", {"elicitation": {}, "sampling": {}}, {"roots": {}}),
    ],
    ids=["elicitation", "elicitation-url-only", "sampling", "roots"],
)
async def test_an_input_request_for_an_undeclared_capability_is_never_sent(
    asking: McpClient, what: str, declared: dict[str, Any], required: dict[str, Any]
) -> None:
    """Spec-mandated (mrtr §Server Requirements 7: MUST NOT send an input request the
    client has not declared; basic/index §_meta: answer -32021 instead, with
    ``data.requiredCapabilities``; E-07)."""
    message = request(
        "tools/call", {"name": "ask_with", "arguments": {"what": what}}, capabilities=declared
    )
    response = await asking.post(message)
    error = error_of(response, 400, MISSING_REQUIRED_CLIENT_CAPABILITY)
    assert set(error["data"]["requiredCapabilities"]) == set(required)
    assert b"inputRequests" not in response.body
    await assert_still_serving(asking)


async def test_gating_uses_the_capabilities_of_the_retry(client: McpClient) -> None:
    """Spec-mandated (basic/index §Statelessness: capabilities come from this request
    only): a retry that no longer declares elicitation is not asked again by elicitation."""
    await first_round(client, ELICIT)
    retry = request(
        "tools/call",
        {"name": ELICIT, "arguments": {}, "inputResponses": {}},
        request_id=2,
        capabilities={"sampling": {}},
    )
    error_of(await client.post(retry), 400, MISSING_REQUIRED_CLIENT_CAPABILITY, 2)


# --- inputResponses (mrtr §InputResponses, §Error Handling) ----------------------------


async def test_a_missing_answer_is_asked_for_again(client: McpClient) -> None:
    """Runner-scored (input-required-result-missing-input-response/
    sep-2322-missing-response-rerequests): a retry without the needed answer gets a new
    InputRequiredResult, not an error (mrtr §Error Handling)."""
    retry = call(ELICIT, 2, inputResponses={"wrong_key": ALICE})
    result = input_required(await client.post(retry), 2)
    assert set(result["inputRequests"]) == {"user_name"}


async def test_an_ask_answered_a_key_a_round_keeps_every_earlier_answer() -> None:
    """Spec-mandated (mrtr §Error Handling: a retry missing information is asked for the
    missing information again, not refused): a tool asking three questions at once,
    answered one a round, is asked each round for exactly the ones still unanswered,
    and completes with every answer, the first round's too, never asking one again."""
    server = Server("three", "1.0.0")
    keys = ("a", "b", "c")

    @server.tool(description="Asks three questions at once.")
    async def three(ctx: RequestContext, arguments: dict[str, Any]) -> str:
        form = {"type": "object", "properties": {}}
        answers = await ctx.ask({key: Elicitation(f"{key}?", form) for key in keys})
        return ",".join(answers.elicitation(key).action for key in keys)

    given = {"a": {"action": "accept", "content": {}}, "b": {"action": "decline"}}
    given["c"] = {"action": "cancel"}
    async with running(McpApp.for_server(server)) as client:
        result = input_required(await client.post(call("three")))
        for request_id, key in enumerate(keys, start=2):
            assert set(result["inputRequests"]) == set(keys[request_id - 2 :])
            retry = call(
                "three",
                request_id,
                inputResponses={key: given[key]},
                requestState=result["requestState"],
            )
            response = await client.post(retry)
            if key != keys[-1]:
                result = input_required(response, request_id)
        assert complete(response, request_id)["content"] == [
            {"type": "text", "text": "accept,decline,cancel"}
        ]


async def test_unknown_answers_are_ignored(client: McpClient) -> None:
    """Runner-scored (input-required-result-ignore-extra-params/
    sep-2322-ignore-unexpected-params): the server SHOULD ignore what it does not need."""
    answers = {"user_name": ALICE, "extra_1": {"x": 1}, "extra_2": {"action": "accept"}}
    complete(await client.post(call(ELICIT, 2, inputResponses=answers)))


@pytest.mark.parametrize(
    "responses",
    [
        {"user_name": 12345},
        {"user_name": "Alice"},
        {"user_name": {"action": "maybe"}},
        {"user_name": {"action": "accept"}},
        [ALICE],
        "Alice",
    ],
    ids=["value-number", "value-string", "bad-action", "accept-without-content", "array", "string"],
)
async def test_malformed_input_responses_are_invalid_params(
    client: McpClient, responses: Any
) -> None:
    """Runner-scored (input-required-result-validate-input/sep-2322-validate-input-responses,
    sep-2322-error-on-protocol-error): servers SHOULD validate InputResponses and answer
    protocol errors with a JSON-RPC error (mrtr §Error Handling)."""
    error_of(await client.post(call(ELICIT, 2, inputResponses=responses)), 400, INVALID_PARAMS, 2)
    await assert_still_serving(client)


SAMPLING = "test_input_required_result_sampling"
ROOTS = "test_input_required_result_list_roots"


def model_answer(content: Any, **more: Any) -> dict[str, Any]:
    return {"role": "assistant", "model": "m", "content": content, **more}


@pytest.mark.parametrize(
    ("tool", "key", "answer"),
    [
        (ELICIT, "user_name", {"action": "accept", "content": {"name": {"first": "Al"}}}),
        (ELICIT, "user_name", {"action": "accept", "content": {"name": "Al", "tags": [1, 2]}}),
        (ELICIT, "user_name", {"action": "accept", "content": {"name": "Al", "x": None}}),
        (SAMPLING, "capital_question", model_answer({"type": "text"})),
        (SAMPLING, "capital_question", model_answer({"type": "text", "text": 5})),
        (SAMPLING, "capital_question", model_answer({"type": "image", "mimeType": "image/png"})),
        (SAMPLING, "capital_question", model_answer({"type": "audio", "data": "AA=="})),
        (SAMPLING, "capital_question", model_answer({"type": "tool_use", "name": "t"})),
        (SAMPLING, "capital_question", model_answer({"type": "tool_result", "content": []})),
        (SAMPLING, "capital_question", model_answer({"type": "resource_link", "uri": "a:b"})),
        (SAMPLING, "capital_question", model_answer([{"type": "text", "text": "a"}, {}])),
        (
            SAMPLING,
            "capital_question",
            model_answer({"type": "text", "text": "Paris"}, stopReason=5),
        ),
        (ROOTS, "client_roots", {"roots": [{"uri": "file:///a", "name": 5}]}),
        (ROOTS, "client_roots", {"roots": [{"uri": "https://example.com/a"}]}),
        (ROOTS, "client_roots", {"roots": [{"uri": "/home/user/a"}]}),
    ],
    ids=[
        "elicit-object-value",
        "elicit-number-list",
        "elicit-null",
        "text-without-text",
        "text-not-a-string",
        "image-without-data",
        "audio-without-mime-type",
        "tool-use-without-id-and-input",
        "tool-result-without-tool-use-id",
        "no-sampling-block",
        "one-block-of-two-bad",
        "stop-reason-number",
        "root-name-number",
        "root-not-file",
        "root-a-path",
    ],
)
async def test_an_answer_outside_its_result_type_is_invalid_params(
    client: McpClient, tool: str, key: str, answer: dict[str, Any]
) -> None:
    """Spec-mandated (basic/patterns/mrtr §Error Handling: the information inside
    ``inputResponses`` is checked, a protocol error otherwise; schema
    ``$defs.ElicitResult`` content values are strings, numbers, booleans or lists of
    strings; ``$defs.SamplingMessageContentBlock`` with each block's required members;
    ``stopReason`` a string; client/roots §Root: a ``file://`` URI and a string name)."""
    response = await client.post(call(tool, 2, inputResponses={key: answer}))
    error = error_of(response, 400, INVALID_PARAMS, 2)
    assert key in error["message"]
    await assert_still_serving(client)


@pytest.mark.parametrize(
    ("tool", "key", "answer"),
    [
        (ELICIT, "user_name", {"action": "accept", "content": {"name": "Al", "n": 2.5}}),
        (ELICIT, "user_name", {"action": "accept", "content": {"name": "Al", "c": ["r"]}}),
        (
            SAMPLING,
            "capital_question",
            model_answer(
                [
                    {"type": "text", "text": "Paris"},
                    {"type": "image", "data": "AA==", "mimeType": "image/png"},
                    {"type": "tool_use", "id": "c1", "name": "t", "input": {}},
                ],
                stopReason="toolUse",
            ),
        ),
        (
            ROOTS,
            "client_roots",
            {"roots": [{"uri": "file:///a", "name": "A"}, {"uri": "file:///b"}]},
        ),
    ],
    ids=["elicit-fraction", "elicit-choices", "sampling-blocks", "roots"],
)
async def test_an_answer_of_its_result_type_completes(
    client: McpClient, tool: str, key: str, answer: dict[str, Any]
) -> None:
    """Spec-mandated (schema.ts ``ElicitResult.content``: ``string | number | boolean |
    string[]``, spec-notes §59; ``CreateMessageResult.content``, a block or a list of
    blocks; client/roots §Root)."""
    complete(await client.post(call(tool, 2, inputResponses={key: answer})))


@pytest.mark.parametrize(
    ("method", "params", "key", "content"),
    [
        ("tools/call", {"name": ELICIT}, "user_name", {"name": 5}),
        ("tools/call", {"name": ELICIT}, "user_name", {}),
        ("tools/call", {"name": "test_input_required_result_multi_round"}, "step1", {}),
        ("prompts/get", {"name": "test_input_required_result_prompt"}, "user_context", {}),
        ("tools/call", {"name": "test_streaming_elicitation"}, "confirmation", {"ok": "yes"}),
    ],
    ids=["name-number", "name-missing", "round-one-empty", "prompt-empty", "confirm-string"],
)
async def test_an_accepted_answer_outside_the_form_asked_is_invalid_params(
    client: McpClient, method: str, params: dict[str, Any], key: str, content: dict[str, Any]
) -> None:
    """Spec-mandated (client/elicitation §Form Mode Security: servers SHOULD
    validate that received data matches the requested schema; basic/patterns/mrtr
    §Error Handling: a protocol error otherwise): the fixture's tools and prompt hold
    each accepted answer to the form they asked, as ``ctx.ask`` does, rather than
    greeting ``None``."""
    answer = {"action": "accept", "content": content}
    retry = request(
        method,
        {"arguments": {}, **params, "inputResponses": {key: answer}},
        request_id=2,
    )
    error = error_of(await client.post(retry), 400, INVALID_PARAMS, 2)
    assert key in error["message"]
    await assert_still_serving(client)


async def test_null_input_responses_read_as_absent(client: McpClient) -> None:
    """Runner-scored (input-required-result-validate-input, sending ``null``): not a
    complete result; presa reads null as absent (mrtr §InputResponses), so the
    question comes again."""
    input_required(await client.post(call(ELICIT, 2, inputResponses=None)), 2)


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_question_is_an_answer(client: McpClient, action: str) -> None:
    """Spec-mandated (schema $defs.ElicitResult: decline/cancel is an answer the tool handles)."""
    retry = call(ELICIT, 2, inputResponses={"user_name": {"action": action}})
    text = complete(await client.post(retry))["content"][0]["text"]
    assert text == f"The user chose to {action}."


async def test_several_inputs_are_asked_for_at_once(client: McpClient) -> None:
    """Runner-scored (input-required-result-multiple-input-requests/
    sep-2322-multiple-inputs-incomplete, -complete): elicitation, sampling and roots
    under unique keys, with state (mrtr §Server Requirements 2)."""
    tool = "test_input_required_result_multiple_inputs"
    first = await first_round(client, tool)
    methods = {r["method"] for r in first["inputRequests"].values()}
    assert methods == {"elicitation/create", "sampling/createMessage", "roots/list"}
    answers = {
        "user_name": ALICE,
        "greeting": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "Hi"}},
        "client_roots": {"roots": []},
    }
    retry = call(tool, 2, inputResponses=answers, requestState=first["requestState"])
    complete(await client.post(retry))


async def test_only_the_three_mrtr_methods_may_answer_input_required() -> None:
    """Spec-mandated (basic/patterns/mrtr: only tools/call, prompts/get and
    resources/read; mrtr §Supported Requests): a handler of any other method that tries is a
    server bug, answered -32603 with the generic message, and nothing is sent."""

    class Asking(Extension):
        id = "example.com/asking"

        def methods(self) -> list[Method]:
            async def ask(
                server: Server, ctx: RequestContext, params: dict[str, Any]
            ) -> dict[str, Any]:
                needed = InputRequired({"roots": ListRoots()})
                return rounds.close_round(ctx, needed, rounds.RoundTarget(ctx.method, "", None))

            return [Method("example/ask", ask)]

    server = Server("mrtr-guard", "1.0.0")
    server.add_extension(Asking())
    async with running(McpApp.for_server(server)) as guarded:
        error = error_of(await guarded.call("example/ask"), 500, INTERNAL_ERROR)
    assert error["message"] == "Internal error"
