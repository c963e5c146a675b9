"""Multi round-trip requests: input requests out, input responses back.

A handler that needs something from the client (a form answer, consent to
open a URL, a model completion, the client's roots) does not call the
client. It returns an :class:`InputRequired`, and the client retries the
same request with ``inputResponses`` (and the ``requestState`` it was
given). This module holds the shapes; signing the state is
:mod:`presa_trio.wire.request_state`.

Spec: 2026-07-28 basic/patterns/mrtr; SEP-2322; schema ``$defs.InputRequests``,
``$defs.InputResponses``, ``$defs.InputRequiredResult``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Literal, TypeVar

import attrs

from presa_trio.wire.errors import InvalidParams, MissingRequiredClientCapability
from presa_trio.wire.forms import check_content, check_form
from presa_trio.wire.hints import SignatureError
from presa_trio.wire.meta import ClientCapabilities
from presa_trio.wire.models import JSONObject
from presa_trio.wire.schemas import CompiledSchema, SchemaError
from presa_trio.wire.well_formed import (
    are_strings,
    is_integer,
    is_number,
    is_optional_text,
    is_text,
    url_problem,
)

#: The modes of ``elicitation/create`` (client/elicitation §Elicitation Requests).
ElicitationMode = Literal["form", "url"]


def check_message(message: Any) -> None:
    """Refuse an elicitation's message that is no string (schema.ts ``ElicitRequestParams``)."""
    if not isinstance(message, str):
        raise SignatureError(f"elicitation/create: the message is a string, not {message!r}")


@attrs.frozen
class Elicitation:
    """``elicitation/create`` in form mode: ask the user to fill a flat form.

    The form is held to the spec's subset when the request is built
    (:func:`~presa_trio.wire.forms.check_form`), a
    :class:`~presa_trio.wire.hints.SignatureError` otherwise, so a request
    that would not validate is never sent (schema.ts ``ElicitRequestFormParams``).
    """

    message: str
    requested_schema: JSONObject

    capability = "elicitation"
    settings: ClassVar[JSONObject] = {}
    mode: ClassVar[ElicitationMode] = "form"

    def __attrs_post_init__(self) -> None:
        check_message(self.message)
        check_form(self.requested_schema, "elicitation/create")

    def allowed_by(self, capabilities: ClientCapabilities) -> bool:
        return capabilities.has_elicitation_mode("form")

    def to_wire(self) -> JSONObject:
        return {
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": self.message,
                "requestedSchema": self.requested_schema,
            },
        }


@attrs.frozen
class UrlElicitation:
    """``elicitation/create`` in URL mode: send the user to ``url``, out of band.

    For what must not pass through the client: an API key, a payment, a
    third-party OAuth flow, which form mode MUST NOT ask for. The URL is
    held to :func:`~presa_trio.wire.well_formed.url_problem` when the
    request is built (an absolute ``https`` or ``http`` URL with a host,
    no user information), a :class:`~presa_trio.wire.hints.SignatureError`
    otherwise. It is sent only to a client that declared
    ``elicitation.url``; ``elicitation: {}`` is form mode only.

    The answer is an :class:`ElicitResult` without content (an accept with
    content is -32602, spec-notes §64). ``accept`` is the user's consent to
    open the URL, not word that they finished there: the tool finds out
    from its own state (what the page stored, bound to the user), on the
    retry on a plain call, after the answer in a task::

        if not await vault.has_key(ctx.principal):
            answers = await ctx.ask({"key": UrlElicitation("Set your API key", SET_KEY)})
            if answers.elicitation("key").action != "accept":
                return "no API key: nothing fetched"
            if not await vault.has_key(ctx.principal):  # consent, not completion
                return "set the key on the page that opened, then call again"
        return await fetch_report(await vault.key(ctx.principal))

    Spec: client/elicitation §URL Mode Elicitation Requests, §Response
    Actions, §Safe URL Handling; schema.ts ``ElicitRequestURLParams``.
    """

    message: str
    url: str

    capability = "elicitation"
    settings: ClassVar[JSONObject] = {"url": {}}
    mode: ClassVar[ElicitationMode] = "url"

    def __attrs_post_init__(self) -> None:
        check_message(self.message)
        problem = url_problem(self.url)
        if problem is not None:
            raise SignatureError(f"elicitation/create: not a URL to open, {self.url!r}: {problem}")

    def allowed_by(self, capabilities: ClientCapabilities) -> bool:
        return capabilities.has_elicitation_mode("url")

    def to_wire(self) -> JSONObject:
        return {
            "method": "elicitation/create",
            "params": {"mode": "url", "message": self.message, "url": self.url},
        }


