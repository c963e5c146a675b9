"""``--token`` (or ``$PRESA_TOKEN``) against a presa that requires a bearer token,
and the one line a 401 becomes: where the resource's metadata is
(basic/authorization §Protected Resource Metadata Discovery)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.client.helpers import client, client_environment
from tests.e2e.serve_process import ServeProcess, presa_serve

TOKEN = "0123456789abcdef0123"
# The metadata must name an authorization server; development tokens need none to
# answer, so an unreachable one is only advertised.
ISSUER = "http://127.0.0.1:9"


@pytest.fixture
async def guarded() -> AsyncIterator[ServeProcess]:
    async with presa_serve("--auth-issuer", ISSUER, "--auth-token", f"alice={TOKEN}") as served:
        yield served


async def test_a_token_from_the_flag_or_the_environment(guarded: ServeProcess) -> None:
    flagged = await client("call", guarded.url, "greet", "name=Ada", "--token", TOKEN)
    assert flagged.stdout == "Hello, Ada!\n", flagged.stderr
    environment = {**client_environment(), "PRESA_TOKEN": TOKEN}
    from_env = await client("call", guarded.url, "greet", "name=Ada", env=environment)
    assert from_env.stdout == "Hello, Ada!\n", from_env.stderr


async def test_a_401_says_where_the_metadata_is(guarded: ServeProcess) -> None:
    """Without a token the 401 starts a sign-in, which fails at the authorization
    server (nothing listens there) and says so; with a refused token the line
    names the resource_metadata the server's WWW-Authenticate gave, and the
    authorization server that metadata names (the server is on ``--port 0``:
    its metadata URL names the port it bound)."""
    async with httpx.AsyncClient() as http:
        challenge = (await http.post(guarded.url, content=b"{}")).headers["www-authenticate"]
    metadata = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
    missing = await client("list", guarded.url)
    assert missing.status == 3
    assert missing.error() == (
        f"cannot sign in to {guarded.url}: {ISSUER} publishes no authorization server metadata"
    )
    refused = await client("list", guarded.url, "--token", "not-the-token")
    assert refused.status == 3
    assert refused.error().startswith(
        f"{guarded.url} refused the token: 401 Unauthorized (invalid_token"
    )
    assert refused.error().endswith(
        f"; its resource metadata is at {metadata}, naming the authorization server {ISSUER}"
    )


@pytest.mark.parametrize("token", ["caf\u00e9", "two words", "line\nbreak"])
async def test_a_token_no_header_can_carry_is_a_usage_error(token: str) -> None:
    """RFC 6750 §2.1: ``Authorization: Bearer`` carries a ``b64token``; another given by
    ``--token`` or ``$PRESA_TOKEN`` is the person's mistake, said in one line before
    anything is sent (exit 2), not a stack trace."""
    flagged = await client("list", "http://127.0.0.1:9/mcp", "--token", token)
    environment = {**client_environment(), "PRESA_TOKEN": token}
    from_env = await client("list", "http://127.0.0.1:9/mcp", env=environment)
    for ran in (flagged, from_env):
        assert ran.status == 2, ran.stderr
        assert ran.error().startswith("--token (or $PRESA_TOKEN) is no bearer token")
