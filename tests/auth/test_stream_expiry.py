"""A listen stream lasts no longer than the token it was opened with.

A JWT's stream ends with the listen result once ``exp`` (plus the leeway,
0 here) passes, or once a fetch of the key set withdraws its key; an
opaque token's ends at the first re-check after it is
revoked, within ``--auth-cache-ttl``; and in both cases a new request with
the token is refused from then on.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import trio

from tests.auth import scenarios
from tests.auth.authorization_server import AuthorizationServer
from tests.auth.harness import SLACK_S, Presa, start_presa

#: ``--auth-cache-ttl`` of the servers that introspect: how long a verification holds.
CACHE_TTL_S = 1.0


async def introspected_task(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> tuple[Presa, str, str]:
    """presa introspecting ``issuer``'s opaque tokens, re-checked every ``CACHE_TTL_S``;
    alice's token, and a task of hers."""
    flags = ["--auth-issuer", issuer.issuer, "--auth-client-id", "presa"]
    flags += ["--auth-client-secret", issuer.secret("presa")]
    presa = await start_presa(nursery, http, [*flags, "--auth-cache-ttl", str(CACHE_TTL_S)])
    token = issuer.mint_opaque("alice-opaque", presa.resource)
    return presa, token, await scenarios.create_task(presa, token)


async def listen_to_the_end(presa: Presa, token: str, task: str) -> list[dict[str, Any]]:
    async with scenarios.listening(presa, token, [task]) as events:
        return [message async for message in events]


def ends_with_the_result(messages: list[dict[str, Any]]) -> None:
    assert messages[0]["method"] == "notifications/subscriptions/acknowledged"
    assert "result" in messages[-1], messages[-1]
    assert all(m.get("method") != "notifications/tasks" for m in messages)


@asynccontextmanager
async def listening_on(presa: Presa, token: str, task: str) -> AsyncIterator[trio.Event]:
    """A listen with ``token``, still open half a second in; the Event is set once it
    has ended with its result. Leaving the block waits for that end."""
    ended = trio.Event()

    async def listen() -> None:
        ends_with_the_result(await listen_to_the_end(presa, token, task))
        ended.set()

    async with trio.open_nursery() as listener:
        listener.start_soon(listen)
        await trio.sleep(0.5)
        assert not ended.is_set()
        yield ended


async def test_a_jwt_listen_ends_at_exp(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-16: the stream ends with its result by ``exp`` (plus leeway), not later."""
    flags = ["--auth-issuer", issuer.issuer, "--auth-leeway", "0"]
    presa = await start_presa(nursery, http, flags)
    long_lived = issuer.mint_jwt("alice-app", presa.resource)
    task = await scenarios.create_task(presa, long_lived)
    # exp is whole seconds past a truncated now: over 3 s to open the stream, loaded or not.
    short = issuer.mint_jwt("alice-app", presa.resource, lifetime_s=4)
    expires = float(scenarios.claims(short)["exp"])
    with trio.fail_after(expires - time.time() + SLACK_S):
        messages = await listen_to_the_end(presa, short, task)
    ended = time.time()
    ends_with_the_result(messages)
    assert expires - 0.1 <= ended <= expires + SLACK_S, (ended, expires)
    await scenarios.refuses_invalid_token(presa, short)


async def test_an_introspected_listen_ends_once_revoked(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-12, A-16: revoked, the token's stream ends within ``--auth-cache-ttl``, and a
    new request with it is refused within the same bound."""
    presa, token, task = await introspected_task(nursery, http, issuer)
    async with listening_on(presa, token, task) as ended:
        issuer.revoke(token)
        with trio.fail_after(CACHE_TTL_S + SLACK_S):
            await ended.wait()
    await scenarios.refuses_invalid_token(presa, token)


async def test_a_jwt_listen_ends_when_a_fetch_withdraws_its_key(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-09, A-16: a stream opened with a token of a key the issuer withdrew ends with
    its result as soon as presa fetches the key set again (here prompted by a token
    of the new key), not at the old set's expiry an hour later."""
    refetch_s = 1.0
    flags = ["--auth-issuer", issuer.issuer, "--auth-key-refetch", str(refetch_s)]
    presa = await start_presa(nursery, http, flags)
    old = issuer.mint_jwt("alice-app", presa.resource)
    task = await scenarios.create_task(presa, old)
    async with listening_on(presa, old, task) as ended:
        issuer.rotate_keys()
        new = issuer.mint_jwt("alice-app", presa.resource)
        await scenarios.calls_a_tool_once_keys_refresh(presa, new, refetch_s + SLACK_S)
        with trio.fail_after(SLACK_S):
            await ended.wait()
    await scenarios.refuses_invalid_token(presa, old)


async def test_a_listen_ends_when_its_token_can_no_longer_be_checked(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-12, A-16: authority that cannot be confirmed is not assumed: once the
    introspection endpoint fails (HTTP 503) at the stream's re-check, the stream ends
    with its result, within ``--auth-cache-ttl``, as for a revoked token."""
    presa, token, task = await introspected_task(nursery, http, issuer)
    async with listening_on(presa, token, task) as ended:
        issuer.statuses["/introspect"] = 503
        with trio.fail_after(CACHE_TTL_S + SLACK_S):
            await ended.wait()