@attrs.frozen
class Sampling:
    """``sampling/createMessage``: ask the client's model for a completion."""

    prompt: str
    max_tokens: int
    system_prompt: str | None = None

    capability = "sampling"
    settings: ClassVar[JSONObject] = {}

    def __attrs_post_init__(self) -> None:
        """Refuse what the request could not carry (schema ``$defs.CreateMessageRequestParams``).

        ``maxTokens`` is an integer: schema.json says so, and schema.ts's
        ``number`` admits every integer, so a request holding one is valid
        by both; a count of tokens has no fraction.
        """
        if not (is_text(self.prompt) and is_optional_text(self.system_prompt)):
            raise SignatureError("sampling/createMessage: the prompt and system prompt are strings")
        if not is_integer(self.max_tokens):
            raise SignatureError(
                f"sampling/createMessage: maxTokens is an integer, not {self.max_tokens!r}"
            )

    def allowed_by(self, capabilities: ClientCapabilities) -> bool:
        return capabilities.has("sampling")

    def to_wire(self) -> JSONObject:
        params: JSONObject = {
            "messages": [{"role": "user", "content": {"type": "text", "text": self.prompt}}],
            "maxTokens": self.max_tokens,
        }
        if self.system_prompt is not None:
            params["systemPrompt"] = self.system_prompt
        return {"method": "sampling/createMessage", "params": params}


@attrs.frozen
class ListRoots:
    """``roots/list``: ask which filesystem roots the client exposes."""

    capability = "roots"
    settings: ClassVar[JSONObject] = {}

    def allowed_by(self, capabilities: ClientCapabilities) -> bool:
        return capabilities.has("roots")

    def to_wire(self) -> JSONObject:
        return {"method": "roots/list"}


InputRequest = Elicitation | UrlElicitation | Sampling | ListRoots


def require_allowed(requests: Mapping[str, InputRequest], capabilities: ClientCapabilities) -> None:
    """-32021 naming what the first request ``capabilities`` do not allow needs.

    Spec: basic/patterns/mrtr §Server Requirements (Basic Workflow) 7;
    client/elicitation §Capabilities (never a mode the client did not declare).
    """
    for request in requests.values():
        if not request.allowed_by(capabilities):
            raise MissingRequiredClientCapability.for_capability(
                request.capability, dict(request.settings)
            )


def elicitation_modes(requests: Mapping[str, InputRequest]) -> dict[str, ElicitationMode]:
    """The mode of each elicitation among ``requests``, by key: how its answer reads."""
    return {
        key: request.mode
        for key, request in requests.items()
        if isinstance(request, Elicitation | UrlElicitation)
    }


@attrs.frozen
class InputRequired:
    """What a handler returns to ask for input: requests by key, and its own state.

    ``state`` is any JSON value the handler wants back on the retry; the
    server seals it into ``requestState`` and hands it back verified, so a
    handler never sees a token. At least one of the two must be given
    (schema ``$defs.InputRequiredResult``).
    """

    requests: dict[str, InputRequest] = attrs.field(factory=dict)
    state: Any = None

    def __attrs_post_init__(self) -> None:
        if not self.requests and self.state is None:
            raise ValueError("InputRequired needs input requests, state, or both")


