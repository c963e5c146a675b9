"""The official Python SDK client (``mcp``), with its OAuth support, on a protected presa.

The SDK finds everything itself: the 401's ``resource_metadata``, presa's
Protected Resource Metadata, the issuer's RFC 8414 metadata, then a token
from the test authorization server (client credentials, with ``resource``)
that presa verifies against the issuer's JWKS. ``mode="2026-07-28"`` makes
the client speak this revision without probing for the 2025 handshake.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import httpx2
import pytest
import trio
from joserfc import jws
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.exceptions import OAuthFlowError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp.types import TextContent

from tests.auth import scenarios
from tests.auth.authorization_server import AuthorizationServer
from tests.auth.harness import Presa, free_port, start_presa

DOCS = Path(__file__).resolve().parents[2] / "docs" / "authorization.md"


class MemoryStorage:
    """The SDK's token storage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@pytest.fixture
async def presa(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> Presa:
    flags = ["--auth-issuer", issuer.issuer, "--auth-scope", "mcp"]
    return await start_presa(nursery, http, flags)


async def test_the_sdk_lists_and_calls_tools(presa: Presa, issuer: AuthorizationServer) -> None:
    """A-01, A-02, A-06: the SDK discovers the issuer from presa's challenge and
    metadata, gets a token for presa, and lists and calls tools with it."""
    assert await call_greet(presa.url, issuer) == "Hello, SDK!"
    assert issuer.hits["/token"] == 1
    assert issuer.hits["/.well-known/oauth-authorization-server"] >= 1


class Browser:
    """The user's browser: follows the authorization redirect, hands the code back.

    The test authorization server signs in and consents for the user named by
    ``login_hint`` at once, so following the URL yields the redirect with the
    code, ``state`` and ``iss``.
    """

    def __init__(self, http: httpx.AsyncClient, user: str) -> None:
        self.http = http
        self.user = user
        self.answer: dict[str, str] = {}
        self.pkce_method = ""

    async def open(self, url: str) -> None:
        query = parse_qs(urlsplit(url).query)
        self.pkce_method = query["code_challenge_method"][0]
        response = await self.http.get(url + "&login_hint=" + self.user)
        assert response.status_code == 302, response.text
        query = parse_qs(urlsplit(response.headers["location"]).query)
        self.answer = {key: values[0] for key, values in query.items()}

    async def callback(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(**self.answer)


def recipe(begin: str, end: str) -> dict[str, Any]:
    """Run the Python block of docs/authorization.md between two markers; its names."""
    page = DOCS.read_text(encoding="utf-8")
    block = page[page.index(begin) : page.index(end)]
    code = block[block.index("```python\n") + len("```python\n") : block.rindex("```")]
    names: dict[str, Any] = {}
    exec(compile(code, str(DOCS), "exec"), names)
    return names


async def test_the_documented_authorization_code_recipe(
    presa: Presa, issuer: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    """A-06, A-14: the recipe of docs/authorization.md, run as written: the SDK's
    ``OAuthClientProvider`` with nothing stored registers itself (RFC 7591), runs
    the authorization code flow with PKCE ``S256``, and calls a tool."""
    greet_as_user = recipe("<!-- begin: authorization-code recipe", "<!-- end of the auth")[
        "greet_as_user"
    ]
    browser = Browser(http, "bob")
    text = await greet_as_user(
        presa.url, "http://127.0.0.1:1/callback", browser.open, browser.callback
    )
    assert text == "Hello, SDK!"
    assert issuer.hits["/register"] == 1
    assert browser.pkce_method == "S256"
    assert browser.answer["iss"] == issuer.issuer


async def test_the_sdk_authorization_code_flow(
    presa: Presa, issuer: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    """A-06: the same flow through a pre-registered confidential client, with the
    RFC 9207 ``iss`` check; presa accepts bob's token."""
    storage = MemoryStorage()
    redirect = "http://127.0.0.1:1/callback"
    storage.client_info = OAuthClientInformationFull(
        client_id="bob-app",
        client_secret=issuer.secret("bob-app"),
        redirect_uris=[redirect],  # type: ignore[list-item]
        token_endpoint_auth_method="client_secret_basic",
    )
    browser = Browser(http, "bob")
    auth = OAuthClientProvider(
        presa.url,
        OAuthClientMetadata(redirect_uris=[redirect], scope="mcp"),  # type: ignore[list-item]
        storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )
    async with (
        httpx2.AsyncClient(auth=auth) as sdk_http,
        Client(
            streamable_http_client(presa.url, http_client=sdk_http), mode="2026-07-28"
        ) as client,
    ):
        result = await client.call_tool("greet", {"name": "Bob"})
    assert result.content == [TextContent(type="text", text="Hello, Bob!")]
    assert browser.answer["iss"] == issuer.issuer
    assert storage.tokens is not None
    claims = jws.extract_compact(storage.tokens.access_token.encode()).payload
    assert json.loads(claims)["sub"] == "bob"


async def test_localhost_needs_auth_resource(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """A-07: a client at ``http://localhost:PORT/mcp`` asks for tokens for that URI;
    with ``--auth-resource`` naming it, presa accepts them, and without, the
    metadata names ``127.0.0.1`` and the SDK stops before asking for a token."""
    port = free_port()
    url = f"http://localhost:{port}/mcp"
    flags = ["--auth-issuer", issuer.issuer, "--auth-scope", "mcp", "--auth-resource", url]
    presa = await start_presa(nursery, http, flags, port=port)
    assert (await http.get(scenarios.metadata_url(presa))).json()["resource"] == url
    assert await call_greet(url, issuer) == "Hello, SDK!"
    presa.process.terminate()
    await presa.process.wait()
    await start_presa(nursery, http, flags[:-2], port=port)
    tokens = issuer.hits.get("/token", 0)
    with pytest.raises(ExceptionGroup) as refused:
        await call_greet(url, issuer)
    assert refused.group_contains(OAuthFlowError, match="does not match", depth=None)
    assert issuer.hits.get("/token", 0) == tokens


async def call_greet(url: str, issuer: AuthorizationServer) -> str:
    """The client credentials recipe of docs/authorization.md: list the tools, call one."""
    auth = ClientCredentialsOAuthProvider(
        url,
        MemoryStorage(),
        "alice-app",
        issuer.secret("alice-app"),
        scope="mcp",
        issuer=issuer.issuer,
    )
    async with (
        httpx2.AsyncClient(auth=auth) as sdk_http,
        Client(streamable_http_client(url, http_client=sdk_http), mode="2026-07-28") as client,
    ):
        listed = await client.list_tools()
        assert "greet" in {tool.name for tool in listed.tools}
        result = await client.call_tool("greet", {"name": "SDK"})
    content = result.content[0]
    assert isinstance(content, TextContent)
    return content.text
