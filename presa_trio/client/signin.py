"""Sign-in on demand: the kept token sent, refreshed when it expires, a new sign-in on a 401.

A command to a server that answers 401 signs in (:mod:`.oauth`), keeps the
result (:mod:`.tokens`) and asks again; the next command sends the kept
token without asking anyone. An expired token, or one the server refuses,
is refreshed first when a refresh token came with it; only when that fails
does the person sign in again. A 401 with ``insufficient_scope`` is a
step-up: the new sign-in asks for the union of the scopes.

Spec: 2026-07-28 basic/authorization §Authorization Flow Steps, §Step-Up
Authorization Flow, §Token Handling.
"""

from __future__ import annotations

import sys
import time
import webbrowser

import attrs
import httpx
import trio

from presa_trio.client import oauth, tokens
from presa_trio.client.challenges import www_authenticate
from presa_trio.client.discovery import resource_of
from presa_trio.client.errors import SignInFailed
from presa_trio.client.transport import HttpTransport, http_failures
from presa_trio.wire.models import JSONObject


async def print_url(url: str) -> None:
    """``--no-browser``: the person opens the URL wherever they like."""
    print(f"Open this URL to sign in:\n  {url}", file=sys.stderr, flush=True)


async def open_browser(url: str) -> None:
    """The system browser (RFC 8252 §6: an external user-agent), the URL printed too."""
    await print_url(url)
    await trio.to_thread.run_sync(webbrowser.open, url)


@attrs.define(eq=False)
class SignIn:
    """The sign-in of one transport's endpoint: what is kept, and how to get more."""

    http: httpx.AsyncClient
    transport: HttpTransport
    opener: oauth.Opener
    options: oauth.SignInOptions
    kept: JSONObject | None = None
    #: The token sent was got in this run: a 401 for it calls for a new sign-in.
    fresh: bool = False

    @property
    def resource(self) -> str:
        return resource_of(self.transport.where)

    async def use_kept(self) -> None:
        """Send the kept token, refreshed first if it has expired."""
        self.kept = await tokens.load(self.resource)
        if self.kept is None:
            return
        expires_at = self.kept.get("expires_at")
        if isinstance(expires_at, int | float) and expires_at <= time.time():
            await self.refresh()
        self.transport.token = str(self.kept["access_token"]) if self.kept else None

    async def refresh(self) -> bool:
        """A refreshed token kept and sent; False when there was none to refresh or it failed."""
        renewed = await oauth.refresh(self.http, self.kept) if self.kept else None
        if renewed is None:
            return False
        await self.keep(renewed)
        return True

    async def authorize(self, challenge: dict[str, str]) -> None:
        """On a 401: refresh a kept token, else sign in (a step-up, or an authorization server
        that changed, too: the new sign-in discovers it and registers there anew)."""
        step_up = challenge.get("error") == "insufficient_scope"
        kept_token = self.transport.token is not None and not self.fresh
        if not step_up and kept_token and await self.refresh():
            return
        await self.sign_in(challenge)

    async def sign_in(self, challenge: dict[str, str]) -> None:
        endpoint = self.transport.where
        try:
            signed = await oauth.sign_in(
                self.http, endpoint, challenge, self.opener, self.options, self.kept
            )
        except SignInFailed as failure:
            raise SignInFailed(f"cannot sign in to {endpoint}: {failure}") from None
        await self.keep(signed)

    async def keep(self, signed: JSONObject) -> None:
        self.kept, self.fresh = signed, True
        self.transport.token = str(signed["access_token"])
        await tokens.save(self.resource, signed)


async def login(signin: SignIn) -> None:
    """``presa-trio login URL``: sign in now, whatever is kept, as the server's 401 asks."""
    signin.kept = await tokens.load(signin.resource)
    with http_failures(signin.transport.where):
        response = await signin.http.post(
            signin.transport.where,
            json={"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {}},
            headers={"accept": "application/json, text/event-stream"},
        )
    header = response.headers.get("www-authenticate", "")
    await signin.sign_in(www_authenticate(header))
