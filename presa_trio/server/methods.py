"""The core method table: every method the 2026-07-28 core defines, one row each.

A row (:class:`~presa_trio.server.registry.Method`) is the whole of what the
server knows about a method, and everything else is derived from the rows:

- dispatch: the handler, called only while the row's capability is offered
  (else -32601, exactly as if the method were absent);
- ``server/discover``: the capability, advertised by the same test
  (:mod:`presa_trio.server.discover`);
- the HTTP edge: ``Mcp-Name`` mirrors ``params[name_param]``
  (basic/transports/streamable-http §Standard Request Headers; the rule is
  :data:`presa_trio.wire.headers.CORE_NAME_PARAMS`, which clients read too) and, for
  ``tools/call``, ``Mcp-Param-*`` mirror the arguments the tool marks
  (§Custom Headers from Tool Parameters);
- multi round-trip: only rows with ``may_ask`` may answer ``input_required``
  (basic/patterns/mrtr §Supported Requests).

The requests 2026-07-28 removed (``initialize``, ``ping``,
``logging/setLevel``, ``resources/subscribe``, ``resources/unsubscribe``;
SEP-2575 §Deprecated and Removed RPCs) have no row, so they are -32601.
Extensions add rows through :meth:`~presa_trio.server.registry.Extension.methods`.

Spec: 2026-07-28 schema ``ClientRequest``; server/tools, server/resources,
server/prompts, server/utilities/completion, server/discover,
basic/patterns/subscriptions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from presa_trio.server import discover, listen, prompts, resources, tools
from presa_trio.server.registry import Method
from presa_trio.wire.headers import CORE_NAME_PARAMS

CORE_METHODS: tuple[Method, ...] = (
    Method("server/discover", discover.discover),
    Method("subscriptions/listen", listen.listen),
    Method("tools/list", tools.list_tools, capability="tools"),
    Method(
        "tools/call",
        tools.call_tool,
        capability="tools",
        name_param=CORE_NAME_PARAMS["tools/call"],
        param_headers=tools.param_headers,
        may_ask=True,
    ),
    Method("prompts/list", prompts.list_prompts, capability="prompts"),
    Method(
        "prompts/get",
        prompts.get_prompt,
        capability="prompts",
        name_param=CORE_NAME_PARAMS["prompts/get"],
        may_ask=True,
    ),
    Method("resources/list", resources.list_resources, capability="resources"),
    Method("resources/templates/list", resources.list_templates, capability="resources"),
    Method(
        "resources/read",
        resources.read_resource,
        capability="resources",
        name_param=CORE_NAME_PARAMS["resources/read"],
        may_ask=True,
    ),
    Method("completion/complete", prompts.complete, capability="completions"),
)


def name_params(rows: Iterable[Method]) -> Mapping[str, str]:
    """The ``Mcp-Name`` rules of ``rows``: method -> the params key the header mirrors."""
    return {row.name: row.name_param for row in rows if row.name_param is not None}
