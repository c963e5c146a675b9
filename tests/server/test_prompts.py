"""``prompts/list``, ``prompts/get`` and ``completion/complete`` (prompts; completion)."""

from __future__ import annotations

from typing import Any

import pytest

from presa_trio.http.app import McpApp
from presa_trio.server import RequestContext, Server
from presa_trio.testing import McpClient, running
from presa_trio.wire import models
from presa_trio.wire.errors import INVALID_PARAMS
from tests.expect import assert_handler_fault, assert_still_serving, error_of, result_of


async def test_every_prompt_has_a_name_and_description(client: McpClient) -> None:
    """Runner-scored (prompts-list/prompts-list)."""
    prompts = result_of(await client.call("prompts/list"))["prompts"]
    assert prompts
    assert all(p["name"] and p["description"] for p in prompts)


async def test_a_prompt_renders_its_arguments(client: McpClient) -> None:
    """Runner-scored (prompts-get-with-args/prompts-get-with-args)."""
    params = {
        "name": "test_prompt_with_arguments",
        "arguments": {"arg1": "testValue1", "arg2": "testValue2"},
    }
    (message,) = result_of(await client.call("prompts/get", params))["messages"]
    assert message["role"] == "user"
    assert "testValue1" in message["content"]["text"]
    assert "testValue2" in message["content"]["text"]


async def test_a_prompt_can_embed_a_resource_and_an_image(client: McpClient) -> None:
    """Runner-scored (prompts-get-embedded-resource, prompts-get-with-image)."""
    params = {
        "name": "test_prompt_with_embedded_resource",
        "arguments": {"resourceUri": "test://x"},
    }
    messages = result_of(await client.call("prompts/get", params))["messages"]
    assert messages[0]["content"]["resource"]["uri"] == "test://x"
    image = result_of(await client.call("prompts/get", {"name": "test_prompt_with_image"}))
    assert image["messages"][0]["content"]["mimeType"] == "image/png"


@pytest.mark.parametrize(
    "params",
    [
        {"name": "no_such_prompt"},
        {"name": "test_prompt_with_arguments", "arguments": {"arg1": "only one"}},
        {"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": 2}},
        {"name": "test_simple_prompt", "arguments": ["a"]},
        {},
        {"name": "test_prompt_with_embedded_resource", "arguments": {"resourceUri": "x"}},
        {"name": ["test_simple_prompt"]},
        {"name": {"name": "test_simple_prompt"}},
    ],
    ids=[
        "unknown",
        "missing-required-argument",
        "argument-not-string",
        "arguments-array",
        "no-name",
        "resource-uri-not-a-uri",
        "name-array",
        "name-object",
    ],
)
async def test_bad_prompt_requests_are_invalid_params(
    client: McpClient, params: dict[str, Any]
) -> None:
    """Spec-mandated (server/prompts §Error Handling: unknown prompt or missing
    required argument is -32602; arguments are strings; §Security: validate all
    prompt inputs, so the demo's ``resourceUri`` that is no URI is -32602 too; E-14)."""
    error_of(await client.call("prompts/get", params), 400, INVALID_PARAMS)
    await assert_still_serving(client)


async def test_completion_answers_with_a_values_array(client: McpClient) -> None:
    """Runner-scored (completion-complete/completion-complete)."""
    params = {
        "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "test"},
    }
    completion = result_of(await client.call("completion/complete", params))["completion"]
    assert completion["values"] == []


async def test_a_resource_uri_is_a_completion_reference_as_a_template_is() -> None:
    """Spec-mandated (server/utilities/completion §Reference Types, §CompleteRequest:
    ``ref/resource`` names a resource URI or a URI template): a concrete resource's URI
    is a known reference, and its completion handler answers."""
    server = Server("completing", "1.0.0")

    @server.resource("test://notes", name="notes")
    async def notes(ctx: RequestContext) -> str:
        return "notes"

    @server.completion("ref/resource", "test://notes")
    async def complete_notes(
        ctx: RequestContext, argument: str, value: str, context: dict[str, str]
    ) -> models.Completion:
        return models.Completion(values=[f"{argument}={value}"])

    params = {
        "ref": {"type": "ref/resource", "uri": "test://notes"},
        "argument": {"name": "page", "value": "1"},
    }
    async with running(McpApp.for_server(server)) as client:
        completion = result_of(await client.call("completion/complete", params))["completion"]
    assert completion["values"] == ["page=1"]


