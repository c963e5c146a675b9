"""A server whose one extension method hands back whatever a test gives it."""

from __future__ import annotations

from typing import Any

from presa_trio.server import Extension, Method, RequestContext, Server


def server_returning(name: str, value: Any) -> Server:
    """A server named ``name`` whose extension ``com.example/<name>`` has one method,
    ``<name>/get``, answering with ``value`` as it is, right or wrong."""

    async def get(server: Server, ctx: RequestContext, params: dict[str, Any]) -> Any:
        return value

    class Returning(Extension):
        id = f"com.example/{name}"

        def methods(self) -> list[Method]:
            return [Method(f"{name}/get", get)]

    server = Server(name, "1.0.0")
    server.add_extension(Returning())
    return server
