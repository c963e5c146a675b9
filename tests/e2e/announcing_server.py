"""A server whose tool announces changes: ``serve tests.e2e.announcing_server:server``.

``announce`` calls ``ctx.server.notify_resource_updated(uri)`` for each URI
of ``uris``, then, with ``tools`` true, ``notify_tools_list_changed()``:
what a server's code does when what it serves changes. The Tasks
extension is added so that ``--store`` takes the server's tasks, and with
them its store's relay of change notifications.
"""

from __future__ import annotations

from typing import Any

from presa_trio.server import RequestContext, Server
from presa_trio.tasks import TasksExtension

server = Server("announcing", "1.0.0")
server.add_extension(TasksExtension())

#: The resource whose updates the tests follow; a listen stream may name any URI.
WATCHED = "test://watched"


@server.resource(WATCHED, name="watched", mime_type="text/plain")
async def watched(ctx: RequestContext) -> str:
    return "watched"


@server.tool(
    description="Announces each of `uris` updated, then, if `tools`, the tool list changed",
    input_schema={
        "type": "object",
        "properties": {
            "uris": {"type": "array", "items": {"type": "string"}},
            "tools": {"type": "boolean"},
        },
        "required": ["uris", "tools"],
    },
)
async def announce(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    for uri in arguments["uris"]:
        ctx.server.notify_resource_updated(uri)
    if arguments["tools"]:
        ctx.server.notify_tools_list_changed()
    return "announced"
