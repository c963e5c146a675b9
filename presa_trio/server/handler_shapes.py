"""What a resource, template, prompt or completion handler's hints may say, read at registration.

A tool's hints make its schemas (:mod:`presa_trio.server.signatures`); the
other handlers are called with fixed arguments and must return one of a few
types. Two hints that contradict that would pass registration and fail on
every call, so each is refused in one line instead:

- a declared return type no call could answer with (``-> list[str]`` for a
  completion, ``-> dict`` for a resource): every call would be -32603;
- a template handler's second parameter taken for one of the template's
  variables (``async def note(ctx, day: str)`` for ``note://{day}``): it
  would receive the dict of every variable.

An unannotated return, ``Any`` and ``object`` are left to the call.

Spec: 2026-07-28 server/resources §Reading Resources, §Resource Templates;
server/prompts §Getting a Prompt; server/utilities/completion §Completion Results.
"""

from __future__ import annotations

import collections.abc
import inspect
from collections.abc import Callable, Mapping
from typing import Annotated, Any, get_args, get_origin

import attrs

from presa_trio.wire import models
from presa_trio.wire.hints import MAPPINGS, SignatureError, describe_hint, is_union
from presa_trio.wire.mrtr import InputRequired

SEQUENCES = (list, tuple, collections.abc.Sequence)


@attrs.frozen
class HandlerShape:
    """How one kind of handler is called, and the types it may return (``says``, in words)."""

    called: tuple[str, ...]
    returns: tuple[Any, ...]
    says: str


RESOURCE = HandlerShape(
    ("ctx",),
    (str, bytes, *SEQUENCES, InputRequired),
    "str, bytes, a list of TextResourceContents and BlobResourceContents, or InputRequired",
)
TEMPLATE = HandlerShape(("ctx", "variables"), RESOURCE.returns, RESOURCE.says)
PROMPT = HandlerShape(
    ("ctx", "arguments"),
    (str, *SEQUENCES, models.GetPromptResult, InputRequired),
    "str, a list of PromptMessage, a GetPromptResult, or InputRequired",
)
COMPLETION = HandlerShape(
    ("ctx", "argument", "value", "context_arguments"), (models.Completion,), "a Completion"
)


def refuse_return(hints: Mapping[str, Any], shape: HandlerShape, where: str) -> None:
    """Refuse a declared return type with a member outside ``shape.returns``.

    ``-> str | None`` is refused too, for a handler that returns ``None``
    answers -32603 (:mod:`presa_trio.server.resources`, :mod:`~presa_trio.server.prompts`).
    """
    if "return" not in hints:
        return
    hint = hints["return"]
    for member in get_args(hint) if is_union(hint) else (hint,):
        bare = get_args(member)[0] if get_origin(member) is Annotated else member
        if bare is Any or bare is object or (get_origin(bare) or bare) in shape.returns:
            continue
        raise SignatureError(
            f"{where}, return type: {describe_hint(hint)} is never an answer; return {shape.says}"
        )


def refuse_misread_variables(
    function: Callable[..., Any], hints: Mapping[str, Any], variables: tuple[str, ...], where: str
) -> None:
    """Refuse a template handler whose second parameter reads as one variable.

    The handler is called ``(ctx, variables)``, every variable in one dict:
    a second parameter hinted as anything but a mapping (``day: str``), or
    unhinted and named after a variable, would receive that dict.
    """
    second = list(inspect.signature(function).parameters.values())[1]
    hint = hints.get(second.name)
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    if hint is None:
        misread = second.name in variables
    else:
        mapping = hint is dict or get_origin(hint) in MAPPINGS
        misread = not (mapping or hint is Any or hint is object)
    if misread:
        raise SignatureError(
            f"{where}, parameter {second.name!r}: the handler gets every variable in one "
            "dict; take (ctx, variables: dict[str, str]) and read variables[name]"
        )
