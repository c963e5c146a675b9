"""Sign-in end to end against the official Python SDK's OAuth example (``simple-auth``).

Interop (basic/authorization §Authorization Flow Steps): ``presa-trio
login`` finds the example's authorization server from a 401, registers
itself there (RFC 7591), and prints the authorization URL; the test is the
person's browser, which submits the example's login form with the demo
credentials it shows, back to the client's loopback redirect. Then
``presa-trio list`` sends the kept token without asking anyone:

- to the example's own resource server, an SDK ``MCPServer`` that checks
  the token at the example's introspection endpoint;
- to presa, run with ``--auth-issuer`` naming the example's authorization
  server and introspecting its opaque tokens there; a sign-in at each
  server is kept in a file of its own.

The example and its servers: :mod:`tests.auth.sdk_example`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trio

from presa_trio.client.tokens import CONFIG_ENV
from tests.auth.harness import start_presa
from tests.auth.sdk_example import MCP_VERSION, Example, Unavailable, install_example, serve_example
from tests.auth.signing_in import login, submit_forms
from tests.client.helpers import client, client_environment


@pytest.fixture(scope="module")
def example_bin(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example installed in a venv of its own, kept in pytest's cache between runs."""
    cache = getattr(request.config, "cache", None)
    name = f"sdk-simple-auth-{MCP_VERSION}"
    root = cache.mkdir(name) if cache is not None else tmp_path_factory.mktemp(name)
    try:
        return install_example(root)
    except Unavailable as reason:
        pytest.skip(f"the SDK's simple-auth example cannot be had: {reason}")


@pytest.fixture
async def example(example_bin: Path, http: httpx.AsyncClient) -> AsyncIterator[Example]:
    async with serve_example(example_bin, http) as running:
        yield running


def kept_sign_ins(config: Path) -> dict[str, dict[str, object]]:
    """The kept sign-ins by endpoint, each file checked to be its owner's only."""
    kept = {}
    for path in (config / "tokens").iterdir():
        assert path.stat().st_mode & 0o777 == 0o600, path
        record = json.loads(path.read_text())
        kept[record["endpoint"]] = record
    return kept


async def test_login_then_list_at_the_examples_resource_server(
    example: Example, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Interop: signed in through the example's login form, the client lists and calls
    the example's tool with the kept token; the example grants its scope ``user``
    and no refresh token."""
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}
    status, said = await login(example.mcp_url, http, env, submit_forms)
    assert status == 0, said
    assert f"signed in to {example.mcp_url}" in said
    kept = kept_sign_ins(tmp_path)[example.mcp_url]
    assert kept["issuer"] == example.issuer
    assert kept["scope"] == "user"  # the example's PRM scopes_supported, granted
    assert kept["refresh_token"] is None  # the example issues none

    listed = await client("list", example.mcp_url, "--json", env=env)
    assert listed.status == 0, listed.stderr
    assert [tool["name"] for tool in json.loads(listed.stdout)["tools"]] == ["get_time"]
    assert "Open this URL" not in listed.stderr
    called = await client("call", example.mcp_url, "get_time", "--json", env=env)
    assert called.status == 0, called.stderr
    assert "current_time" in called.stdout


async def test_login_then_list_at_presa_with_the_example_as_its_authorization_server(
    nursery: trio.Nursery, example: Example, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    """Interop: presa introspects the example's opaque tokens at its endpoint, which asks
    no client authentication (presa authenticates as RFC 8414's default,
    client_secret_basic, with a secret the example ignores). A sign-in at presa and one
    at the example are kept in two files; signing out of one leaves the other."""
    flags = [
        *("--auth-issuer", example.issuer, "--auth-scope", "user"),
        *("--auth-client-id", "presa", "--auth-client-secret", "unused"),
        *("--auth-introspection-endpoint", example.issuer.rstrip("/") + "/introspect"),
    ]
    presa = await start_presa(nursery, http, flags)
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}
    for url in (presa.url, example.mcp_url):
        status, said = await login(url, http, env, submit_forms)
        assert status == 0, said

    kept = kept_sign_ins(tmp_path)
    assert sorted(kept) == sorted([presa.url, example.mcp_url])  # one file per server
    assert kept[presa.url]["resource"] == presa.url
    assert kept[presa.url]["access_token"] != kept[example.mcp_url]["access_token"]
    listed = await client("list", presa.url, "--json", env=env)
    assert listed.status == 0, listed.stderr
    assert json.loads(listed.stdout)["tools"]
    assert "Open this URL" not in listed.stderr

    out = await client("logout", presa.url, env=env)
    assert out.status == 0, out.stderr
    assert list(kept_sign_ins(tmp_path)) == [example.mcp_url]
