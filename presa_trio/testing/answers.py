"""How the testing client answers what a server asks: the answerers, and the retry of each round.

A tool, a resource or a prompt may ask the client something (elicitation,
sampling, roots) mid-request. On the plain path the server answers
``input_required`` and the client calls again with the answers and the
round's ``requestState`` (:func:`send_answering`); in a task the client
answers with ``tasks/update`` (:class:`~presa_trio.testing.tasks.TaskHandle`).
Both take their answers from one :data:`Answerer`: a function of the
request (sync or async), or a list of scripted answers taken in order.
Answers are built with :func:`accept`, :func:`consent`, :func:`decline`,
:func:`sampled` and :func:`roots`.

Spec: 2026-07-28 basic/patterns/mrtr §Basic Workflow, §Client Requirements
(Basic Workflow); SEP-2663 §Task Update Requests.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from presa_trio.testing.driver import McpClient, Reply
from presa_trio.wire.models import JSONObject

#: Rounds of input a request or a task may ask before the test fails, where it would
#: hang: a tool that asks again whatever it is answered (a key read under another name).
MAX_ROUNDS = 100

#: Answers one input request: ``(key, request)`` in, the response out. The
#: request is its wire form: ``{"method": "elicitation/create", "params": …}``.
AnswerFunction = Callable[[str, JSONObject], JSONObject | Awaitable[JSONObject]]
#: A function, or scripted answers used in order.
Answerer = AnswerFunction | Iterable[JSONObject]


def accept(content: JSONObject | None = None) -> JSONObject:
    """An accepted elicitation carrying ``content``."""
    return {"action": "accept", "content": dict(content or {})}


def consent() -> JSONObject:
    """An accepted URL-mode elicitation: consent to open the URL, without content.

    Spec: client/elicitation §Response Actions (for URL mode the content is
    omitted; one with content is -32602, spec-notes §64).
    """
    return {"action": "accept"}


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


def still_asking(what: str, requests: Mapping[str, JSONObject]) -> AssertionError:
    """The failure of a request or task still asking after :data:`MAX_ROUNDS` rounds."""
    keys = ", ".join(repr(key) for key in requests)
    return AssertionError(f"{what} still asks for input after {MAX_ROUNDS} rounds: {keys}")


def answer_function(answerer: Answerer | None) -> AnswerFunction:
    """One function for every form of :data:`Answerer`; one answer alone is a ``TypeError``."""
    if answerer is None:

        def unanswered(key: str, request: JSONObject) -> JSONObject:
            raise NoAnswer(f"the tool asked {key!r} ({request.get('method')}); pass answer=")

        return unanswered
    if callable(answerer):
        return answerer
    if isinstance(answerer, Mapping):  # iterated, it would answer with its keys
        raise TypeError(
            "answer= got one answer; pass a list of answers, [accept(...)], or a function"
        )
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


async def send_answering(
    raw: McpClient, method: str, params: Mapping[str, Any], answer: AnswerFunction
) -> Reply:
    """Send a request, answering each ``input_required`` round, until its final result.

    Each retry is the original request plus ``inputResponses`` (this
    round's answers only) and the round's ``requestState``, unchanged, as
    a client must send them; ``params`` carries its own ``_meta``. A
    JSON-RPC error raises :class:`~presa_trio.testing.RequestFailed`; a
    request still asking after :data:`MAX_ROUNDS` rounds, an ``AssertionError``.

    Spec: basic/patterns/mrtr §Basic Workflow, §Client Requirements (Basic Workflow).
    """
    retry: JSONObject = {}
    for _ in range(MAX_ROUNDS):
        reply = await raw.send_request(method, {**params, **retry})
        if reply.result.get("resultType") != "input_required":
            return reply
        requests = reply.result.get("inputRequests") or {}
        retry = {"inputResponses": await answer_all(answer, requests)}
        if "requestState" in reply.result:
            retry["requestState"] = reply.result["requestState"]
    raise still_asking(method, requests)