class InputPending(Exception):
    """Raised by a plain call's ``ask`` for answers the client has not given yet.

    The tools boundary (:func:`presa_trio.server.tools.tool_outcome`) turns
    it into the ``input_required`` result it carries, however deep in the
    tool's nurseries it was raised; ``prompts/get`` and ``resources/read``
    do too (:func:`presa_trio.server.rounds.asked`).
    """

    def __init__(self, needed: InputRequired) -> None:
        super().__init__(f"waiting for input: {', '.join(needed.requests)}")
        self.needed = needed


# --- responses -----------------------------------------------------------------


@attrs.frozen
class ElicitResult:
    """The client's answer to an elicitation: ``accept`` of a form carries ``content``.

    ``accept`` of a URL-mode elicitation carries none: it is consent to
    open the URL, not word that the interaction there is done
    (client/elicitation §URL Mode Elicitation Requests).
    """

    action: Literal["accept", "decline", "cancel"]
    content: JSONObject | None = None


@attrs.frozen
class SamplingResult:
    """The client's model answer; ``text`` is the text of its content, if any."""

    role: str
    model: str
    text: str | None
    stop_reason: str | None = None


#: One kind of :data:`Answer`, as a typed accessor of :class:`Answers` reads it.
_Read = TypeVar("_Read", ElicitResult, SamplingResult, list[JSONObject])


def parse_input_responses(params: JSONObject) -> dict[str, JSONObject]:
    """Read ``params.inputResponses``: absent or null is ``{}``.

    Spec: mrtr §Error Handling — not an object, or a value that is not an object, is
    -32602. Unknown keys are kept; a handler simply never asks for them.
    """
    responses = params.get("inputResponses")
    if responses is None:
        return {}
    if not isinstance(responses, dict):
        raise InvalidParams("inputResponses must be an object")
    for key, value in responses.items():
        if not isinstance(value, dict):
            raise InvalidParams(f"inputResponses[{key!r}] must be an object")
    return responses


def is_form_value(value: Any) -> bool:
    """A value a form answers one field with: ``string | number | boolean | string[]``.

    Spec: schema.ts ``ElicitResult.content``; its number is any number
    (spec-notes §59).
    """
    return are_strings(value) or isinstance(value, str | bool) or is_number(value)


def read_elicit_result(raw: JSONObject, mode: ElicitationMode = "form") -> ElicitResult:
    """Validate an ``ElicitResult`` (schema ``$defs.ElicitResult``), else -32602.

    An accepted form carries its content; an accepted URL-mode request
    carries none (client/elicitation §Response Actions; spec-notes §64).
    """
    action = raw.get("action")
    if action not in ("accept", "decline", "cancel"):
        raise InvalidParams("ElicitResult.action must be accept, decline or cancel")
    content = raw.get("content")
    if content is not None and not isinstance(content, dict):
        raise InvalidParams("ElicitResult.content must be an object")
    for name, value in (content or {}).items():
        if not is_form_value(value):
            raise InvalidParams(
                f"ElicitResult.content[{name!r}] must be a string, a number, a boolean "
                "or a list of strings"
            )
    if action == "accept" and mode == "form" and content is None:
        raise InvalidParams("An accepted ElicitResult must carry content")
    if action == "accept" and mode == "url" and content is not None:
        raise InvalidParams("An accepted ElicitResult to a URL-mode request carries no content")
    return ElicitResult(action, content)


#: The members each kind of sampling content block requires, with their types
#: (schema ``$defs.SamplingMessageContentBlock``: ``TextContent``, ``ImageContent``,
#: ``AudioContent``, ``ToolUseContent``, ``ToolResultContent``).
SAMPLING_BLOCKS: Mapping[str, Mapping[str, type]] = {
    "text": {"text": str},
    "image": {"data": str, "mimeType": str},
    "audio": {"data": str, "mimeType": str},
    "tool_use": {"id": str, "name": str, "input": dict},
    "tool_result": {"toolUseId": str, "content": list},
}


def is_sampling_block(block: Any) -> bool:
    """Whether ``block`` is a sampling content block with the members its ``type`` requires."""
    kind = block.get("type") if isinstance(block, dict) else None
    members = SAMPLING_BLOCKS.get(kind) if isinstance(kind, str) else None
    return members is not None and all(
        isinstance(block.get(name), wanted) for name, wanted in members.items()
    )


