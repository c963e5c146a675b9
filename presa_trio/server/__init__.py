"""The server: the registration API, the method table, the core methods.

``Server`` holds what a server offers (:mod:`~presa_trio.server.registry`);
the method table says what each method is (:mod:`~presa_trio.server.methods`);
``Dispatcher`` answers requests with both. Handlers see the server through a
``ServerView`` on their ``RequestContext``. Edges (:mod:`presa_trio.http`,
:mod:`presa_trio.stdio`) only admit requests and write answers.
"""

from presa_trio.server.context import Connection, EmitFailed, RequestContext, ServerView
from presa_trio.server.dispatch import Dispatcher
from presa_trio.server.registry import (
    CacheHints,
    Extension,
    Method,
    MethodHandler,
    Server,
    SubscriptionPart,
    ToolError,
)
from presa_trio.wire.elicitation import Accepted, Cancelled, Declined, Elicited
from presa_trio.wire.hints import Field, SignatureError
from presa_trio.wire.schemas import SchemaError

__all__ = [
    "Accepted",
    "CacheHints",
    "Cancelled",
    "Connection",
    "Declined",
    "Dispatcher",
    "Elicited",
    "EmitFailed",
    "Extension",
    "Field",
    "Method",
    "MethodHandler",
    "RequestContext",
    "SchemaError",
    "Server",
    "ServerView",
    "SignatureError",
    "SubscriptionPart",
    "ToolError",
]
