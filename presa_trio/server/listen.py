"""``subscriptions/listen``: one long-lived stream of change notifications.

The stream opens with ``notifications/subscriptions/acknowledged`` naming the
honoured subset of the filter (extensions honour their own keys, such as
the Tasks extension's ``taskIds``), then carries only the requested changes, each
tagged with ``_meta.subscriptionId`` = the listen request's id (same JSON
type). The client ends it by closing the stream; the edge then cancels this
handler, and leaving the ``with`` block unsubscribes. A reader that falls
behind receives the newest change per topic
(:mod:`presa_trio.server.subscriptions`); one that stops reading while too
many topics change is ended with the listen result.

One client holds at most ``Server.max_listen_streams_per_client`` streams open
in this process (``--listen-max-streams-per-client``); one more is refused
as a task event stream past its client's limit is, 429 and a retryable
-32603 (:mod:`presa_trio.server.open_streams`), checked once the filter
is read.

With authorization on, a stream lasts no longer than the authority it was
opened with: once the access token lapses (its ``exp`` passes, an
introspection re-check finds it inactive), the subscription ends, nothing
pending is delivered, and the stream ends with the listen result, as a new
request with that token would be refused (authorization §Token Handling).

Spec: 2026-07-28 basic/patterns/subscriptions; SEP-2575 §subscriptions/listen RPC.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from presa_trio.auth.principal import access_scope
from presa_trio.server import discover
from presa_trio.server.context import RequestContext
from presa_trio.server.open_streams import stream_client
from presa_trio.server.registry import Server
from presa_trio.server.subscriptions import (
    PROMPTS_LIST_CHANGED,
    RESOURCE_UPDATED,
    RESOURCES_LIST_CHANGED,
    TOOLS_LIST_CHANGED,
    Change,
    Subscription,
    Wants,
)
from presa_trio.wire.envelope import notification
from presa_trio.wire.errors import InvalidParams
from presa_trio.wire.meta import META_SUBSCRIPTION_ID

#: Filter key -> the notification method it asks for.
LIST_CHANGED = {
    "toolsListChanged": TOOLS_LIST_CHANGED,
    "promptsListChanged": PROMPTS_LIST_CHANGED,
    "resourcesListChanged": RESOURCES_LIST_CHANGED,
}
#: Filter key -> the server capability, and its setting, that says the server sends it.
SENT_UNDER = {
    "toolsListChanged": ("tools", "listChanged"),
    "promptsListChanged": ("prompts", "listChanged"),
    "resourcesListChanged": ("resources", "listChanged"),
    "resourceSubscriptions": ("resources", "subscribe"),
}


def read_filter(params: dict[str, Any]) -> dict[str, Any]:
    """Validate ``params.notifications`` (schema ``$defs.SubscriptionFilter``).

    Every field is optional, and one that is present has its type: a
    ``null`` is no boolean and no list of URIs.
    """
    wanted = params.get("notifications")
    if not isinstance(wanted, dict):
        raise InvalidParams("subscriptions/listen needs a 'notifications' object")
    for key in LIST_CHANGED:
        if key in wanted and not isinstance(wanted[key], bool):
            raise InvalidParams(f"'{key}' must be a boolean")
    uris = wanted.get("resourceSubscriptions", [])
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        raise InvalidParams("'resourceSubscriptions' must be a list of URIs")
    return wanted


def supported(server: Server, key: str) -> bool:
    """Whether ``server`` sends what filter key ``key`` asks for: its capability is
    offered now, with the setting that announces it (server/discover)."""
    capability, setting = SENT_UNDER[key]
    return discover.offered(server, capability) and (
        discover.CORE_CAPABILITIES[capability].settings.get(setting) is True
    )


def honoured(server: Server, wanted: dict[str, Any]) -> dict[str, Any]:
    """The subset of the filter this server delivers.

    Unknown keys are left out, and so are the types the server does not
    support, such as ``promptsListChanged`` on a server with no prompts
    (subscriptions §Acknowledgment; schema
    ``$defs.SubscriptionsAcknowledgedNotificationParams``).
    """
    subset: dict[str, Any] = {
        key: True for key in LIST_CHANGED if wanted.get(key) is True and supported(server, key)
    }
    if wanted.get("resourceSubscriptions") and supported(server, "resourceSubscriptions"):
        subset["resourceSubscriptions"] = list(wanted["resourceSubscriptions"])
    return subset


def core_wants(subset: dict[str, Any]) -> Wants:
    """A predicate: does a stream with this honoured filter want ``change``?"""
    methods = {LIST_CHANGED[key] for key in LIST_CHANGED if subset.get(key)}
    uris = set(subset.get("resourceSubscriptions", ()))

    def wants(change: Change) -> bool:
        if change.method == RESOURCE_UPDATED:
            return change.params.get("uri") in uris
        return change.method in methods

    return wants


def any_of(predicates: list[Wants]) -> Wants:
    return lambda change: any(wants(change) for wants in predicates)


async def end_when_lapsed(lapsed: Callable[[], Awaitable[None]], changes: Subscription) -> None:
    """End ``changes`` once the token of its stream stops being valid."""
    await lapsed()
    changes.end()


async def listen(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """Acknowledge, then forward matching changes until the stream is closed."""
    wanted = read_filter(params)
    subset = honoured(server, wanted)
    predicates = [core_wants(subset)]
    for extension in server.extensions:
        part = await extension.subscription(ctx, wanted)
        if part is not None:
            subset |= part.honoured
            predicates.append(part.wants)
    tag = {META_SUBSCRIPTION_ID: ctx.request_id}
    client = stream_client(ctx, access_scope(ctx.principal))
    with (
        server.listen_streams.admit(client, server.max_listen_streams_per_client),
        server.changes.subscribe(any_of(predicates)) as changes,
    ):
        await ctx.send(
            notification(
                "notifications/subscriptions/acknowledged",
                {"_meta": tag, "notifications": subset},
            )
        )
        # The watch over the token ends the subscription and never fails; the
        # loop cancels it when the subscription ended otherwise.
        async with trio.open_nursery() as watch:
            if ctx.access.lapses:
                watch.start_soon(end_when_lapsed, ctx.access.lapsed, changes)
            async for change in changes:
                await ctx.send(notification(change.method, {**change.params, "_meta": tag}))
            watch.cancel_scope.cancel(reason="subscription ended")
    # The subscription was ended (its reader stopped reading, its token lapsed,
    # the server shuts down): end the stream with the listen result
    # (basic/patterns/subscriptions §Graceful Closure).
    return {"_meta": tag}
