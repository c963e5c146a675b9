"""Key sets that follow the issuer: rotation under a flood, withdrawal by expiry.

presa runs with ``--auth-key-refetch 1``: it fetches the issuer's JWKS at
most once a second, whatever it is sent.
"""

from __future__ import annotations

import secrets

import httpx
import pytest
import trio

from presa_trio.auth.keys import DEFAULT_LIFETIME_S, MAX_LIFETIME_S, IssuerKeys
from tests.auth import scenarios
from tests.auth.authorization_server import AuthorizationServer
from tests.auth.harness import Presa, start_presa

REFETCH_S = 1.0
#: Slack on every bound: process scheduling on a loaded machine, never the design.
SLACK_S = 1.5


@pytest.fixture
async def presa(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> Presa:
    flags = ["--auth-issuer", issuer.issuer, "--auth-key-refetch", str(REFETCH_S)]
    return await start_presa(nursery, http, flags)


#: Requests of the flood, all flooders together, before the rotation.
FLOOD = 20


async def flood(
    presa: Presa, issuer: AuthorizationServer, sent: list[int], flowing: trio.Event
) -> None:
    """Tokens for presa, of the right issuer, each naming a key id nobody published;
    ``flowing`` is set once more than :data:`FLOOD` have been answered."""
    impostor = AuthorizationServer(issuer=issuer.issuer)
    while True:
        kid = {"kid": secrets.token_hex(8)}
        token = impostor.mint_jwt("alice-app", presa.resource, header=kid)
        response = await presa.call("tools/list", token=token)
        assert response.status_code in (401, 503), response.text
        sent.append(response.status_code)
        if len(sent) > FLOOD:
            flowing.set()


async def test_a_flood_of_unknown_key_ids_does_not_starve_a_rotation(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-09: under a flood of made-up ``kid`` values, a token of the issuer's new key
    works within the refetch interval and is never ``invalid_token``; the issuer's
    JWKS is fetched at most once per interval."""
    await scenarios.calls_a_tool(presa, issuer.mint_jwt("alice-app", presa.resource))
    sent: list[int] = []
    flowing = trio.Event()
    async with trio.open_nursery() as flooders:
        for _ in range(4):
            flooders.start_soon(flood, presa, issuer, sent, flowing)
        await trio.sleep(REFETCH_S * 1.5)  # the flood has used up a refetch
        with trio.fail_after(30):
            await flowing.wait()  # and runs, however slow this machine
        started, fetches = trio.current_time(), issuer.hits["/jwks"]
        issuer.rotate_keys()
        rotated = issuer.mint_jwt("alice-app", presa.resource)
        await scenarios.calls_a_tool_once_keys_refresh(presa, rotated, REFETCH_S + SLACK_S)
        elapsed = trio.current_time() - started
        flooders.cancel_scope.cancel()
    assert 401 in sent  # and ids known to be absent were refused
    assert issuer.hits["/jwks"] - fetches <= elapsed / REFETCH_S + 1


async def test_a_withdrawn_key_stops_working_when_the_key_set_expires(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-09: the JWKS says ``max-age=2``; a token of a key withdrawn from it is
    refused once the cached set expires, with nothing else prompting a refetch."""
    issuer.jwks_max_age = 2
    flags = ["--auth-issuer", issuer.issuer, "--auth-key-refetch", str(REFETCH_S)]
    presa = await start_presa(nursery, http, flags)
    old = issuer.mint_jwt("alice-app", presa.resource)
    await scenarios.calls_a_tool(presa, old)
    issuer.rotate_keys()  # the old key leaves the JWKS
    with trio.fail_after(issuer.jwks_max_age + SLACK_S):
        # Another process's cache expiring has no Trio Event to wait on.
        while (await presa.call("tools/list", token=old)).status_code == 200:  # noqa: ASYNC110
            await trio.sleep(0.1)
    await scenarios.refuses_invalid_token(presa, old)


async def test_an_overlapping_rotation_keeps_both_keys(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-09: while the issuer still publishes the old key, tokens of both work."""
    old = issuer.mint_jwt("alice-app", presa.resource)
    await scenarios.calls_a_tool(presa, old)
    issuer.rotate_keys(keep_old=True)
    new = issuer.mint_jwt("alice-app", presa.resource)
    await scenarios.calls_a_tool_once_keys_refresh(presa, new, REFETCH_S + SLACK_S)
    await scenarios.calls_a_tool(presa, old)


async def test_a_rotation_ends_the_remembered_tokens_of_a_withdrawn_key(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-09: a token answered from memory is refused as soon as a fetch of the key
    set (here prompted by a token of the new key) finds its key withdrawn, long
    before the set would have expired."""
    old = issuer.mint_jwt("alice-app", presa.resource)
    await scenarios.calls_a_tool(presa, old)
    await scenarios.calls_a_tool(presa, old)  # remembered now
    issuer.rotate_keys()
    new = issuer.mint_jwt("alice-app", presa.resource)
    await scenarios.calls_a_tool_once_keys_refresh(presa, new, REFETCH_S + SLACK_S)
    await scenarios.refuses_invalid_token(presa, old)
    await scenarios.calls_a_tool(presa, new)


async def test_a_key_id_told_to_wait_is_refused_once_a_fetch_lacks_it(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-09: a token whose ``kid`` the key set lacks, before presa may fetch it again,
    is 503 with ``Retry-After`` (the key may be new); once a fetch made after it (here
    prompted by another request) lacks that ``kid`` too, the token is 401
    ``invalid_token`` at once, with no wait for a further fetch."""
    refetch_s = 5
    flags = ["--auth-issuer", issuer.issuer, "--auth-key-refetch", str(refetch_s)]
    presa = await start_presa(nursery, http, flags)
    impostor = AuthorizationServer(issuer=issuer.issuer)
    told = impostor.mint_jwt("alice-app", presa.resource, header={"kid": "made-up-1"})
    prompting = impostor.mint_jwt("alice-app", presa.resource, header={"kid": "made-up-2"})

    await scenarios.calls_a_tool(presa, issuer.mint_jwt("alice-app", presa.resource))
    fetched = issuer.hits["/jwks"]  # the key set is fetched: the next one waits

    waiting = await presa.call("tools/list", token=told)
    assert waiting.status_code == 503
    await trio.sleep(int(waiting.headers["retry-after"]))
    await scenarios.refuses_invalid_token(presa, prompting)  # its fetch lacks both
    await scenarios.refuses_invalid_token(presa, told)
    assert issuer.hits["/jwks"] == fetched + 1


async def test_a_key_presa_cannot_use_leaves_the_others_usable(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-09: beside its signing key the issuer publishes one on a curve presa does
    not support and one missing a required member; presa ignores both (RFC 7517
    §5) rather than refusing the whole set, and the signing key's tokens work."""
    issuer.also_published = [
        {"kty": "EC", "crv": "secp256k1", "kid": "k1", "x": "AAAA", "y": "AAAA"},
        {"kty": "RSA", "kid": "no-modulus", "e": "AQAB"},
    ]
    presa = await start_presa(nursery, http, ["--auth-issuer", issuer.issuer])
    await scenarios.calls_a_tool(presa, issuer.mint_jwt("alice-app", presa.resource))


@pytest.mark.parametrize(
    ("cache_control", "trusted_s"),
    [
        ("max-age=315360000", MAX_LIFETIME_S),  # ten years: a day at most
        ("public, max-age=600", 600.0),
        ("no-store", REFETCH_S),  # the least: the refetch interval
        ("max-age=600, no-cache", REFETCH_S),
        (None, DEFAULT_LIFETIME_S),
    ],
)
async def test_a_key_set_is_trusted_as_long_as_its_cache_control_says_within_bounds(
    cache_control: str | None, trusted_s: float
) -> None:
    """A-09: a key set is kept as long as the issuer's ``Cache-Control`` says
    (``max-age``, RFC 9111 §5.2.2.1; ``no-store`` or ``no-cache``: the least), never
    less than the refetch interval (no issuer can make presa fetch on every request)
    nor more than a day (a withdrawn key stops working within it), an hour when it
    says nothing."""
    published = {"keys": [AuthorizationServer().key.as_dict(private=False)]}

    def answer(request: httpx.Request) -> httpx.Response:
        headers = {} if cache_control is None else {"cache-control": cache_control}
        return httpx.Response(200, json=published, headers=headers)

    keys = IssuerKeys("https://auth.example.com/jwks", REFETCH_S)
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        await keys.prepare(http)

    assert keys.expires_at - keys.fetched_at == trusted_s
