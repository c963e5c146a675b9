"""``GET /healthz`` and ``GET /readyz``, in-process: outside MCP's admission rules,
behind its Host and Origin checks.

presa-defined (docs/deployment.md, "Health checks"): the spec defines no health
endpoint; the Host and Origin checks are streamable-http §Security & Endpoint's.
"""

from __future__ import annotations

import logging

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from presa_trio.auth.guard import ResourceGuard, Verifiers
from presa_trio.auth.static import StaticTokens
from presa_trio.demo import build_server
from presa_trio.http.app import McpApp
from presa_trio.tasks.runner import READINESS_PROBE_ID
from presa_trio.tasks.stores.base import StoredTask, StoreUnavailable
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.testing import McpClient, running
from presa_trio.testing.driver import Response

HOST = {"host": "localhost:3000"}


async def get(client: McpClient, path: str, headers: dict[str, str] = HOST) -> Response:
    return await client.post(b"", headers, method="GET", path=path)


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
async def test_a_serving_process_is_live_and_ready_to_a_bare_get(
    client: McpClient, path: str
) -> None:
    """A GET with nothing but a Host header (no Accept, no JSON-RPC) is 200 ``ok``,
    never cached."""
    response = await get(client, path)
    assert (response.status, response.body) == (200, b"ok\n")
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.headers["cache-control"] == "no-store"


async def test_a_draining_process_is_live_but_not_ready(app: McpApp, client: McpClient) -> None:
    """Once a shutdown starts, ``/readyz`` is 503 with the reason; ``/healthz`` stays 200."""
    app.draining = True
    ready, live = await get(client, "/readyz"), await get(client, "/healthz")
    assert (ready.status, ready.body) == (503, b"draining\n")
    assert live.status == 200


async def test_a_server_whose_lifetime_is_not_running_is_neither(app: McpApp) -> None:
    """Before the lifespan starts (or after it ended), both checks are 503, with the reason."""
    client = McpClient(app)
    for path in ("/healthz", "/readyz"):
        response = await get(client, path)
        assert (response.status, response.body) == (503, b"the server is not running\n")


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "evil.example"}, 421),
        ({**HOST, "origin": "http://evil.example"}, 403),
        ({}, 421),
    ],
    ids=["foreign-host", "foreign-origin", "no-host"],
)
async def test_health_checks_keep_the_dns_rebinding_checks(
    client: McpClient, headers: dict[str, str], status: int
) -> None:
    """Spec-mandated (streamable-http §Security & Endpoint): a foreign Host is 421 and a
    foreign Origin 403 on the health paths too."""
    for path in ("/healthz", "/readyz"):
        assert (await get(client, path, headers)).status == status


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
async def test_head_is_answered_as_get(client: McpClient, app: McpApp, path: str) -> None:
    """RFC 9110 §9.1, §9.3.2: HEAD gets GET's status and headers (a load balancer may
    check with HEAD); the HTTP server leaves the body out."""
    ready = await client.post(b"", HOST, method="HEAD", path=path)
    assert (ready.status, ready.headers["cache-control"]) == (200, "no-store")
    app.draining = True
    assert (await client.post(b"", HOST, method="HEAD", path="/readyz")).status == 503


async def test_only_get_and_head_are_served(client: McpClient) -> None:
    """A POST to a health path is 405 naming GET and HEAD, never an MCP answer."""
    json_headers = {**HOST, "content-type": "application/json"}
    response = await client.post(b"{}", json_headers, path="/readyz")
    assert response.status == 405
    assert response.headers["allow"] == "GET, HEAD"


async def test_health_checks_need_no_access_token() -> None:
    """With authorization on, a checker holding no token is still answered 200: it
    is no MCP client, and the checks reveal nothing but ``ok``."""
    tokens = StaticTokens({"secret": "alice"}, scopes=frozenset({"mcp"}))
    guard = ResourceGuard(
        resource="http://localhost:3000/mcp",
        verifier=Verifiers(static=tokens),
        authorization_servers=["https://auth.example.com"],
    )
    async with running(McpApp.for_server(build_server(), auth=guard)) as client:
        for path in ("/healthz", "/readyz"):
            assert (await get(client, path)).status == 200
        assert (await client.post(b"", HOST, method="GET")).status == 401


class UnreachableDatabase(MemoryStore):
    """A store whose readiness read fails as a database's connection does: with its
    host, port and user in the message."""

    async def read(self, task_id: str) -> StoredTask | None:
        if task_id == READINESS_PROBE_ID:
            raise StoreUnavailable(
                'connection to server at "db.internal" (10.0.0.7), port 5432 failed: '
                'password authentication failed for user "presa"'
            )
        return await super().read(task_id)


async def test_an_unready_store_is_named_by_its_failure_s_class_and_its_message_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``/readyz`` answers anyone who reaches the port, with no token: it names the
    store's failure by its class, and the failure's message (the database's host,
    port and user) goes to the log, once however often the check is polled."""
    async with running(McpApp.for_server(build_server(store=UnreachableDatabase()))) as client:
        with caplog.at_level(logging.WARNING, logger="presa_trio.tasks.runner"):
            answers = [await get(client, "/readyz") for _ in range(3)]
    assert {(answer.status, answer.body) for answer in answers} == {
        (503, b"the task store does not answer (StoreUnavailable)\n")
    }
    (logged,) = [r.getMessage() for r in caplog.records if "not ready" in r.getMessage()]
    assert '"db.internal" (10.0.0.7), port 5432' in logged


class HeldReads(MemoryStore):
    """A store whose readiness reads are counted, and held until the test lets them go."""

    def __init__(self) -> None:
        super().__init__()
        self.probes = 0
        self.go_on = trio.Event()

    async def read(self, task_id: str) -> StoredTask | None:
        if task_id == READINESS_PROBE_ID:
            self.probes += 1
            await self.go_on.wait()
        return await super().read(task_id)


async def test_checks_that_come_together_read_the_store_once() -> None:
    """``/readyz`` answers anyone who reaches the port, with no token: checks that come
    while one reads the store wait for its answer rather than each reading the store,
    so a flood of them holds at most one of the store's connections, and the calls of
    the clients that hold a token are not queued behind them."""
    store = HeldReads()
    answers: list[Response] = []
    async with running(McpApp.for_server(build_server(store=store))) as client:

        async def check() -> None:
            answers.append(await get(client, "/readyz"))

        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(check)
            await wait_all_tasks_blocked()
            store.go_on.set()
        answers.append(await get(client, "/readyz"))  # a check after those reads again
    assert [(answer.status, answer.body) for answer in answers] == [(200, b"ok\n")] * 6
    assert store.probes == 2


async def test_a_check_waiting_for_one_whose_checker_left_reads_the_store_itself() -> None:
    """A check that waits for another whose checker left before the store answered (its
    request cancelled) reads the store itself, rather than take that unfinished reading
    for an answer."""
    store = HeldReads()
    answers: list[Response] = []
    async with running(McpApp.for_server(build_server(store=store))) as client:
        leaving = trio.CancelScope()

        async def leave() -> None:
            with leaving:
                await get(client, "/readyz")

        async def check() -> None:
            answers.append(await get(client, "/readyz"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(leave)
            await wait_all_tasks_blocked()
            nursery.start_soon(check)
            await wait_all_tasks_blocked()
            leaving.cancel()
            await wait_all_tasks_blocked()
            store.go_on.set()
    assert [(answer.status, answer.body) for answer in answers] == [(200, b"ok\n")]
    assert store.probes == 2
