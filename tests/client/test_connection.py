"""What the client's connection does with each answer: sign-ins it makes, requests it repeats.

Rules of this file: the peer is a small ASGI app that answers every POST as
its script says, served to the client's real :class:`HttpTransport` through
httpx's ASGI transport; the test counts the requests that reached it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, MutableMapping
from typing import Any

import attrs
import httpx
import pytest

from presa_trio.client.connection import MAX_SIGN_INS, Connection
from presa_trio.client.errors import ProtocolFailure, RequestError, Unauthorized
from presa_trio.client.transport import HttpTransport
from presa_trio.wire.errors import HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION
from presa_trio.wire.meta import META_CLIENT_INFO, META_PROTOCOL_VERSION, PROTOCOL_VERSION
from tests.client.scripted import request_of

URL = "http://peer.test/mcp"
#: An answer: the status, the headers and the JSON body (or bytes, sent as text), given
#: the request's body.
Answer = Callable[[dict[str, Any]], tuple[int, dict[str, str], Any]]


@attrs.define(eq=False)
class Peer:
    """An ASGI app answering each POST with ``answer``; ``received`` holds the bodies."""

    answer: Answer
    received: list[dict[str, Any]] = attrs.field(factory=list)

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        request = await request_of(receive)
        self.received.append(request)
        status, headers, answer = self.answer(request)
        # Bytes go as they are, as text: a body that is no JSON-RPC message.
        text = isinstance(answer, bytes)
        sent = [(b"content-type", b"text/plain" if text else b"application/json")]
        sent += [(name.encode(), value.encode()) for name, value in headers.items()]
        body = answer if text else json.dumps(answer).encode()
        await send({"type": "http.response.start", "status": status, "headers": sent})
        await send({"type": "http.response.body", "body": body})


def connection(http: httpx.AsyncClient, **options: Any) -> Connection:
    return Connection(HttpTransport(URL, http), timeout_s=10, **options)


async def test_a_401_no_sign_in_cures_ends_after_a_few_sign_ins() -> None:
    """Spec-mandated (basic/authorization §Step-Up Authorization Flow: clients SHOULD
    retry no more than a few times): a server that answers 401 whatever the token is
    met with :data:`MAX_SIGN_INS` sign-ins, each followed by the request once more; then
    the 401 is the command's failure, not a sign-in without end."""
    refused = {"www-authenticate": 'Bearer error="invalid_token"'}
    peer = Peer(lambda request: (401, refused, {}))
    sign_ins: list[dict[str, str]] = []

    async def authorize(challenge: dict[str, str]) -> None:
        sign_ins.append(challenge)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
        with pytest.raises(Unauthorized):
            await connection(http, authorize=authorize).request("tools/list", {})
    assert sign_ins == [{"error": "invalid_token"}] * MAX_SIGN_INS
    assert len(peer.received) == MAX_SIGN_INS + 1


