"""What checking a JWT access token costs per request, in process.

Three CPU figures (``time.process_time``, one process, no sockets), each the
best of a few repetitions:

1. ``tools/call test_simple_text`` through presa's ASGI app, authorization off;
2. the same request with a JWT access token (RS256, RFC 9068) checked by the
   authorization rung, the issuer's key cached, the token reused as clients do;
3. :meth:`JwtVerifier.verify` alone on that reused token;
4. the full check of a token seen for the first time (signature and claims).

The target compares the added cost per request (2 minus 1) with presa's own
work on a tools/call (figure 1). Figure 1 leaves out hypercorn's HTTP
parsing, so the ratio is an upper bound of the share in a served request.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import attrs
import trio
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from bench.mcp import body
from presa_trio.auth.guard import ResourceGuard
from presa_trio.auth.jwt_tokens import JwtVerifier
from presa_trio.auth.keys import IssuerKeys
from presa_trio.demo import build_server
from presa_trio.http.app import McpApp

ISSUER = "https://issuer.example"
RESOURCE = "http://localhost:3000/mcp"
#: The target: a JWT check costs at most this share of presa's tools/call CPU.
TARGET_SHARE = 0.10
REPEATS = 7


@attrs.frozen
class AuthReport:
    requests: int
    plain_us: float  # presa's tools/call, authorization off
    with_jwt_us: float  # the same with a JWT checked, token reused
    verify_us: float  # the JWT check alone, token reused
    first_use_us: float  # the full check of a new token

    @property
    def share(self) -> float:
        return max(self.with_jwt_us - self.plain_us, 0.0) / self.plain_us

    @property
    def met(self) -> bool:
        return self.share <= TARGET_SHARE


def signed_token(key: RSAKey) -> str:
    now = int(time.time())
    claims: dict[str, object] = {"iss": ISSUER, "sub": "alice", "aud": RESOURCE}
    claims |= {"client_id": "bench", "iat": now, "exp": now + 3600, "scope": "mcp"}
    return jwt.encode({"alg": "RS256", "typ": "at+jwt", "kid": key.kid}, claims, key)


def scope_for(token: str | None) -> dict[str, Any]:
    headers = [
        (b"host", b"localhost:3000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", b"test_simple_text"),
    ]
    if token is not None:
        headers.append((b"authorization", b"Bearer " + token.encode()))
    return {"type": "http", "http_version": "1.1", "method": "POST", "path": "/mcp",
            "query_string": b"", "headers": headers}  # fmt: skip


async def one_call(app: McpApp, scope: dict[str, Any], payload: bytes) -> None:
    statuses: list[int] = []
    complete = trio.Event()

    async def receive() -> dict[str, Any]:
        if not statuses:
            statuses.append(0)
            return {"type": "http.request", "body": payload, "more_body": False}
        await complete.wait()  # as hypercorn: the end of the response ends the stream
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        if event["type"] == "http.response.start":
            statuses.append(event["status"])
        elif not event.get("more_body", False):
            complete.set()

    await app.http(scope, receive, send)  # type: ignore[arg-type]
    if statuses[-1] != 200:
        raise RuntimeError(f"tools/call answered {statuses[-1]}")


async def cpu_us(requests: int, *steps: Callable[[], Awaitable[object]]) -> list[float]:
    """Best-of-``REPEATS`` CPU microseconds per call of each step, taken in turn.

    The steps alternate within each repetition, so a neighbour's load on a
    shared machine hits them alike.
    """
    best = [float("inf")] * len(steps)
    for _ in range(REPEATS):
        for index, step in enumerate(steps):
            started = time.process_time()
            for _ in range(requests):
                await step()
            best[index] = min(best[index], (time.process_time() - started) / requests * 1e6)
    return best


def guard(verifier: JwtVerifier) -> ResourceGuard:
    return ResourceGuard(RESOURCE, verifier, authorization_servers=[ISSUER])


async def measure(requests: int) -> AuthReport:
    key = RSAKey.generate_key(2048, parameters={"kid": "bench"})
    token = signed_token(key)
    now = time.time()
    keys = IssuerKeys(ISSUER + "/jwks", keys=KeySet([key]), fetched_at=now, expires_at=now + 3600)
    verifier = JwtVerifier(ISSUER, RESOURCE, keys=keys)
    payload = body("tools/call", {"name": "test_simple_text"})
    plain = McpApp.for_server(build_server())
    guarded = McpApp.for_server(build_server(), auth=guard(verifier))
    async with trio.open_nursery() as nursery:
        for app in (plain, guarded):
            await nursery.start(app.run)
        assert guarded.auth is not None
        http = guarded.auth._http
        assert http is not None
        plain_us, with_jwt_us, verify_us, first_use_us = await cpu_us(
            requests,
            partial(one_call, plain, scope_for(None), payload),
            partial(one_call, guarded, scope_for(token), payload),
            partial(verifier.verify, token, http),
            partial(verifier.check, token, keys, http),
        )
        nursery.cancel_scope.cancel()
    return AuthReport(requests, plain_us, with_jwt_us, verify_us, first_use_us)


def run(quick: bool) -> AuthReport:
    return trio.run(measure, 200 if quick else 2000)


def table(report: AuthReport) -> str:
    verdict = "met" if report.met else "MISSED"
    return "\n".join(
        [
            f"JWT access-token check, in process, CPU per request ({report.requests} requests, "
            f"best of {REPEATS}):",
            "",
            "| figure | µs CPU |",
            "| --- | ---: |",
            f"| tools/call, authorization off | {report.plain_us:.1f} |",
            f"| tools/call with a JWT checked (key cached) | {report.with_jwt_us:.1f} |",
            f"| the JWT check alone, token reused | {report.verify_us:.1f} |",
            f"| the JWT check of a new token (RS256, claims) | {report.first_use_us:.1f} |",
            "",
            f"added per request / presa's tools/call: {report.share:.1%} "
            f"(target ≤ {TARGET_SHARE:.0%}: {verdict})",
        ]
    )


if __name__ == "__main__":
    print(table(run(quick=False)))
