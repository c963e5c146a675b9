"""``serve --rate-limit``: each client's ``tools/call`` and ``completion/complete`` a second.

In process, on a mock clock (nothing is timed): the demo server with a
budget of one call a second in bursts of two, so the third call in a row
is refused and one second later one more is let through.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
from trio.testing import MockClock

from presa_trio.auth.guard import ResourceGuard, Verifiers
from presa_trio.auth.static import StaticTokens
from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.http.rate_limit import MAX_CLIENTS, CallBudget
from presa_trio.server import RequestContext, Server
from presa_trio.testing import McpClient, Response, headers_for, request, running
from presa_trio.wire.http_values import Rejection
from presa_trio.wire.models import Completion

CALL = ("tools/call", {"name": "test_simple_text", "arguments": {}})
COMPLETE = (
    "completion/complete",
    {"ref": {"type": "ref/prompt", "name": "topic"}, "argument": {"name": "a", "value": ""}},
)
LIST: tuple[str, dict[str, Any]] = ("tools/list", {})
NAME_PARAMS = {"tools/call": "name"}


def budget() -> CallBudget:
    return CallBudget(per_second=1.0, burst=2.0)


def server_with_a_completion() -> Server:
    """The demo server, and a prompt whose argument completes."""
    server = build_server()

    @server.prompt(description="A prompt to complete")
    async def topic(ctx: RequestContext, arguments: dict[str, str]) -> str:
        return "t"

    @server.completion("ref/prompt", "topic")
    async def complete(
        ctx: RequestContext, argument: str, value: str, context_arguments: dict[str, str]
    ) -> Completion:
        return Completion(["trio"])

    return server


@pytest.fixture
async def client() -> AsyncIterator[McpClient]:
    app = McpApp.for_server(server_with_a_completion(), rate_limit=budget())
    async with running(app) as started:
        yield started


async def send(
    client: McpClient,
    what: tuple[str, dict[str, Any]],
    *,
    address: str = "127.0.0.1",
    token: str | None = None,
) -> Response:
    message = request(*what)
    headers = list(headers_for(message, NAME_PARAMS).items())
    if token is not None:
        headers.append(("authorization", f"Bearer {token}"))
    return await client.post(message, headers, client=(address, 50000))


async def test_a_call_past_the_burst_is_429_with_retry_after_until_a_token_flows_in(
    client: McpClient, mock_clock: MockClock
) -> None:
    """Spec-mandated (server/tools §Security Considerations: servers MUST rate limit tool
    invocations; RFC 6585 §4: 429 Too Many Requests, MAY carry Retry-After): two calls
    in a row pass, the third is 429 with ``Retry-After: 1`` and is not run; a second
    later one more call passes, and the next is refused again."""
    assert [(await send(client, CALL)).status for _ in range(2)] == [200, 200]
    refused = await send(client, CALL)
    assert refused.status == 429
    assert refused.headers["retry-after"] == "1"
    assert "tools/call" in refused.body.decode()
    mock_clock.jump(1.0)
    assert (await send(client, CALL)).status == 200
    assert (await send(client, CALL)).status == 429


async def test_each_client_and_each_counted_method_has_its_own_budget_and_lists_none(
    client: McpClient,
) -> None:
    """presa-defined (server/utilities/completion §Security: servers SHOULD rate limit
    completion requests; spec-notes §67): a client's spent tool calls leave its
    completions, another address's calls, and every other method (a list) untouched."""
    for _ in range(2):
        assert (await send(client, CALL)).status == 200
    assert (await send(client, CALL)).status == 429
    assert [(await send(client, COMPLETE)).status for _ in range(3)] == [200, 200, 429]
    assert (await send(client, CALL, address="192.0.2.7")).status == 200
    assert [(await send(client, LIST)).status for _ in range(5)] == [200] * 5


async def test_with_authorization_the_client_is_the_tokens_caller_not_the_address() -> None:
    """presa-defined (spec-notes §67): with authorization on, two callers at one address
    (behind one proxy, say) each have their own budget."""
    guard = ResourceGuard(
        "http://localhost:3000/mcp",
        Verifiers(static=StaticTokens({"alice-secret": "alice", "bob-secret": "bob"})),
        authorization_servers=["https://auth.example.com"],
    )
    app = McpApp.for_server(build_server(), auth=guard, rate_limit=budget())
    async with running(app) as client:
        alice = [(await send(client, CALL, token="alice-secret")).status for _ in range(3)]
        bob = [(await send(client, CALL, token="bob-secret")).status for _ in range(2)]
    assert alice == [200, 200, 429]
    assert bob == [200, 200]