def read_sampling_result(raw: JSONObject) -> SamplingResult:
    """Validate a ``CreateMessageResult`` (schema ``$defs.CreateMessageResult``), else -32602."""
    role, model, content = raw.get("role"), raw.get("model"), raw.get("content")
    if role not in ("user", "assistant") or not isinstance(model, str):
        raise InvalidParams("CreateMessageResult needs a role and a model")
    blocks: list[Any] = content if isinstance(content, list) else [content]
    if not blocks or not all(is_sampling_block(block) for block in blocks):
        raise InvalidParams(
            "CreateMessageResult.content must be text, image, audio, tool_use or "
            "tool_result blocks, each with the members its type requires"
        )
    stop_reason = raw.get("stopReason")
    if not (stop_reason is None or isinstance(stop_reason, str)):
        raise InvalidParams("CreateMessageResult.stopReason must be a string")
    texts = [block["text"] for block in blocks if block["type"] == "text"]
    return SamplingResult(role, model, "".join(texts) if texts else None, stop_reason)


def is_root(root: Any) -> bool:
    """A ``Root``: a ``file://`` URI (client/roots §Root), and a name that is a string."""
    return (
        isinstance(root, dict)
        and isinstance(root.get("uri"), str)
        and root["uri"].startswith("file://")
        and isinstance(root.get("name", ""), str)
    )


def read_roots(raw: JSONObject) -> list[JSONObject]:
    """Validate a ``ListRootsResult`` and return its roots, else -32602."""
    roots = raw.get("roots")
    if not isinstance(roots, list) or not all(is_root(root) for root in roots):
        raise InvalidParams("ListRootsResult.roots must be a list of {uri: file://…, name?}")
    return roots


#: How the answer to each kind of input request is read, by the request's method.
ANSWER_READERS: Mapping[str, Callable[[JSONObject], Any]] = {
    "elicitation/create": read_elicit_result,
    "sampling/createMessage": read_sampling_result,
    "roots/list": read_roots,
}


def answer_reader(request: JSONObject) -> Callable[[JSONObject], Any]:
    """How the answer to ``request`` (in wire form) reads: by its method, and mode."""
    method, params = request.get("method", ""), request.get("params")
    if method == "elicitation/create" and isinstance(params, dict) and params.get("mode") == "url":
        return functools.partial(read_elicit_result, mode="url")
    reader = ANSWER_READERS.get(method)
    if reader is None:
        raise ValueError(f"no reader for input requests of method {method!r}")
    return reader


def check_answer(request: JSONObject, key: str, answer: JSONObject) -> None:
    """-32602 unless ``answer`` is a valid result for ``request`` (in wire form).

    Spec: basic/patterns/mrtr §Error Handling — servers SHOULD check that
    the information inside ``inputResponses`` can be parsed, and answer a
    protocol error when it cannot. An accepted form's content is checked
    against the form asked (:func:`check_content`), an accepted URL-mode
    request must carry none (:func:`read_elicit_result`), so an answer
    that does not fit is refused where it arrives: a retry, or the
    ``tasks/update`` that brings it, never a task failed by it.
    """
    read = read_answer(answer_reader(request), key, answer)
    if isinstance(read, ElicitResult) and read.action == "accept" and read.content is not None:
        params = request.get("params")
        schema = params.get("requestedSchema") if isinstance(params, dict) else None
        try:
            compiled = CompiledSchema.compile(schema, role="requestedSchema")
        except SchemaError:
            return
        check_content(compiled, key, read.content)


def read_answer(reader: Callable[[JSONObject], _Read], key: str, answer: JSONObject) -> _Read:
    """``reader`` of ``answer``; its -32602 names the input key the answer came under."""
    try:
        return reader(answer)
    except InvalidParams as exc:
        raise InvalidParams(f"inputResponses[{key!r}]: {exc.message}") from exc


