"""An MCP endpoint that asks for a sign-in as a test sets it up, on hypercorn and Trio.

presa's own server answers a 401 the one right way; the client must also
cope with servers that answer it otherwise, and refuse the ones that point
it at someone else's resource. This endpoint answers every request without
an accepted token 401 with :attr:`ProtectedResource.challenge` as its
``WWW-Authenticate``, serves the JSON documents of
:attr:`ProtectedResource.documents` (protected resource metadata, RFC
9728) at their paths, and answers a request with an accepted token with
an empty JSON-RPC result; at a path a test stalls it never answers. It
keeps every request it saw, with the ``authorization`` header it came
with, so a test can say which token went where.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import trio
from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, Scope

from tests.auth.authorization_server import answer_lifespan


@attrs.frozen
class Seen:
    """One request the endpoint received."""

    method: str
    path: str
    authorization: str | None


@attrs.define(eq=False)
class ProtectedResource:
    """The endpoint's state, and its ASGI application (``await resource(scope, ...)``)."""

    origin: str = ""  # set once the socket is bound
    path: str = "/mcp"
    #: The ``WWW-Authenticate`` of its 401s.
    challenge: str = "Bearer"
    #: JSON documents by path: its protected resource metadata, wherever a test puts it;
    #: bytes are sent as they are (a body no JSON encoder would write).
    documents: dict[str, dict[str, Any] | bytes] = attrs.field(factory=dict)
    #: Paths it never answers: a request there waits until the client gives up.
    stalled: set[str] = attrs.field(factory=set)
    #: The access tokens it accepts; every other request to :attr:`path` is 401.
    accepted: set[str] = attrs.field(factory=set)
    seen: list[Seen] = attrs.field(factory=list)

    @property
    def url(self) -> str:
        return self.origin + self.path

    def tokens_sent(self) -> list[str]:
        """The bearer tokens it was sent, in order."""
        prefix = "Bearer "
        return [
            s.authorization[len(prefix) :]
            for s in self.seen
            if s.authorization and s.authorization.startswith(prefix)
        ]

    def answer(self, method: str, path: str, authorization: str | None) -> tuple[int, Any]:
        if method == "GET" and path in self.documents:
            return 200, self.documents[path]
        if path != self.path:
            return 404, {"error": "not_found"}
        token = (authorization or "").removeprefix("Bearer ")
        if token not in self.accepted:
            return 401, {"error": "unauthorized"}
        return 200, {"jsonrpc": "2.0", "id": 0, "result": {}}

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] == "lifespan":
            await answer_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        while True:
            event: Any = await receive()
            if not event.get("more_body", False):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        authorization = headers.get("authorization")
        self.seen.append(Seen(scope["method"], scope["path"], authorization))
        if scope["path"] in self.stalled:
            await trio.sleep_forever()
        status, answer = self.answer(scope["method"], scope["path"], authorization)
        sent = [(b"content-type", b"application/json")]
        if status == 401:
            sent.append((b"www-authenticate", self.challenge.encode()))
        await send(
            {"type": "http.response.start", "status": status, "headers": sent, "trailers": False}
        )
        body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        await send({"type": "http.response.body", "body": body, "more_body": False})
