"""Development tokens (``--auth-token NAME=SECRET``) on a real ``presa-trio serve``.

The session docs/authorization.md shows: no token is 401 with ``resource_metadata``,
the metadata document answers, and bob cannot reach alice's task.
"""

from __future__ import annotations

import httpx
import pytest
import trio

from tests.auth import scenarios
from tests.auth.authorization_server import AuthorizationServer
from tests.auth.harness import Presa, start_presa

FLAGS = ["--auth-token", "alice=alice-dev-secret", "--auth-token", "bob=bob-dev-secret"]


@pytest.fixture
async def presa(
    nursery: trio.Nursery, http: httpx.AsyncClient, issuer: AuthorizationServer
) -> Presa:
    return await start_presa(nursery, http, ["--auth-issuer", issuer.issuer, *FLAGS])


async def test_no_token_is_401_naming_the_metadata(
    presa: Presa, issuer: AuthorizationServer
) -> None:
    """A-01, A-02, A-14: 401 and ``WWW-Authenticate: Bearer resource_metadata=...``; the
    document answers at the path-inserted and root well-known URIs, naming the issuer."""
    await scenarios.refuses_without_token(presa)
    document = await scenarios.serves_metadata(presa, [issuer.issuer])
    assert "scopes_supported" not in document


async def test_a_wrong_token_is_401_invalid_token(presa: Presa) -> None:
    """A-03: a token presa does not know is ``error="invalid_token"``; one that is no
    JWT, beside development tokens, is said to be no development token."""
    said = await scenarios.refuses_invalid_token(presa, "not-a-dev-secret")
    assert said == "Unknown development token"


async def test_the_caller_is_the_task_scope(presa: Presa) -> None:
    """A-10, T-65: bob's tasks/get, update and cancel of alice's task answer exactly
    as for an unknown id; alice's succeed."""
    await scenarios.calls_a_tool(presa, "alice-dev-secret")
    await scenarios.isolates_tasks(presa, "alice-dev-secret", "bob-dev-secret")


async def test_request_state_is_bound_to_its_caller(presa: Presa) -> None:
    """A-11: alice's ``requestState`` is refused when bob presents it."""
    await scenarios.binds_request_state(presa, "alice-dev-secret", "bob-dev-secret")
