"""Answering a server's input requests: from the command line, a file, or a person.

A server asks through ``inputRequests`` (basic/patterns/mrtr), in an
``input_required`` result or in a task waiting for input (SEP-2663 §Task
Update Requests). Each request has a key; the answer goes back under it.
:class:`Answerer` finds each answer, in this order:

1. ``--answer KEY=JSON`` or the ``--answers FILE`` object, checked as the
   server checks such answers (:func:`presa_trio.wire.mrtr.check_answer`:
   the result's type and, for an accepted elicitation, its ``requestedSchema``),
   so a malformed answer is a one-line error here rather than a -32602 there;
2. ``roots/list``: the ``--root PATH`` directories, as ``file://`` URIs
   (none given: an empty list, which is an answer);
3. a terminal: the person is asked (:mod:`presa_trio.client.prompting`);
4. else a one-line error naming the key and what to pass: never a hang.

A request the client does not declare it answers (:data:`DECLARED`: a
sampling request with ``tools``, an elicitation in another mode than form,
a method no input request has) is the server's mistake: a protocol failure
naming the key (exit 3), whatever answer is at hand.

A flag answers a key the server asks; a misspelt one must not be passed
over in silence while the person is asked instead. So a question that no
flag answers, while a flag's key has not been asked yet, is an error that
names the flags' keys and the keys asked (:meth:`Answerer.refuse_unasked`);
a flag still unasked when the command ends is named on stderr
(:meth:`Answerer.unasked`).

Spec: client/elicitation §Form Mode, §Response Actions, §Capabilities;
client/sampling §Tools in Sampling; client/roots; basic/patterns/mrtr
§Input Responses, §Server Requirements (Basic Workflow).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import attrs

from presa_trio.client.arguments import quoted
from presa_trio.client.errors import ProtocolFailure, UsageProblem
from presa_trio.client.transport import object_at
from presa_trio.wire.envelope import parse_text
from presa_trio.wire.errors import InvalidParams
from presa_trio.wire.meta import ClientCapabilities
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import check_answer

#: The input requests this client answers, as it declares them on every request:
#: form-mode elicitation, sampling without tools or context, roots.
DECLARED: JSONObject = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}


def undeclared(request: JSONObject) -> str | None:
    """What ``request`` asks that :data:`DECLARED` does not declare; ``None`` if nothing.

    Spec: schema.ts ``CreateMessageRequestParams.tools``, ``toolChoice`` (the
    client MUST return an error without ``sampling.tools``); client/elicitation
    §Capabilities; basic/patterns/mrtr §Server Requirements (Basic Workflow) 2.
    """
    declared = ClientCapabilities(DECLARED)
    method, params = request.get("method"), object_at(request, "params")
    if method == "elicitation/create":
        mode = params.get("mode", "form")
        known = isinstance(mode, str) and declared.has_elicitation_mode(mode)
        return None if known else f"elicitation in {mode!r} mode"
    if method == "sampling/createMessage":
        tools = "tools" in params or "toolChoice" in params
        return "sampling with tools" if tools and "tools" not in DECLARED["sampling"] else None
    return None if method == "roots/list" else f"an input request of method {method!r}"


class Person(Protocol):
    """Someone at a terminal who can answer: :class:`presa_trio.client.prompting.Terminal`."""

    def present(self) -> bool:
        """Whether a question can still reach them (stderr, where it is shown, is read)."""
        ...

    async def elicit(self, key: str, params: JSONObject) -> JSONObject: ...

    async def sample(self, key: str, params: JSONObject) -> JSONObject: ...


def parse_answer_flags(flags: Sequence[str]) -> dict[str, JSONObject]:
    """``--answer KEY=JSON`` flags as a mapping; a malformed one is a usage error."""
    answers: dict[str, JSONObject] = {}
    for flag in flags:
        key, equals, text = flag.partition("=")
        if not equals or not key:
            raise UsageProblem(f"--answer {quoted(flag)}: expected KEY=JSON")
        try:
            value = parse_text(text)
        except ValueError:
            raise UsageProblem(f"--answer {key}: not JSON: {quoted(text)}") from None
        if not isinstance(value, dict):
            raise UsageProblem(
                f"--answer {key}: the answer must be a JSON object, got {quoted(text)}"
            )
        answers[key] = value
    return answers


def read_answers_file(path: Path | None) -> dict[str, JSONObject]:
    """``--answers FILE``: one JSON object, key -> answer object."""
    if path is None:
        return {}
    try:
        value = parse_text(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageProblem(f"cannot read {path}: {error.strerror}") from None
    except ValueError as error:
        raise UsageProblem(f"{path} is not JSON: {error}") from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise UsageProblem(f"{path} must hold one object mapping each key to an answer object")
    return value


def input_requests(asking: JSONObject, where: str) -> dict[str, JSONObject]:
    """The ``inputRequests`` of a result or a task: each request, an object, by its key.

    Anything else is the server's mistake, not the person's: a protocol
    failure (exit 3) rather than a question nobody can answer.

    Spec: basic/patterns/mrtr §Input Requests; SEP-2663 §Task Update Requests.
    """
    requests = asking.get("inputRequests")
    if requests is None:
        return {}
    if not isinstance(requests, dict) or not all(isinstance(r, dict) for r in requests.values()):
        raise ProtocolFailure(f"{where} sent inputRequests that are no object of requests")
    return requests


def roots_answer(paths: Sequence[Path]) -> JSONObject:
    """A ``ListRootsResult`` of the given directories (client/roots §Root)."""
    roots = [{"uri": path.resolve().as_uri(), "name": path.resolve().name} for path in paths]
    return {"roots": roots}


def describe(request: JSONObject) -> str:
    params = object_at(request, "params")
    said = params.get("message") if isinstance(params, dict) else None
    return f"{request.get('method')}" + (f" {said!r}" if isinstance(said, str) else "")


@attrs.define(eq=False)
class Answerer:
    """Answers input requests by key; knows which it answered (SEP-2663: deduplicate keys)."""

    given: Mapping[str, JSONObject] = attrs.field(factory=dict)
    roots: Sequence[Path] = ()
    person: Person | None = None
    answered: set[str] = attrs.field(factory=set)
    #: Every key the server asked for, in the order asked.
    asked: list[str] = attrs.field(factory=list)
    #: Who asks, as a protocol failure names it.
    where: str = "the server"

    async def answer_all(self, requests: Mapping[str, JSONObject]) -> dict[str, JSONObject]:
        """Answers to every request not answered before, by key."""
        answers = {}
        for key, request in requests.items():
            if key in self.answered:
                continue
            answers[key] = await self.answer(key, request)
            self.answered.add(key)
        return answers

    async def answer(self, key: str, request: JSONObject) -> JSONObject:
        method = request.get("method")
        params = object_at(request, "params")
        if key not in self.asked:
            self.asked.append(key)
        if (what := undeclared(request)) is not None:
            raise ProtocolFailure(
                f"{self.where} asks {key!r} for {what}, which this client does not declare"
            )
        if key in self.given:
            return self.checked(key, request, self.given[key])
        if method == "roots/list":
            return roots_answer(self.roots)
        self.refuse_unasked()
        person = self.person if self.person is not None and self.person.present() else None
        if person is not None and method == "elicitation/create":
            return self.checked(key, request, await person.elicit(key, params))
        if person is not None and method == "sampling/createMessage":
            return self.checked(key, request, await person.sample(key, params))
        raise UsageProblem(
            f"the server asks {key!r} ({describe(request)}) and there is no terminal to ask: "
            f"give --answer {key}=JSON"
        )

    def unasked(self) -> list[str]:
        """The keys of ``--answer``/``--answers`` the server has not asked for."""
        return sorted(self.given.keys() - set(self.asked))

    def refuse_unasked(self) -> None:
        """A usage error when a flag's key was never asked: it names the keys asked."""
        if unasked := self.unasked():
            raise UsageProblem(
                f"--answer {', '.join(unasked)}: the server asks for "
                f"{', '.join(self.asked)}, not {' or '.join(unasked)}"
            )

    def checked(self, key: str, request: JSONObject, answer: JSONObject) -> JSONObject:
        """``answer`` if it is a valid answer to ``request``, else a usage error."""
        try:
            check_answer(request, key, answer)
        except InvalidParams as error:
            raise UsageProblem(f"--answer {key}: {error.message}") from None
        except ValueError:
            raise UsageProblem(f"input request {key!r} has an unknown method") from None
        return answer
