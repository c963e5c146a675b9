"""A small typed presa server for the client's tests, served as ``MODULE:ATTR``.

Served by ``presa-trio serve tests.client.typed_server:server``. Written as
a user writes one (typed tools and a typed prompt, a completion,
annotations), with what the client commands it tests need to see: a
signature with a default, a tool that logs at three levels, one that
announces a resource update and a tool list change, and a prompt whose
arguments complete.
"""

from __future__ import annotations

from presa_trio.server import RequestContext, Server
from presa_trio.wire.models import Completion

server = Server("typed-fixture", "1.0.0")

#: What ``review``'s arguments complete to; ``framework`` depends on ``language``.
LANGUAGES = ["python", "pytorch", "pyside", "perl"]
FRAMEWORKS = {"python": ["flask", "fastapi"], "perl": ["mojolicious"]}


@server.tool(title="Greeter", annotations={"readOnlyHint": True, "openWorldHint": False})
async def greet(ctx: RequestContext, name: str, times: int = 1) -> str:
    """Greets someone by name."""
    return " ".join([f"Hello, {name}!"] * times)


@server.tool()
async def chatty(ctx: RequestContext) -> str:
    """Logs at debug, info and error, then answers."""
    await ctx.log("debug", "a detail", logger="chatty")
    await ctx.log("info", "started", logger="chatty")
    await ctx.log("error", {"failed": "nothing really"}, logger="chatty")
    return "done"


@server.tool()
async def touch(ctx: RequestContext, uri: str) -> str:
    """Says a resource was updated, then that the tools changed."""
    ctx.server.notify_resource_updated(uri)
    ctx.server.notify_tools_list_changed()
    return "touched"


@server.resource("note://today")
async def today(ctx: RequestContext) -> str:
    """A note for today."""
    return "Water the plants."


@server.prompt()
async def review(ctx: RequestContext, language: str, framework: str = "none") -> str:
    """Asks for a review of some code."""
    return f"Review this {language} code ({framework})."


@server.completion("ref/prompt", "review")
async def complete_review(
    ctx: RequestContext, argument: str, value: str, context_arguments: dict[str, str]
) -> Completion:
    if argument == "framework":
        choices = FRAMEWORKS.get(context_arguments.get("language", ""), [])
    else:
        choices = LANGUAGES
    found = [choice for choice in choices if choice.startswith(value)]
    return Completion(values=found[:2], total=len(found), has_more=len(found) > 2)
