"""A task event stream lasts no longer than the token it was opened with (``--task-events``).

As a listen stream (tests/auth/test_stream_expiry.py): once the JWT's
``exp`` passes (leeway 0 here), the ``tasks/stream`` ends normally with its
result, and the client resumes, with ``after``, under a fresh token.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import trio

from presa_trio.testing import headers_for, request
from tests.auth import scenarios
from tests.auth.authorization_server import AuthorizationServer
from tests.auth.harness import ALL_NAME_PARAMS, SLACK_S, start_presa
from tests.streams import sse_messages


async def test_a_task_event_stream_ends_at_its_tokens_exp(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> None:
    """presa-defined (A-16, S-20; spec-notes §49): the stream of a parked task, opened
    with a token that expires in 4 s, delivers the task's events, then ends with its
    result by ``exp``, not later."""
    flags = ["--auth-issuer", issuer.issuer, "--auth-leeway", "0", "--task-events"]
    presa = await start_presa(nursery, http, flags)
    task = await scenarios.create_task(presa, issuer.mint_jwt("alice-app", presa.resource))
    # exp is whole seconds past a truncated now: over 3 s to open the stream, loaded or not.
    short = issuer.mint_jwt("alice-app", presa.resource, lifetime_s=4)
    expires = float(scenarios.claims(short)["exp"])
    message = request("tasks/stream", {"taskId": task}, capabilities=scenarios.TASKS)
    headers = {k: v for k, v in headers_for(message, ALL_NAME_PARAMS).items() if k != "host"}
    headers |= {"authorization": f"Bearer {short}", "mcp-name": task}
    messages: list[dict[str, Any]] = []
    with trio.fail_after(expires - time.time() + SLACK_S):
        async with presa.http.stream("POST", presa.url, json=message, headers=headers) as response:
            messages += [message async for message in sse_messages(response)]
    ended = time.time()
    assert "result" in messages[-1], messages[-1]
    assert [m["params"]["seq"] for m in messages[:-1]] == [0, 1, 2]
    assert expires - 0.1 <= ended <= expires + SLACK_S, (ended, expires)