async def test_a_template_is_a_completion_reference_without_a_handler_too() -> None:
    """Spec-mandated (server/utilities/completion §Reference Types: ``ref/resource``
    names a URI template; §Capabilities: a server that supports completions MUST
    declare ``completions``): a server whose only offer is a resource template serves
    completions of it and declares them, and a completion of the template with no
    handler registered for it is an empty one (no values, none more), not -32601 nor
    -32602."""
    server = Server("completing", "1.0.0")

    @server.resource_template("test://notes/{day}", name="notes")
    async def notes(ctx: RequestContext, variables: dict[str, str]) -> str:
        return variables["day"]

    params = {
        "ref": {"type": "ref/resource", "uri": "test://notes/{day}"},
        "argument": {"name": "day", "value": "mo"},
    }
    async with running(McpApp.for_server(server)) as client:
        discovered = result_of(await client.call("server/discover"))
        completion = result_of(await client.call("completion/complete", params))["completion"]
    assert "completions" in discovered["capabilities"]
    assert completion == {"values": [], "total": 0, "hasMore": False}


async def test_a_completion_of_exactly_100_values_is_answered() -> None:
    """Spec-mandated (server/utilities/completion §Completion Results: maximum 100
    items per response): 100 values are within the bound and reach the client."""
    server = Server("completing", "1.0.0")

    @server.prompt("greet", description="Greets.")
    async def greet(ctx: RequestContext, who: str) -> str:
        return f"Hello, {who}"

    @server.completion("ref/prompt", "greet")
    async def complete_greet(
        ctx: RequestContext, argument: str, value: str, context: dict[str, str]
    ) -> models.Completion:
        return models.Completion(values=[f"{value}{n}" for n in range(100)])

    params = {
        "ref": {"type": "ref/prompt", "name": "greet"},
        "argument": {"name": "who", "value": "Al"},
    }
    async with running(McpApp.for_server(server)) as client:
        completion = result_of(await client.call("completion/complete", params))["completion"]
    assert completion["values"] == [f"Al{n}" for n in range(100)]


async def test_an_argument_the_prompt_does_not_declare_is_the_handlers_to_judge() -> None:
    """presa-defined (spec-notes §69: completion §Error Handling makes an invalid prompt
    name -32602 and says nothing of an argument name the reference does not declare):
    the handler is asked about any argument name and answers as it sees fit; without a
    handler, the answer is no values."""
    server = Server("completing", "1.0.0")

    @server.prompt("greet", description="Greets.")
    async def greet(ctx: RequestContext, who: str) -> str:
        return f"Hello, {who}"

    @server.prompt("plain", description="Plain.")
    async def plain(ctx: RequestContext) -> str:
        return "plain"

    @server.completion("ref/prompt", "greet")
    async def complete_greet(
        ctx: RequestContext, argument: str, value: str, context: dict[str, str]
    ) -> models.Completion:
        return models.Completion(values=[] if argument != "who" else [f"{value}bert"])

    async with running(McpApp.for_server(server)) as client:
        answers = [
            result_of(await client.call("completion/complete", params))["completion"]["values"]
            for params in (
                {
                    "ref": {"type": "ref/prompt", "name": "greet"},
                    "argument": {"name": "who", "value": "Al"},
                },
                {
                    "ref": {"type": "ref/prompt", "name": "greet"},
                    "argument": {"name": "mood", "value": ""},
                },
                {
                    "ref": {"type": "ref/prompt", "name": "plain"},
                    "argument": {"name": "x", "value": ""},
                },
            )
        ]
    assert answers == [["Albert"], [], []]


#: A completion of a prompt the fixture has, which registers no completion handler for it.
SIMPLE_PROMPT_ARGUMENT = {
    "ref": {"type": "ref/prompt", "name": "test_simple_prompt"},
    "argument": {"name": "a", "value": ""},
}


@pytest.mark.parametrize(
    "params",
    [
        {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}},
        {
            "ref": {"type": "ref/resource", "uri": "test://x/{id}"},
            "argument": {"name": "id", "value": ""},
        },
        {"ref": {"type": "ref/other", "name": "x"}, "argument": {"name": "a", "value": ""}},
        {"ref": {"type": "ref/prompt", "name": "test_simple_prompt"}, "argument": {"name": "a"}},
        {"argument": {"name": "a", "value": ""}},
        {**SIMPLE_PROMPT_ARGUMENT, "context": []},
        {**SIMPLE_PROMPT_ARGUMENT, "context": {"arguments": {"a": 1}}},
        {**SIMPLE_PROMPT_ARGUMENT, "ref": {"type": "ref/prompt", "name": ["test_simple_prompt"]}},
        {**SIMPLE_PROMPT_ARGUMENT, "ref": {"type": "ref/resource", "uri": {"uri": "test://x"}}},
    ],
    ids=[
        "unknown-prompt",
        "unknown-template",
        "unknown-ref-type",
        "no-value",
        "no-ref",
        "context-not-an-object",
        "context-arguments-not-strings",
        "prompt-name-not-a-string",
        "resource-uri-not-a-string",
    ],
)
async def test_bad_completion_requests_are_invalid_params(
    client: McpClient, params: dict[str, Any]
) -> None:
    """Spec-mandated (server/utilities/completion §Error Handling, §Security; schema
    ``$defs.CompleteRequestParams``; E-14): every part of the request is checked,
    whether or not a completion handler is registered for the reference."""
    error_of(await client.call("completion/complete", params), 400, INVALID_PARAMS)


