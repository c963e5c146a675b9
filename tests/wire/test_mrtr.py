"""Multi round-trip shapes: input requests out, input responses back (mrtr §Core Types)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, cast

import pytest

from presa_trio.wire import mrtr
from presa_trio.wire.errors import INVALID_PARAMS, McpError
from presa_trio.wire.hints import SignatureError
from presa_trio.wire.meta import ClientCapabilities
from tests import wire_schema


def test_an_elicitation_is_a_bare_form_mode_request() -> None:
    """Spec-mandated (mrtr §InputRequests; schema $defs.ElicitRequest): method and
    params only, no jsonrpc and no id; form mode with message and requestedSchema."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    assert mrtr.Elicitation("Please provide your GitHub username", schema).to_wire() == {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "Please provide your GitHub username",
            "requestedSchema": schema,
        },
    }


def test_a_sampling_request_carries_messages_and_max_tokens() -> None:
    """Spec-mandated (mrtr §InputRequests example; schema $defs.CreateMessageRequest)."""
    request = mrtr.Sampling(
        "What is the capital of France?", 100, system_prompt="You are a helpful assistant."
    )
    assert request.to_wire() == {
        "method": "sampling/createMessage",
        "params": {
            "messages": [
                {
                    "role": "user",
                    "content": {"type": "text", "text": "What is the capital of France?"},
                }
            ],
            "systemPrompt": "You are a helpful assistant.",
            "maxTokens": 100,
        },
    }


@pytest.mark.parametrize(
    ("build", "line"),
    [
        (lambda: mrtr.Elicitation("m", {"type": "object"}), "a form needs its properties"),
        (
            lambda: mrtr.Elicitation(cast(str, 5), {"type": "object", "properties": {}}),
            "the message is a string",
        ),
        (lambda: mrtr.Sampling(cast(str, None), 10), "the prompt and system prompt"),
        (lambda: mrtr.Sampling("p", 10, system_prompt=cast(str, 3)), "the prompt and system"),
        (lambda: mrtr.Sampling("p", cast(int, "10")), "maxTokens is an integer"),
        (lambda: mrtr.Sampling("p", cast(int, 2.5)), "maxTokens is an integer"),
        (lambda: mrtr.UrlElicitation(cast(str, None), URL), "the message is a string"),
    ],
    ids=[
        "form-without-properties",
        "message-number",
        "prompt-none",
        "system-number",
        "max-str",
        "max-fraction",
        "url-message-none",
    ],
)
def test_a_request_that_would_not_validate_is_never_built(
    build: Callable[[], mrtr.InputRequest], line: str
) -> None:
    """Spec-mandated (schema.ts ``ElicitRequestFormParams``, ``CreateMessageRequestParams``;
    schema.json ``$defs.CreateMessageRequestParams``: ``maxTokens`` an integer): an input
    request is refused when it is built, the server's bug, never sent."""
    with pytest.raises(SignatureError, match=line):
        build()


URL = "https://mcp.example.com/ui/set_api_key"


def test_a_url_elicitation_is_a_url_mode_request() -> None:
    """Spec-mandated (client/elicitation §URL Mode Elicitation Requests; schema.ts
    ``ElicitRequestURLParams``): mode ``url``, the message and the URL, nothing else."""
    assert mrtr.UrlElicitation("Please provide your API key to continue.", URL).to_wire() == {
        "method": "elicitation/create",
        "params": {
            "mode": "url",
            "message": "Please provide your API key to continue.",
            "url": URL,
        },
    }


@pytest.mark.parametrize(
    ("url", "line"),
    [
        ("/ui/set_api_key", "absolute, https:// (or http://) and a host"),
        ("mcp.example.com/ui", "absolute, https:// (or http://) and a host"),
        ("https:///ui", "absolute, https:// (or http://) and a host"),
        ("mailto:keys@example.com", "absolute, https:// (or http://) and a host"),
        ("javascript:alert(1)", "absolute, https:// (or http://) and a host"),
        ("ftp://files.example.com/key", "absolute, https:// (or http://) and a host"),
        ("", "absolute, https:// (or http://) and a host"),
        ("https://example.com/set key", "RFC 3986's characters"),
        ("https://exämple.com/", "RFC 3986's characters"),
        ("https://example.com/%zz", "RFC 3986's characters"),
        (None, "RFC 3986's characters"),
        ("https://[::1/", "host or port cannot be read"),
        ("https://example.com:99999/", "host or port cannot be read"),
        ("https://alice:s3cret@example.com/", "no user information"),
    ],
    ids=[
        "relative",
        "no-scheme",
        "no-host",
        "mailto",
        "javascript",
        "ftp-with-a-host",
        "empty",
        "space",
        "not-ascii",
        "bad-escape",
        "none",
        "bad-ipv6",
        "bad-port",
        "user-info",
    ],
)
def test_a_url_elicitation_to_no_url_is_never_built(url: Any, line: str) -> None:
    """Spec-mandated (client/elicitation §URL Mode Elicitation Requests: the ``url``
    MUST contain a valid URL; §Safe URL Handling: no credentials in it, and the client
    shows its host; spec-notes §64): refused when built, a one-line ``SignatureError``
    naming the URL."""
    with pytest.raises(
        SignatureError, match=f"not a URL to open, {re.escape(repr(url))}: .*{re.escape(line)}"
    ):
        mrtr.UrlElicitation("Set your API key", url)


