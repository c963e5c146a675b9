"""``prompts/list``, ``prompts/get`` and ``completion/complete``.

Spec: 2026-07-28 server/prompts, server/utilities/completion (§Error Handling of each).
"""

from __future__ import annotations

import logging
from typing import Any

from presa_trio.server import rounds
from presa_trio.server.context import RequestContext
from presa_trio.server.faults import report_fault
from presa_trio.server.pagination import only_page
from presa_trio.server.refusals import REFERENCE_KEYS
from presa_trio.server.registry import Server
from presa_trio.server.results import describe
from presa_trio.wire import models
from presa_trio.wire.convert import to_wire
from presa_trio.wire.errors import InvalidParams
from presa_trio.wire.mrtr import InputRequired
from presa_trio.wire.well_formed import is_integer, is_optional_text, is_prompt_message

log = logging.getLogger(__name__)

MAX_COMPLETION_VALUES = 100


async def list_prompts(
    server: Server, ctx: RequestContext, params: dict[str, Any]
) -> dict[str, Any]:
    """Prompts in registration order, with caching hints."""
    prompts = [p.prompt for p in server.prompts.values()]
    return only_page(server, params, "prompts", to_wire(prompts))


def read_string_map(value: Any, what: str) -> dict[str, str]:
    """A ``{string: string}`` object; absent is ``{}``; anything else -32602."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise InvalidParams(f"'{what}' must be an object of strings")
    return value


async def get_prompt(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """Render a prompt; unknown prompt or missing required argument is -32602."""
    name = params.get("name")
    if not isinstance(name, str):
        raise InvalidParams("prompts/get needs a string 'name'")
    registered = server.prompts.get(name)
    if registered is None:
        raise InvalidParams(f"Unknown prompt: {name}")
    arguments = read_string_map(params.get("arguments"), "arguments")
    for argument in registered.prompt.arguments or ():
        if argument.required and argument.name not in arguments:
            raise InvalidParams(f"Missing required argument: {argument.name}")
    target = rounds.RoundTarget("prompts/get", name, arguments)
    rounds.open_round(ctx, params, target)
    output = await rounds.asked(registered.handler(ctx, arguments))
    if isinstance(output, InputRequired):
        return rounds.close_round(ctx, output, target)
    result: dict[str, Any] = to_wire(prompt_result(name, output))
    return result


def prompt_result(name: str, output: Any) -> models.GetPromptResult:
    """What prompt ``name`` returned, as a ``GetPromptResult``, else -32603.

    A ``str`` (a typed prompt's text) is one user message; a list or tuple
    of :class:`~presa_trio.wire.models.PromptMessage` is the messages, each
    with a role of schema ``$defs.Role`` and one content block the schema
    accepts (:mod:`presa_trio.wire.well_formed`). Anything else (a
    ``system`` role, a bare string as content, ``TextContent(None)``) is the
    handler's bug: -32603 with the detail in the log, never a result the
    schema refuses (schema ``$defs.GetPromptResult``).
    """
    result = output
    if isinstance(result, str):
        result = [models.PromptMessage("user", models.TextContent(result))]
    if isinstance(result, list | tuple):
        result = models.GetPromptResult(list(result))
    if (
        isinstance(result, models.GetPromptResult)
        and isinstance(result.messages, list)
        and all(is_prompt_message(message) for message in result.messages)
        and is_optional_text(result.description)
    ):
        return result
    raise report_fault(
        log,
        "prompt %s returned %s, which is not a prompt result (a str, a list of "
        "PromptMessage with a role user or assistant and one content block, or a "
        "GetPromptResult)",
        name,
        describe(output),
    )


def read_reference(params: dict[str, Any]) -> tuple[str, str]:
    """``ref`` of a completion request: ``(ref/prompt, name)`` or ``(ref/resource, uri)``."""
    ref = params.get("ref")
    if not isinstance(ref, dict):
        raise InvalidParams("completion/complete needs a 'ref' object")
    kind = ref.get("type")
    key = REFERENCE_KEYS.get(kind) if isinstance(kind, str) else None
    value = ref.get(key) if key else None
    if kind is None or key is None or not isinstance(value, str):
        raise InvalidParams("ref must be {type: ref/prompt, name} or {type: ref/resource, uri}")
    return kind, value


async def complete(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """Suggest values for one argument.

    A ``ref/resource`` names a resource's URI or a template (completion
    §Reference Types). An unknown prompt, resource or template, or any part
    of the request that breaks ``$defs.CompleteRequestParams``, is -32602,
    whether or not a handler is registered for the reference (completion
    §Security: validate all inputs).
    """
    kind, ref = read_reference(params)
    argument = params.get("argument")
    if not (
        isinstance(argument, dict)
        and isinstance(argument.get("name"), str)
        and isinstance(argument.get("value"), str)
    ):
        raise InvalidParams("'argument' must be {name: string, value: string}")
    context = params.get("context")
    if context is None:
        context = {}
    if not isinstance(context, dict):
        raise InvalidParams("'context' must be an object")
    context_arguments = read_string_map(context.get("arguments"), "context.arguments")
    if kind == "ref/prompt":
        known = ref in server.prompts
    else:
        templates = (t.template.uri_template for t in server.templates)
        known = ref in server.resources or ref in templates
    if not known:
        raise InvalidParams(f"Unknown reference: {ref}")
    handler = server.completions.get((kind, ref))
    if handler is None:
        completion = models.Completion(values=[], total=0, has_more=False)
    else:
        completion = await handler(ctx, argument["name"], argument["value"], context_arguments)
    if not is_completion(completion):
        raise report_fault(
            log,
            "completion of %s %s returned %s, which is not a Completion of at most %d strings "
            "(with an integer total and a boolean has_more, if any)",
            kind,
            ref,
            describe(completion),
            MAX_COMPLETION_VALUES,
        )
    return {"completion": to_wire(completion)}


def is_completion(completion: Any) -> bool:
    """A :class:`~presa_trio.wire.models.Completion` of at most 100 strings.

    Spec: completion §Completion Results ("Maximum 100 items per response");
    schema ``$defs.CompleteResult`` (``values``: strings; ``total`` an
    integer and ``hasMore`` a boolean, when given).
    """
    return (
        isinstance(completion, models.Completion)
        and isinstance(completion.values, list)
        and len(completion.values) <= MAX_COMPLETION_VALUES
        and all(isinstance(value, str) for value in completion.values)
        and (completion.total is None or is_integer(completion.total))
        and (completion.has_more is None or isinstance(completion.has_more, bool))
    )
