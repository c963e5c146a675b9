"""``request METHOD [JSON]``: any request, sent as it is, its result printed as JSON.

For what no other command covers: a method of an extension, a params
object to try by hand. The client adds only what every request carries
(``_meta`` with the protocol version, capabilities and client info, under
any ``_meta`` keys given) and, over HTTP, the mirrored headers of the
method table (:data:`presa_trio.client.connection.NAME_PARAMS`:
``Mcp-Method``, and ``Mcp-Name`` for the methods that name something). It
answers no ``input_required`` round and follows no task: the result is
printed as the server sent it, and a JSON-RPC error is exit 3.

Spec: basic/index §_meta; streamable-http §Standard Request Headers.
"""

from __future__ import annotations

from presa_trio.client.arguments import json_object
from presa_trio.client.errors import EXIT_RESULT
from presa_trio.client.output import pretty
from presa_trio.client.run import Run


async def request(run: Run) -> int:
    params = json_object(run.args.params, f"the params of {run.args.method}")
    result = await run.connection.request(run.args.method, params)
    run.console.result(result, pretty(result))
    return EXIT_RESULT