async def test_a_call_without_a_token_is_401_however_many_came_before_it() -> None:
    """Spec-mandated (basic/authorization §Token Handling: a request without a valid token
    MUST be answered 401; RFC 6750 §3): the limit counts callers, so a call that names
    none is 401 however often it comes, and spends no caller's budget."""
    guard = ResourceGuard(
        "http://localhost:3000/mcp",
        Verifiers(static=StaticTokens({"alice-secret": "alice"})),
        authorization_servers=["https://auth.example.com"],
    )
    app = McpApp.for_server(build_server(), auth=guard, rate_limit=budget())
    async with running(app) as client:
        anonymous = [(await send(client, CALL)).status for _ in range(3)]
        alice = [(await send(client, CALL, token="alice-secret")).status for _ in range(2)]
    assert anonymous == [401, 401, 401]
    assert alice == [200, 200]


@pytest.mark.parametrize("per_second", [0.0, -1.0, math.nan, math.inf, 1e-320])
def test_a_rate_whose_wait_is_no_number_of_seconds_is_refused(per_second: float) -> None:
    """Spec-mandated (RFC 9110 §10.2.3: Retry-After's delay-seconds is a whole number;
    RFC 6585 §4): a budget is a positive, finite rate whose wait for one call is a
    number of seconds. None, a negative one (every call let through), NaN, or one so
    small that the wait overflows (the second call a 500, not a 429) is refused."""
    with pytest.raises(ValueError, match="calls a second"):
        CallBudget.per_second_of(per_second)


@pytest.mark.parametrize("burst", [0.0, 0.5, math.nan])
def test_a_burst_that_holds_no_whole_call_is_refused(burst: float) -> None:
    """Spec-mandated (RFC 9110 §10.2.3, RFC 6585 §4: Retry-After says when to try again):
    a bucket that can never hold one call would refuse every call, each with a
    ``Retry-After`` that is never true, so a burst below one call is refused."""
    with pytest.raises(ValueError, match="burst"):
        CallBudget(per_second=1.0, burst=burst)


@pytest.mark.parametrize(("per_second", "now"), [(1 / 54, 10.1), (1 / 58, 10.1), (1 / 789, 5e5)])
def test_a_call_made_retry_after_seconds_later_is_let_through(
    per_second: float, now: float
) -> None:
    """Spec-mandated (RFC 9110 §10.2.3: Retry-After is how long to wait before the
    follow-up request; RFC 6585 §4): a client that waits exactly the seconds a 429
    named is let through, whatever the float rounding of its rate and of the clock."""
    calls = CallBudget.per_second_of(per_second)
    calls.check("a", "tools/call", now)
    with pytest.raises(Rejection) as refused:
        calls.check("a", "tools/call", now)
    seconds = int(dict(refused.value.headers)[b"retry-after"])
    calls.check("a", "tools/call", now + seconds)


def test_serve_s_rate_limit_is_a_second_s_calls_in_one_burst() -> None:
    """presa-defined (presa_trio.http.rate_limit, docs/deployment.md): ``--rate-limit 20``
    lets a client make 20 calls at once, the 21st waiting for the next token; a rate
    under one a second still lets one call through."""
    calls = CallBudget.per_second_of(20)
    assert [calls.wait("a", "tools/call", 0.0) for _ in range(21)] == [0.0] * 20 + [0.05]
    slow = CallBudget.per_second_of(0.5)
    assert [slow.wait("a", "tools/call", 0.0) for _ in range(2)] == [0.0, 2.0]


@pytest.mark.parametrize(("per_second", "named"), [(0.4, "3"), (2.0, "1"), (1 / 1.001, "2")])
def test_retry_after_is_the_wait_in_whole_seconds_rounded_up(per_second: float, named: str) -> None:
    """Spec-mandated (RFC 9110 §10.2.3: Retry-After is a whole number of seconds): a
    wait that is no whole number of seconds is named by the next one up, never by the
    one below, after which the call would be refused again."""
    calls = CallBudget(per_second, 1.0)
    calls.check("a", "tools/call", 0.0)
    with pytest.raises(Rejection) as refused:
        calls.check("a", "tools/call", 0.0)
    assert refused.value.status == 429
    assert dict(refused.value.headers)[b"retry-after"] == named.encode()


def test_a_bucket_holds_at_most_its_burst_and_the_least_recent_client_is_forgotten() -> None:
    """presa-defined (presa_trio.http.rate_limit): tokens stop flowing in at the burst,
    however long a client was away, and memory stays bounded: past MAX_CLIENTS the
    least recently seen client's bucket goes (a full bucket, as if new)."""
    calls = budget()
    assert [calls.wait("a", "tools/call", 0.0) for _ in range(3)] == [0.0, 0.0, 1.0]
    assert [calls.wait("a", "tools/call", 3600.0) for _ in range(3)] == [0.0, 0.0, 1.0]
    for n in range(MAX_CLIENTS):
        calls.wait(f"client {n}", "tools/call", 3600.0)
        calls.wait(f"client {n}", "tools/call", 3600.0)
    assert calls.wait("a", "tools/call", 3600.0) == 0.0  # forgotten: a full bucket again
    assert calls.wait("client 1", "tools/call", 3600.0) == 1.0  # remembered: spent