@pytest.mark.parametrize(
    "output",
    [
        None,
        {"messages": "x"},
        ["text"],
        models.GetPromptResult(["text"]),  # type: ignore[list-item]
        [models.PromptMessage("system", models.TextContent("Be brief."))],  # type: ignore[arg-type]
        [models.PromptMessage("user", "Summarise this.")],  # type: ignore[arg-type]
        [models.PromptMessage("user", models.TextContent(3))],  # type: ignore[arg-type]
        [models.PromptMessage("user", models.TextContent(None))],  # type: ignore[arg-type]
        [models.PromptMessage("user", models.ImageContent("AAAA", None))],  # type: ignore[arg-type]
        [models.PromptMessage("user", models.ImageContent("a PNG, not base64", "image/png"))],
        [
            models.PromptMessage(
                "user", models.EmbeddedResource(models.TextResourceContents("a://b", "t"))
            )
        ],
        [
            models.PromptMessage(
                "user", models.EmbeddedResource(models.TextResourceContents("b", "t", "text/plain"))
            )
        ],
        [models.PromptMessage("user", models.ImageContent("AAAA", ""))],
        [models.PromptMessage("user", models.AudioContent("AAAA", "wav"))],
        [models.PromptMessage("user", models.ImageContent("AAAA", "image/"))],
        [models.PromptMessage("user", models.ImageContent("AAAA", "image/.png"))],
        [
            models.PromptMessage(
                "user", models.EmbeddedResource(models.TextResourceContents("a://b", "t", ""))
            )
        ],
        models.GetPromptResult([], description=5),  # type: ignore[arg-type]
    ],
    ids=[
        "none",
        "dict",
        "strings",
        "result-of-strings",
        "system-role",
        "string-content",
        "number-text",
        "text-none",
        "image-without-mime-type",
        "image-not-base64",
        "embedded-without-mime-type",
        "embedded-uri-without-scheme",
        "image-mime-type-empty",
        "audio-mime-type-no-subtype",
        "image-mime-type-empty-subtype",
        "image-mime-subtype-not-alphanumeric-first",
        "embedded-mime-type-empty",
        "description-number",
    ],
)
async def test_a_prompt_returning_no_prompt_result_is_an_internal_error(
    caplog: pytest.LogCaptureFixture, output: Any
) -> None:
    """Spec-mandated (prompts §Error Handling: internal errors are -32603; schema
    ``$defs.GetPromptResult``; prompts §Embedded Resources: an embedded resource
    MUST include a valid resource URI and the appropriate MIME type; §Image Content,
    §Audio Content: a valid MIME type, whose type and subtype each start with a letter
    or digit, RFC 6838 §4.2; E-05): what a
    prompt returns becomes a valid result or a generic -32603 with a JSON-RPC body,
    never a result the schema or the page refuses nor a bare HTTP 500; the log names
    the prompt."""
    server = Server("prompts", "1.0.0")

    @server.prompt(description="Returns what the test gives it")
    async def broken(ctx: RequestContext, arguments: dict[str, str]) -> Any:
        return output

    async with running(McpApp.for_server(server)) as client:
        await assert_handler_fault(
            client, caplog, "prompts/get", {"name": "broken"}, "prompt broken returned"
        )


@pytest.mark.parametrize(
    "output",
    [
        None,
        ["a"],
        models.Completion(values=[1]),  # type: ignore[list-item]
        models.Completion(values=["a"] * 101),
        models.Completion(values=["a"], total="many"),  # type: ignore[arg-type]
        models.Completion(values=["a"], has_more="yes"),  # type: ignore[arg-type]
    ],
    ids=["none", "list", "number-values", "over-100-values", "total-text", "has-more-text"],
)
async def test_a_completion_handler_returning_no_completion_is_an_internal_error(
    caplog: pytest.LogCaptureFixture, output: Any
) -> None:
    """Spec-mandated (completion §Error Handling, §Completion Results: at most 100
    values; schema ``$defs.CompleteResult``; E-05): a valid result or a generic -32603;
    the log names the reference."""
    server = Server("completions", "1.0.0")

    @server.prompt(description="A prompt to complete")
    async def topic(ctx: RequestContext, arguments: dict[str, str]) -> str:
        return "t"

    @server.completion("ref/prompt", "topic")
    async def complete(
        ctx: RequestContext, argument: str, value: str, context_arguments: dict[str, str]
    ) -> Any:
        return output

    params = {
        "ref": {"type": "ref/prompt", "name": "topic"},
        "argument": {"name": "a", "value": ""},
    }
    async with running(McpApp.for_server(server)) as client:
        await assert_handler_fault(
            client, caplog, "completion/complete", params, "completion of ref/prompt topic returned"
        )
