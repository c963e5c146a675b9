"""``complete``: what a server suggests for a prompt's or a resource template's argument.

::

    presa-trio complete URL prompt code_review language=py
    presa-trio complete URL template 'file:///{path}' path=src/
    presa-trio complete URL prompt code_review framework=fla language=python

The first ``ARG=VALUE`` is the argument being completed and what is typed
so far; the words after it are the arguments already chosen, sent as
``context.arguments`` (server/utilities/completion: "clients should
include previous completions"). The suggestions are printed one per line;
when the server has more than it sent (``hasMore``, ``total``), stderr
says how many. The prompt or template is looked up in the server's list
first, as ``call`` looks up its tool: one it does not list, or an argument
the prompt does not take, is a usage error (exit 2). A server without the
``completions`` capability answers -32601: exit 3, as any refusal.

Spec: server/utilities/completion §Requesting Completions, §Reference Types,
§Completion Results.
"""

from __future__ import annotations

from presa_trio.client.arguments import as_strings, parse_pairs
from presa_trio.client.errors import EXIT_RESULT, UsageProblem
from presa_trio.client.output import one_line
from presa_trio.client.run import Run, find_prompt, find_template
from presa_trio.client.transport import object_at
from presa_trio.wire.models import JSONObject


async def reference(run: Run, kind: str, ref: str, argument: str) -> JSONObject:
    """``ref/prompt`` by name or ``ref/resource`` by URI template (§Reference Types),
    once the server's list shows it, and for a prompt that it takes ``argument``."""
    if kind == "template":
        await find_template(run, ref)
        return {"type": "ref/resource", "uri": ref}
    listed = (await find_prompt(run, ref)).get("arguments")
    names = [
        a.get("name") for a in (listed if isinstance(listed, list) else []) if isinstance(a, dict)
    ]
    if argument not in names:
        shown = ", ".join(map(str, names)) or "none"
        raise UsageProblem(f"prompt {ref!r} has no argument {argument!r} (its arguments: {shown})")
    return {"type": "ref/prompt", "name": ref}


def more_line(completion: JSONObject, shown: int) -> str | None:
    """``5 of 10 suggestions`` when the server has more than it sent, else None."""
    total = completion.get("total")
    if isinstance(total, int) and not isinstance(total, bool) and total > shown:
        return f"{shown} of {total} suggestions"
    if completion.get("hasMore") is True:
        return f"{shown} suggestions, and more"
    return None


async def complete(run: Run) -> int:
    args = run.args
    name, equals, value = args.argument.partition("=")
    if not equals or not name:
        raise UsageProblem(f"complete: {args.argument!r} is not ARG=VALUE")
    params: JSONObject = {
        "ref": await reference(run, args.kind, args.ref, name),
        "argument": {"name": name, "value": value},
    }
    if context := as_strings(parse_pairs(args.context, {}, "the context")):
        params["context"] = {"arguments": context}
    result = await run.connection.request("completion/complete", params)
    completion = object_at(result, "completion")
    values = completion.get("values")
    values = values if isinstance(values, list) else []
    if values or run.console.json:
        run.console.result(result, "\n".join(one_line(str(value)) for value in values))
    if not values:
        run.console.note("no suggestions")
    elif said := more_line(completion, len(values)):
        run.console.note(said)
    return EXIT_RESULT