def check_answers(outstanding: Mapping[str, JSONObject], answers: Mapping[str, JSONObject]) -> None:
    """Check every answer to an outstanding request; answers to other keys are ignored."""
    for key in outstanding.keys() & answers.keys():
        check_answer(outstanding[key], key, answers[key])


#: What one answer reads as: the objects ``ctx.elicitation()``, ``ctx.sampling()``
#: and ``ctx.roots()`` return.
Answer = ElicitResult | SamplingResult | list[JSONObject]


class Answers(Mapping[str, Answer]):
    """The client's answers to an ``ask``, by key, read into typed objects.

    ``answers.elicitation("ok").action``, ``answers.sampling("fact").text``
    and ``answers.roots("where")`` read each answer as the result of the
    kind of request the tool asked under that key, with its own type (a
    ``TypeError`` if it is no such result). Every answer was checked against
    its request when it arrived, and results are open objects, so a valid
    answer may also carry members of another kind's shape (a
    ``CreateMessageResult`` with an ``action``): only the kind asked for
    decides how it reads (basic/patterns/mrtr §Error Handling: what is not
    recognized is ignored). ``answers["ok"]``, typed as any :data:`Answer`,
    has no kind to go by and reads the answer by its shape. An elicitation's
    answer reads by the mode asked, ``modes`` by key (form mode if none).
    """

    def __init__(
        self, raw: Mapping[str, JSONObject], modes: Mapping[str, ElicitationMode] | None = None
    ) -> None:
        self._raw = dict(raw)
        self._modes = dict(modes or {})

    def __getitem__(self, key: str) -> Answer:
        raw = self._raw[key]
        if "action" in raw:
            return read_elicit_result(raw, self._modes.get(key, "form"))
        if "roots" in raw:
            return read_roots(raw)
        return read_sampling_result(raw)

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return f"Answers({self._raw!r})"

    def raw(self, key: str) -> JSONObject:
        """The answer under ``key`` as the client sent it."""
        return self._raw[key]

    def elicitation(self, key: str) -> ElicitResult:
        read = functools.partial(read_elicit_result, mode=self._modes.get(key, "form"))
        return self._read_as(key, read, "an elicitation")

    def sampling(self, key: str) -> SamplingResult:
        return self._read_as(key, read_sampling_result, "a sampling request")

    def roots(self, key: str) -> list[JSONObject]:
        return self._read_as(key, read_roots, "a roots/list request")

    def _read_as(self, key: str, reader: Callable[[JSONObject], _Read], what: str) -> _Read:
        """The answer under ``key`` read by ``reader``; ``TypeError`` if it is not ``what``'s."""
        try:
            return reader(self._raw[key])
        except InvalidParams:
            raise wrong_kind(key, what) from None


def wrong_kind(key: str, what: str) -> TypeError:
    return TypeError(f"the answer under {key!r} is not the answer to {what}")


#: The key of the ``requestState`` that :func:`answers_for` issues: the answers so far.
ASK_STATE = "askAnswers"


def answers_for(
    requests: Mapping[str, InputRequest], responses: Mapping[str, JSONObject], state: Any
) -> Answers:
    """A plain call's answers to ``requests``, each checked; else :class:`InputPending`.

    The answers are those of this round (``responses``) and those carried
    from earlier rounds in the verified ``state``. When some are missing,
    the pending signal asks for exactly those again and carries every answer
    given so far in its state, so a client answering part of a round, or a
    tool asking twice in a row, never has to answer again (basic/patterns/mrtr
    §Error Handling: ask again for the missing information, not an error).
    """
    carried = state.get(ASK_STATE) if isinstance(state, dict) else None
    given = {**(carried if isinstance(carried, dict) else {}), **responses}
    answers: dict[str, JSONObject] = {}
    for key, request in requests.items():
        answer = given.get(key)
        if answer is not None:
            check_answer(request.to_wire(), key, answer)
            answers[key] = answer
    missing = {key: request for key, request in requests.items() if key not in answers}
    if missing:
        raise InputPending(InputRequired(missing, state={ASK_STATE: given}))
    return Answers(answers, elicitation_modes(requests))
