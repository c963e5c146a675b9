"""The extension hook interface (SEP-2133).

An extension plugs into a :class:`~presa_trio.server.Server` without editing
the core. It can:

- advertise itself under ``capabilities.extensions[<id>]`` in ``server/discover``;
- add methods (``methods``);
- wrap an existing method (``wrap``), e.g. to answer ``tools/call`` differently
  when the request declared the extension;
- add ``Mcp-Name`` header rules for its methods (``name_params``);
- run for the server's lifetime (``run``), e.g. to own a nursery of workers;
- honour its own keys of a ``subscriptions/listen`` filter (``subscription``),
  e.g. ``taskIds``, and so receive the changes it publishes on the server's bus.

-32021 for a missing declaration is
:meth:`presa_trio.wire.errors.MissingRequiredClientCapability.for_extension`.

Spec: SEP-2133 (extensions); 2026-07-28 basic/index §Extensions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import trio

from presa_trio.server.context import RequestContext
from presa_trio.server.subscriptions import Wants

if TYPE_CHECKING:
    from presa_trio.server.registry import Server

#: A method handler: the request context and raw params in, a wire result out.
#: The result may omit ``resultType``; the dispatcher stamps ``"complete"``.
MethodHandler = Callable[[RequestContext, dict[str, Any]], Awaitable[dict[str, Any]]]


@attrs.frozen
class SubscriptionPart:
    """An extension's share of one listen stream: what it honours, and which changes."""

    # Merged into the acknowledgement's ``notifications`` (the honoured filter).
    honoured: dict[str, Any]
    # Which published changes this stream receives on the extension's behalf.
    wants: Wants


class Extension:
    """Base class for extensions; every hook defaults to "nothing to add"."""

    #: The extension identifier, e.g. ``io.modelcontextprotocol/tasks``.
    id: str = ""
    #: The settings object advertised in ``server/discover``.
    settings: Mapping[str, Any] = {}
    #: ``Mcp-Name`` rules: method -> the params key the header mirrors (wire §13.5).
    name_params: Mapping[str, str] = {}

    def attach(self, server: Server) -> None:
        """Called once when the extension is added to ``server``."""

    def methods(self) -> Mapping[str, MethodHandler]:
        """Methods this extension adds to the method table."""
        return {}

    def wrap(self, method: str, handler: MethodHandler) -> MethodHandler:
        """Return ``handler`` or a wrapper around it; called for every method."""
        return handler

    def subscription(
        self, ctx: RequestContext, wanted: Mapping[str, Any]
    ) -> SubscriptionPart | None:
        """Honour this extension's keys of a listen filter; ``None`` if it has none."""
        return None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run for the server's lifetime inside its nursery; the default does nothing."""
        task_status.started()
