"""Asking the person at the terminal: an elicitation field by field, a sampling reply.

Questions go to stderr and answers come from stdin, so ``--json`` output on
stdout stays clean. A line is read in a worker thread (a terminal cannot be
polled), abandoned if the command is cancelled, so Ctrl-C still works while
a question waits.

An elicitation shows its message, then asks *accept, decline or cancel*;
on accept each property of ``requestedSchema`` is asked in turn with its
title, description, type, choices and default (client/elicitation
§Requested Schema: a flat object of strings, numbers, booleans and enums).
Choices show their titles, as labels of the values to type; several
choices are typed ``a, b``. An empty line takes the default, or leaves an
optional field out. A value that does not read as its type is asked again.
The filled form is shown before it is sent, and can be sent, edited (each
field asked again, an empty line keeping what it holds), declined or
cancelled (client/elicitation §User Interaction Model: for form mode,
clients MUST allow users to review and modify their responses before
sending). A sampling request shows its
messages and takes the reply typed in as the model's (client/sampling
§Creating Messages); its model is ``human``.

Spec: client/elicitation §User Interaction Model, §Form Mode; client/sampling.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

import attrs
import trio

from presa_trio.client.arguments import as_json, check, typed_value
from presa_trio.client.errors import UsageProblem
from presa_trio.client.output import inert
from presa_trio.client.streams import stop_writing, stopped
from presa_trio.client.transport import list_at, object_at
from presa_trio.wire.models import JSONObject

ACTIONS = {"": "accept", "a": "accept", "accept": "accept", "d": "decline", "decline": "decline"}
ACTIONS |= {"c": "cancel", "cancel": "cancel"}
REVIEW = {"": "send", "s": "send", "send": "send", "e": "edit", "edit": "edit"}
REVIEW |= {key: action for key, action in ACTIONS.items() if action != "accept"}
REVIEW_QUESTION = "send, edit, decline or cancel? [s/e/d/c] "
#: What a field holds when it holds nothing yet.
EMPTY = object()


def choices_of(schema: JSONObject) -> list[str]:
    """The choices a field (or a list's items) offers, each with its title if it has one.

    Spec: client/elicitation §Requested Schema — ``enum``; ``oneOf`` (or, for
    a list's items, ``anyOf``) of ``{const, title}``, the title the option's label.
    """
    untitled = [str(value) for value in list_at(schema, "enum")]
    options = list_at(schema, "oneOf") or list_at(schema, "anyOf")
    titled = [
        f"{option.get('const')}" + (f" ({option['title']})" if "title" in option else "")
        for option in options
        if isinstance(option, dict)
    ]
    return untitled or titled


def field_value(text: str, field: Any) -> Any:
    """What ``text`` typed for ``field`` reads as; a list's choices may be ``a, b``."""
    several = isinstance(field, dict) and field.get("type") == "array"
    if several and not as_json(text)[0]:
        return [choice.strip() for choice in text.split(",")]
    return typed_value(text, field)


def field_line(name: str, schema: Any, required: bool, held: Any = EMPTY) -> str:
    """``name (integer, one of 1, 2; default 1) *: description``; ``now`` for what it holds."""
    schema = schema if isinstance(schema, dict) else {}
    facts = [str(schema.get("type", "any"))]
    if choices := choices_of(schema):
        facts.append("one of " + ", ".join(choices))
    if several := choices_of(object_at(schema, "items")):
        facts.append("any of " + ", ".join(several))
    if held is not EMPTY:
        facts.append(f"now {json.dumps(held)}")
    elif "default" in schema:
        facts.append(f"default {schema['default']}")
    title = schema.get("title", name)
    line = f"  {title} ({'; '.join(facts)}){' *' if required else ''}"
    return line + (f": {schema['description']}" if "description" in schema else "")


def content_text(content: Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    return " ".join(
        str(b.get("text"))
        if isinstance(b, dict) and b.get("type") == "text"
        else f"[{b.get('type')}]"
        for b in blocks
        if isinstance(b, dict)
    )


@attrs.define(eq=False)
class Terminal:
    """A person on stdin and stderr."""

    # Read when the terminal is made, after :func:`~.streams.open_closed_streams`.
    given_in: TextIO = attrs.field(factory=lambda: sys.stdin)
    shown_on: TextIO = attrs.field(factory=lambda: sys.stderr)

    def interactive(self) -> bool:
        """Whether someone is there to ask: stdin is a terminal."""
        return self.given_in.isatty()

    def present(self) -> bool:
        """Whether a question still reaches them: not once stderr, where it is shown, has
        failed and been pointed at ``/dev/null`` (:func:`~.streams.stop_writing`)."""
        return not stopped(self.shown_on)

    def show(self, text: str) -> None:
        """``text`` on stderr; one it does not take ends the question, not in a hang."""
        try:
            self.shown_on.write(text)
            self.shown_on.flush()
        except OSError:
            stop_writing(self.shown_on)
            raise UsageProblem("stderr does not take the question: nobody can see it") from None

    def say(self, text: str) -> None:
        """A line of the question: the server's text in it made :func:`inert`."""
        self.show(inert(text) + "\n")

    async def ask(self, question: str) -> str:
        self.show(question)
        line = await trio.to_thread.run_sync(self.given_in.readline, abandon_on_cancel=True)
        if not line:
            raise UsageProblem("the input ended before the question was answered")
        return line.rstrip("\r\n")

    async def elicit(self, key: str, params: JSONObject) -> JSONObject:
        self.say(f"[{key}] The server asks: {params.get('message', '')}")
        while (
            action := ACTIONS.get((await self.ask("accept, decline or cancel? [a/d/c] ")).lower())
        ) is None:
            self.say("  answer a, d or c")
        schema = params.get("requestedSchema")
        schema = schema if isinstance(schema, dict) else {}
        content: JSONObject = {}
        while action == "accept":
            content = await self.form(schema, content)
            try:
                check(content, schema, "the answer")
            except UsageProblem as problem:
                self.say(f"  {problem}; again:")
                continue
            self.say(f"  the answer: {json.dumps(content)}")
            while (review := REVIEW.get((await self.ask(REVIEW_QUESTION)).lower())) is None:
                self.say("  answer s, e, d or c")
            if review == "send":
                return {"action": "accept", "content": content}
            if review != "edit":
                action = review
        return {"action": action}

    async def form(self, schema: JSONObject, held: JSONObject) -> JSONObject:
        """Each field asked in turn; an empty line keeps what ``held`` has, else the default."""
        properties = schema.get("properties")
        listed = schema.get("required")
        required = listed if isinstance(listed, list) else []
        content: JSONObject = {}
        for name, field in (properties if isinstance(properties, dict) else {}).items():
            self.say(field_line(name, field, name in required, held.get(name, EMPTY)))
            while True:
                text = await self.ask("  > ")
                if not text:
                    if name in held:
                        content[name] = held[name]
                    elif isinstance(field, dict) and "default" in field:
                        content[name] = field["default"]
                    elif name in required:
                        self.say("  this field is required")
                        continue
                    break
                try:
                    content[name] = field_value(text, field)
                except ValueError as error:
                    self.say(f"  {error}")
                    continue
                break
        return content

    async def sample(self, key: str, params: JSONObject) -> JSONObject:
        self.say(f"[{key}] The server asks your model for a reply. Its messages:")
        if isinstance(params.get("systemPrompt"), str):
            self.say(f"  system: {params['systemPrompt']}")
        for message in list_at(params, "messages"):
            if isinstance(message, dict):
                self.say(f"  {message.get('role')}: {content_text(message.get('content'))}")
        reply = await self.ask("Your reply, as the model: ")
        return {
            "role": "assistant",
            "content": {"type": "text", "text": reply},
            "model": "human",
            "stopReason": "endTurn",
        }
