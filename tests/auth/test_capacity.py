"""Without authorization, a full shared task scope locks nobody out of a plain answer.

Every caller shares the one ``anonymous`` scope. With its limit reached
(``--task-max-active-per-scope 2``, two parked tasks), a task-optional tool
still answers, as a plain call; a task-required one is refused with a
message that says what to do, as HTTP 429 with ``Retry-After``, never 500.
"""

from __future__ import annotations

import httpx
import trio

from tests.auth.harness import Presa, start_presa
from tests.auth.scenarios import TASKS


async def call(presa: Presa, tool: str) -> httpx.Response:
    params = {"name": tool, "arguments": {"filename": "a.txt"}}
    return await presa.call("tools/call", params, capabilities=TASKS)


async def test_a_full_shared_scope_falls_back_or_says_what_to_do(
    nursery: trio.Nursery, http: httpx.AsyncClient
) -> None:
    """A-19: optional tools answer as plain calls at capacity; required ones get 429."""
    presa = await start_presa(nursery, http, ["--task-max-active-per-scope", "2"])
    for _ in range(2):
        parked = await call(presa, "confirm_delete")
        assert parked.json()["result"]["resultType"] == "task"
    plain = await call(presa, "confirm_delete")
    assert plain.status_code == 200
    assert plain.json()["result"]["resultType"] == "input_required"  # its plain answer
    refused = await call(presa, "failing_job")
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    error = refused.json()["error"]
    assert error["data"] == {"retryable": True, "limit": "max_active_tasks_per_scope"}
    assert "tasks/cancel" in error["message"]
    assert "without authorization every caller shares this limit" in error["message"]