@pytest.mark.parametrize(
    "url",
    [URL, "http://localhost:8000/connect?state=1#top", "https://[::1]:8443/", "HTTPS://EX.COM"],
)
def test_a_url_elicitation_takes_an_absolute_web_url(url: str) -> None:
    """Spec-mandated (client/elicitation §Safe URL Handling: HTTPS SHOULD, so plain
    HTTP, as in development, is allowed)."""
    assert mrtr.UrlElicitation("m", url).url == url


@pytest.mark.parametrize(
    ("declared", "allowed"),
    [
        ({"elicitation": {"url": {}}}, True),
        ({"elicitation": {"form": {}, "url": {}}}, True),
        ({"elicitation": {}}, False),
        ({"elicitation": {"form": {}}}, False),
        ({"sampling": {}, "roots": {}}, False),
    ],
    ids=["url", "both", "empty-is-form-only", "form", "none"],
)
def test_a_url_elicitation_is_allowed_only_by_url_mode(
    declared: dict[str, Any], allowed: bool
) -> None:
    """Spec-mandated (client/elicitation §Capabilities: ``elicitation: {}`` is form mode
    only; servers MUST NOT send a mode the client does not support)."""
    assert mrtr.UrlElicitation("m", URL).allowed_by(ClientCapabilities(declared)) is allowed


def test_a_roots_request_has_no_params() -> None:
    """Spec-mandated (schema $defs.ListRootsRequest; mrtr §InputRequests)."""
    assert mrtr.ListRoots().to_wire() == {"method": "roots/list"}


@pytest.mark.parametrize(
    ("request_", "needs"),
    [
        (mrtr.Elicitation("m", {"type": "object", "properties": {}}), {"elicitation": {}}),
        (mrtr.Sampling("p", 10), {"sampling": {}}),
        (mrtr.ListRoots(), {"roots": {}}),
    ],
    ids=["elicitation", "sampling", "roots"],
)
def test_each_input_request_is_allowed_only_by_its_capability(
    request_: mrtr.InputRequest, needs: dict[str, Any]
) -> None:
    """Spec-mandated (mrtr §Server Requirements 7: MUST NOT send an input request
    the client has not declared)."""
    everything: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
    others = {k: v for k, v in everything.items() if k not in needs}
    assert request_.allowed_by(ClientCapabilities(needs))
    assert request_.allowed_by(ClientCapabilities(everything))
    assert not request_.allowed_by(ClientCapabilities(others))


def test_form_elicitation_is_not_allowed_by_url_mode_alone() -> None:
    """Spec-mandated (client/elicitation §Capabilities): a client declaring only
    ``url`` mode cannot answer a form."""
    form = mrtr.Elicitation("m", {"type": "object", "properties": {}})
    assert not form.allowed_by(ClientCapabilities({"elicitation": {"url": {}}}))


