"""presa_trio: the Model Context Protocol 2026-07-28 and its Tasks extension, on Trio.

The package is layered; imports point downward only (see docs/architecture.md):

- ``presa_trio.wire``   sans-IO: models, the converter, the JSON-RPC envelope, errors.
- ``presa_trio.server`` the method table, the request context, the core methods.
- ``presa_trio.http``   the ASGI edge served by hypercorn.

The public registration API is :class:`presa_trio.server.Server`.
"""

__version__ = "0.1.0"
