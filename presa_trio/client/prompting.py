"""Asking the person at the terminal: an elicitation field by field, a sampling reply.

Questions go to stderr and answers come from stdin, so ``--json`` output on
stdout stays clean. A line is read in a worker thread (a terminal cannot be
polled), abandoned if the command is cancelled, so Ctrl-C still works while
a question waits.

An elicitation shows its message, then asks *accept, decline or cancel*;
on accept each property of ``requestedSchema`` is asked in turn with its
title, description, type, choices and default (client/elicitation
§Requested Schema: a flat object of strings, numbers, booleans and enums).
An empty line takes the default, or leaves an optional field out. A value
that does not read as its type is asked again. A sampling request shows its
messages and takes the reply typed in as the model's (client/sampling
§Creating Messages); its model is ``human``.

Spec: client/elicitation §User Interaction Model, §Form Mode; client/sampling.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import attrs
import trio

from presa_trio.client.arguments import check, typed_value
from presa_trio.client.errors import UsageProblem
from presa_trio.client.transport import list_at
from presa_trio.wire.models import JSONObject

ACTIONS = {"": "accept", "a": "accept", "accept": "accept", "d": "decline", "decline": "decline"}
ACTIONS |= {"c": "cancel", "cancel": "cancel"}


def field_line(name: str, schema: Any, required: bool) -> str:
    """``name (integer, one of 1, 2; default 1) *: description``."""
    schema = schema if isinstance(schema, dict) else {}
    facts = [str(schema.get("type", "any"))]
    choices = schema.get("enum") or [option.get("const") for option in schema.get("oneOf", [])]
    if choices:
        facts.append("one of " + ", ".join(str(c) for c in choices))
    if "default" in schema:
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

    given_in: TextIO = sys.stdin
    shown_on: TextIO = sys.stderr

    def interactive(self) -> bool:
        """Whether someone is there to ask: stdin is a terminal."""
        return self.given_in.isatty()

    def say(self, text: str) -> None:
        self.shown_on.write(text + "\n")
        self.shown_on.flush()

    async def ask(self, question: str) -> str:
        self.shown_on.write(question)
        self.shown_on.flush()
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
        if action != "accept":
            return {"action": action}
        schema = params.get("requestedSchema")
        schema = schema if isinstance(schema, dict) else {}
        while True:
            content = await self.form(schema)
            try:
                check(content, schema, "the answer")
            except UsageProblem as problem:
                self.say(f"  {problem}; again:")
                continue
            return {"action": "accept", "content": content}

    async def form(self, schema: JSONObject) -> JSONObject:
        properties = schema.get("properties")
        listed = schema.get("required")
        required = listed if isinstance(listed, list) else []
        content: JSONObject = {}
        for name, field in (properties if isinstance(properties, dict) else {}).items():
            self.say(field_line(name, field, name in required))
            while True:
                text = await self.ask("  > ")
                if not text:
                    if isinstance(field, dict) and "default" in field:
                        content[name] = field["default"]
                    elif name in required:
                        self.say("  this field is required")
                        continue
                    break
                try:
                    content[name] = typed_value(text, field)
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