def unsupported(versions: list[str]) -> Answer:
    """``UnsupportedProtocolVersionError`` naming ``versions``, to the first two requests; a
    result to any after them, so that a client asking without end is seen to."""

    def answer(request: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        if request["id"] > 2:
            return 200, {}, {"jsonrpc": "2.0", "id": request["id"], "result": {"tools": []}}
        data = {"supported": versions, "requested": PROTOCOL_VERSION}
        error = {"code": UNSUPPORTED_PROTOCOL_VERSION, "message": "unsupported", "data": data}
        return 400, {}, {"jsonrpc": "2.0", "id": request["id"], "error": error}

    return answer


async def test_an_unsupported_version_is_asked_again_only_when_ours_is_supported() -> None:
    """Spec-mandated (basic/versioning: on ``UnsupportedProtocolVersionError`` the client
    retries with a version both support, from ``data.supported``): a server that lists
    this client's one version is asked once more, not again and again; one that lists
    only others is not asked again, and its error is the answer."""
    for versions, sent in (([PROTOCOL_VERSION], 2), (["2025-11-25"], 1)):
        peer = Peer(unsupported(versions))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
            with pytest.raises(RequestError) as raised:
                await connection(http).request("tools/list", {})
        assert raised.value.code == UNSUPPORTED_PROTOCOL_VERSION, versions
        assert [r["method"] for r in peer.received] == ["tools/list"] * sent, versions


def error(request: dict[str, Any], code: int) -> tuple[int, dict[str, str], Any]:
    answer = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": "no"}}
    return 400, {}, answer


async def test_a_response_with_another_requests_id_is_the_servers_mistake() -> None:
    """Spec-mandated (basic/index §Responses: a response has the same id as the request
    it answers): a result with any other id answers nothing this client asked."""
    result: dict[str, Any] = {"tools": []}
    peer = Peer(lambda request: (200, {}, {"jsonrpc": "2.0", "id": 99, "result": result}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
        with pytest.raises(ProtocolFailure, match="an id that is not the request's"):
            await connection(http).request("tools/list", {})


async def test_an_error_only_a_modern_server_sends_asks_no_era() -> None:
    """Spec-mandated (streamable-http §Backward Compatibility: only a body that is no
    recognized modern JSON-RPC error suggests a server of another era): a first answer of
    ``HeaderMismatchError``, though its code lies in the range servers define, is the
    answer, and no ``server/discover`` or ``initialize`` goes to ask the server's era."""
    peer = Peer(lambda request: error(request, HEADER_MISMATCH))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
        with pytest.raises(RequestError) as raised:
            await connection(http).request("tools/list", {})
    assert raised.value.code == HEADER_MISMATCH
    assert [r["method"] for r in peer.received] == ["tools/list"]


async def test_a_server_defined_error_from_a_server_of_the_initialize_era_is_explained() -> None:
    """Spec-mandated (basic/versioning §Backward Compatibility with Initialization-Based
    Versions; streamable-http §Backward Compatibility): a server that answers the first
    request and ``server/discover`` with an error of its own range (-32000, as the
    TypeScript SDK's does before ``initialize``) and ``initialize`` with a result is
    said to speak the version it names."""

    def legacy(request: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        if request["method"] != "initialize":
            return error(request, -32000)
        result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {}}
        return 200, {}, {"jsonrpc": "2.0", "id": request["id"], "result": result}

    peer = Peer(legacy)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
        with pytest.raises(ProtocolFailure, match="speaks MCP 2025-11-25"):
            await connection(http).request("tools/list", {})
    assert [r["method"] for r in peer.received] == ["tools/list", "server/discover", "initialize"]


async def test_a_meta_given_with_the_params_is_sent_over_the_clients_own() -> None:
    """presa-defined (docs/client.md, ``request METHOD JSON``): a ``_meta`` in the params
    given is sent with the client's keys under it: each key given is sent as given, and
    the client's others still go."""
    given = {META_CLIENT_INFO: {"name": "someone", "version": "0"}, "trace": "x"}
    peer = Peer(lambda request: (200, {}, {"jsonrpc": "2.0", "id": 1, "result": {}}))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
        await connection(http).request("ping", {"_meta": given})
    sent = peer.received[0]["params"]["_meta"]
    assert {key: sent[key] for key in given} == given
    assert sent[META_PROTOCOL_VERSION] == PROTOCOL_VERSION


async def test_a_first_answer_that_is_no_json_rpc_message_asks_the_era() -> None:
    """Spec-mandated (streamable-http §Backward Compatibility: a 4xx whose body is no
    recognized modern JSON-RPC error suggests a server of another era): a server that
    answers the first request and ``server/discover`` with a page of text, and
    ``initialize`` with a result, is said to speak the version it names."""

    def legacy(request: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        if request["method"] != "initialize":
            return 400, {}, b"Bad Request: No valid session ID provided"
        result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {}}
        return 200, {}, {"jsonrpc": "2.0", "id": request["id"], "result": result}

    peer = Peer(legacy)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=peer)) as http:
        with pytest.raises(ProtocolFailure, match="speaks MCP 2025-06-18"):
            await connection(http).request("tools/list", {})
    assert [r["method"] for r in peer.received] == ["tools/list", "server/discover", "initialize"]