def test_input_required_needs_requests_or_state() -> None:
    """Spec-mandated (mrtr §Server Requirements 6: at least one of inputRequests or
    requestState)."""
    with pytest.raises(ValueError, match="needs"):
        mrtr.InputRequired()
    assert mrtr.InputRequired(state={"round": 1}).requests == {}
    assert mrtr.InputRequired({"k": mrtr.ListRoots()}).state is None


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, {}),
        ({"inputResponses": None}, {}),
        ({"inputResponses": {}}, {}),
        ({"inputResponses": {"a": {"action": "cancel"}}}, {"a": {"action": "cancel"}}),
    ],
    ids=["absent", "null", "empty", "one"],
)
def test_input_responses_are_an_object_of_objects(
    params: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Spec-mandated (schema $defs.InputResponses: optional, so null may be read as absent)."""
    assert mrtr.parse_input_responses(params) == expected


@pytest.mark.parametrize(
    "responses",
    [[], "yes", 3, {"user_name": 12345}, {"user_name": None}, {"user_name": ["accept"]}],
    ids=["array", "string", "number", "value-number", "value-null", "value-array"],
)
def test_malformed_input_responses_are_invalid_params(responses: Any) -> None:
    """Runner-scored (input-required-result-validate-input/sep-2322-validate-input-responses):
    not an object, or a value that is not an object, is -32602 (mrtr §Error Handling)."""
    with pytest.raises(McpError) as caught:
        mrtr.parse_input_responses({"inputResponses": responses})
    assert caught.value.code == INVALID_PARAMS


def test_elicit_results_are_read_by_action() -> None:
    """Spec-mandated (schema $defs.ElicitResult): accept carries content; decline and
    cancel need none."""
    assert mrtr.read_elicit_result({"action": "accept", "content": {"name": "Alice"}}) == (
        mrtr.ElicitResult("accept", {"name": "Alice"})
    )
    assert mrtr.read_elicit_result({"action": "decline"}) == mrtr.ElicitResult("decline")
    assert mrtr.read_elicit_result({"action": "cancel"}) == mrtr.ElicitResult("cancel")


def test_an_answer_to_a_url_mode_request_has_no_content() -> None:
    """Spec-mandated (client/elicitation §Response Actions: for URL mode the content is
    omitted; schema.ts ``ElicitResult.content``: only for form mode; spec-notes §64):
    an accept without content reads, one with content is -32602; a decline or a
    cancel reads as it does for a form."""
    for action in ("accept", "decline", "cancel"):
        assert mrtr.read_elicit_result({"action": action}, "url") == mrtr.ElicitResult(action)
    for content in ({}, {"apiKey": "s3cret"}):
        with pytest.raises(McpError, match="URL-mode request carries no content") as caught:
            mrtr.read_elicit_result({"action": "accept", "content": content}, "url")
        assert caught.value.code == INVALID_PARAMS
    asked = mrtr.UrlElicitation("m", URL).to_wire()
    mrtr.check_answer(asked, "k", {"action": "accept"})
    with pytest.raises(McpError, match=r"inputResponses\['k'\]: An accepted ElicitResult to a URL"):
        mrtr.check_answer(asked, "k", {"action": "accept", "content": {}})
    answers = mrtr.Answers({"k": {"action": "accept"}}, {"k": "url"})
    assert answers.elicitation("k") == answers["k"] == mrtr.ElicitResult("accept")


@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"action": "maybe"},
        {"action": "accept"},
        {"action": "accept", "content": "Alice"},
        {"action": "accept", "content": {"name": {"first": "Alice"}}},
    ],
    ids=[
        "no-action",
        "unknown-action",
        "accept-without-content",
        "content-not-object",
        "content-value-object",
    ],
)
def test_a_malformed_elicit_result_is_invalid_params(raw: dict[str, Any]) -> None:
    """Spec-mandated (mrtr §Error Handling: protocol errors SHOULD be a JSON-RPC error;
    schema.ts ``ElicitResult.content``: each value a string, number, boolean or list of
    strings, never an object)."""
    with pytest.raises(McpError) as caught:
        mrtr.read_elicit_result(raw)
    assert caught.value.code == INVALID_PARAMS


def test_a_sampling_result_yields_its_text() -> None:
    """Runner-scored (input-required-result-basic-sampling/sep-2322-sampling-complete):
    the runner's CreateMessageResult is read."""
    result = mrtr.read_sampling_result(
        {
            "role": "assistant",
            "content": {"type": "text", "text": "The capital of France is Paris."},
            "model": "test-model",
            "stopReason": "endTurn",
        }
    )
    assert result == mrtr.SamplingResult(
        "assistant", "test-model", "The capital of France is Paris.", "endTurn"
    )


@pytest.mark.parametrize(
    "raw",
    [
        {"content": {"type": "text", "text": "x"}, "model": "m"},
        {"role": "assistant", "content": {"type": "text", "text": "x"}},
        {"role": "assistant", "model": "m"},
        {"role": "assistant", "model": "m", "content": []},
        {"role": "assistant", "model": "m", "content": "x"},
        {
            "role": "assistant",
            "model": "m",
            "content": {"type": "tool_use", "id": "t", "name": "n"},
        },
    ],
    ids=[
        "no-role",
        "no-model",
        "no-content",
        "empty-content",
        "content-string",
        "tool-use-no-input",
    ],
)
def test_a_malformed_sampling_result_is_invalid_params(raw: dict[str, Any]) -> None:
    """Spec-mandated (schema $defs.CreateMessageResult, $defs.ToolUseContent: a
    ``tool_use`` block requires its ``input`` object; mrtr §Error Handling)."""
    with pytest.raises(McpError) as caught:
        mrtr.read_sampling_result(raw)
    assert caught.value.code == INVALID_PARAMS


def test_roots_are_read_from_a_list_roots_result() -> None:
    """Runner-scored (input-required-result-basic-list-roots/sep-2322-list-roots-complete)."""
    roots = [{"uri": "file:///test/root", "name": "Test Root"}]
    assert mrtr.read_roots({"roots": roots}) == roots
    # client/roots §Root: a file:// URI, and an optional name that is a string.
    for wrong in (
        {"roots": [{"name": "no uri"}]},
        {"roots": [{"uri": "file:///r", "name": 5}]},
        {},
    ):
        with pytest.raises(McpError) as caught:
            mrtr.read_roots(wrong)
        assert caught.value.code == INVALID_PARAMS


def test_an_answer_read_as_another_kind_is_a_type_error() -> None:
    """presa-defined: a tool that reads an answer as a kind it did not ask for
    made a mistake, a ``TypeError``, not the client's -32602."""
    answers = mrtr.Answers({"ok": {"action": "decline"}, "where": {"roots": []}})
    assert answers.elicitation("ok").action == "decline"
    assert answers.roots("where") == []
    for read, what in ((answers.sampling, "a sampling request"), (answers.roots, "a roots/list")):
        with pytest.raises(TypeError, match=f"the answer under 'ok' is not the answer to {what}"):
            read("ok")
    with pytest.raises(TypeError, match="the answer under 'where' is not the answer to an elicit"):
        answers.elicitation("where")


#: A form with a field of every kind the spec allows (client/elicitation §Requested Schema).
EVERY_FIELD_FORM = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email", "minLength": 3, "default": "a@b.c"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
        "score": {"type": "number", "title": "Score", "description": "From 0 to 1"},
        "ok": {"type": "boolean", "default": False},
        "colour": {"type": "string", "enum": ["red", "green"]},
        "hue": {"type": "string", "oneOf": [{"const": "#f00", "title": "Red"}]},
        "legacy": {"type": "string", "enum": ["a"], "enumNames": ["A"]},
        "tags": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": ["x"]}},
        "picks": {"type": "array", "items": {"anyOf": [{"const": "y", "title": "Y"}]}},
    },
    "required": ["email"],
}


