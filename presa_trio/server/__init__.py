"""The server: the registration API, the method table, the core methods.

``Server`` holds what a server offers; ``Dispatcher`` answers requests with it.
Edges (:mod:`presa_trio.http`, :mod:`presa_trio.stdio`) only admit requests and
write answers.
"""

from presa_trio.server.context import RequestContext
from presa_trio.server.dispatch import Dispatcher
from presa_trio.server.extensions import Extension, MethodHandler
from presa_trio.server.registry import CacheHints, Server, ToolError
from presa_trio.wire.schemas import SchemaError

__all__ = [
    "CacheHints",
    "Dispatcher",
    "Extension",
    "MethodHandler",
    "RequestContext",
    "SchemaError",
    "Server",
    "ToolError",
]
