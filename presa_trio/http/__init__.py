"""The Streamable HTTP edge: an ASGI app for hypercorn, and a one-call server.

:func:`serve_http` is what a user calls; :class:`~presa_trio.http.app.McpApp`
is the ASGI application it serves, usable under any ASGI server on Trio.
"""

from presa_trio.http.app import McpApp
from presa_trio.http.serving import serve_http

__all__ = ["McpApp", "serve_http"]