@pytest.mark.parametrize(
    "request_",
    [
        mrtr.Elicitation("Fill in", EVERY_FIELD_FORM),
        mrtr.UrlElicitation("Set your API key", URL),
        mrtr.Sampling("p", 10, system_prompt="s"),
        mrtr.ListRoots(),
    ],
    ids=["elicitation", "url-elicitation", "sampling", "roots"],
)
def test_every_kind_of_input_request_validates_against_the_schema(
    request_: mrtr.InputRequest,
) -> None:
    """Spec-mandated (mrtr §Server Requirements 2: each value MUST be an ElicitRequest,
    a CreateMessageRequest or a ListRootsRequest; schema.json ``$defs.InputRequest``)."""
    found = wire_schema.problems(
        request_.to_wire(), wire_schema.ref(f"{wire_schema.CORE}#/$defs/InputRequest")
    )
    assert found == []


DATED_FORM = mrtr.Elicitation(
    "When?",
    {
        "type": "object",
        "properties": {
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "mail": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "score": {"type": "number"},
        },
    },
)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ({"day": "2026-02-30"}, "content.day: '2026-02-30' is not an ISO 8601 date"),
        ({"at": "tomorrow"}, "content.at: 'tomorrow' is not an ISO 8601 date-time"),
        ({"score": 10**400}, "content.score: the number is beyond the range of a double"),
        (
            {"extra": "kept", "day": "2026-02-30"},
            "content.day: '2026-02-30' is not an ISO 8601 date",
        ),
        (
            {"day": "2026-07-28", "at": "2026-07-28T10:00:00Z", "mail": "x", "site": "y"}
            | {"score": 10**300},
            None,
        ),
    ],
    ids=[
        "no-date",
        "no-date-time",
        "beyond-a-double",
        "after-a-field-not-asked",
        "read-and-annotations",
    ],
)
def test_a_field_is_read_where_the_answer_arrives(
    content: dict[str, Any], problem: str | None
) -> None:
    """presa-defined (spec-notes §63; client/elicitation §Form Mode Security): a field
    of format ``date`` or ``date-time`` must hold one the typed reader reads, and a
    ``number`` field a number a double holds; ``email`` and ``uri`` stay annotations."""
    answer = {"action": "accept", "content": content}
    if problem is None:
        mrtr.check_answer(DATED_FORM.to_wire(), "when", answer)
        return
    with pytest.raises(McpError) as refused:
        mrtr.check_answer(DATED_FORM.to_wire(), "when", answer)
    assert refused.value.code == INVALID_PARAMS
    assert refused.value.message == f"inputResponses['when']: {problem}"
