"""``--metrics``, in-process: what each exchange adds to the series, and the scrape.

presa-defined (docs/deployment.md, "Metrics"): the spec defines no metrics; the
series' names follow OpenTelemetry's semantic conventions for MCP.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
import trio
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from presa_trio.auth.guard import ResourceGuard, ScopeRules, Verifiers
from presa_trio.auth.static import StaticTokens
from presa_trio.demo import build_app, build_server
from presa_trio.http.app import McpApp
from presa_trio.http.metrics import Metered
from presa_trio.server import RequestContext
from presa_trio.tasks.stores.base import Limits, StoredTask
from presa_trio.tasks.stores.memory import MemoryStore
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, headers_for, request, running
from presa_trio.testing.driver import http_scope

HOST = {"host": "localhost:3000"}
OPERATIONS = "mcp_server_operation_duration_seconds"


@pytest.fixture
async def metered(app: McpApp) -> AsyncIterator[McpClient]:
    metered = Metered(app)  # before the app runs: its runner is told of statuses from then on
    async with running(app) as client:
        client.asgi = metered
        yield client


async def samples(client: McpClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, by name and sorted labels (buckets left out)."""
    response = await client.post(b"", HOST, method="GET", path="/metrics")
    assert response.status == 200
    assert response.headers["content-type"].startswith("text/plain; version=")
    assert response.headers["cache-control"] == "no-store"  # each scrape reads anew
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.body.decode())
        for sample in family.samples
        if "le" not in sample.labels
    }


def count(method: str, tool: str, outcome: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    labels = {"mcp_method_name": method, "gen_ai_tool_name": tool, "outcome": outcome}
    return f"{OPERATIONS}_count", tuple(sorted(labels.items()))


async def test_each_exchange_is_counted_by_method_tool_and_outcome(metered: McpClient) -> None:
    """A result is ``ok``, a JSON-RPC error its code, a plain rejection ``http_<status>``;
    the tool is named only for ``tools/call``."""
    greet = request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
    await metered.post(greet)
    await metered.post(greet)
    await metered.call("tools/list")
    await metered.post(request("prompts/get", {"name": "test_simple_prompt"}))
    bad = request("tools/call", {"name": "greet", "arguments": "Ada"}, request_id=2)
    await metered.post(bad)
    await metered.post(greet, {**headers_for(greet), "origin": "http://evil.example"})
    await metered.post(greet, path="*")  # a target that is no path: a plain 400
    seen = await samples(metered)
    assert seen[count("tools/call", "greet", "ok")] == 2
    assert seen[count("tools/list", "", "ok")] == 1
    assert seen[count("prompts/get", "", "ok")] == 1  # its Mcp-Name is no tool
    assert seen[count("tools/call", "greet", "-32602")] == 1
    assert seen[count("tools/call", "greet", "http_403")] == 1
    assert seen[count("tools/call", "greet", "http_400")] == 1


async def test_names_the_server_does_not_have_are_one_label(metered: McpClient) -> None:
    """A method or tool the server does not have is ``other``: a client cannot grow
    the number of series."""
    for name in ("nobody", "nobody-else"):
        message = request("tools/call", {"name": name, "arguments": {}})
        await metered.post(message)
    made_up = request("made/up")
    await metered.post(made_up, {**headers_for(made_up), "mcp-method": "made/up"})
    seen = await samples(metered)
    assert seen[count("tools/call", "other", "-32602")] == 2
    assert seen[count("other", "", "-32601")] == 1


CREATED = ("presa_tasks_created_total", (("gen_ai_tool_name", "slow_compute"),))
COMPLETED = ("presa_task_statuses_total", (("status", "completed"),))


async def test_a_tools_call_that_created_a_task_is_counted_by_tool(metered: McpClient) -> None:
    """``presa_tasks_created_total`` counts each task created once, by tool; a call
    answered without a task counts nothing."""
    call = {"name": "slow_compute", "arguments": {"seconds": 0}}
    created = await metered.send_request("tools/call", call, capabilities=TASKS_CAPABILITIES)
    assert created.result["resultType"] == "task"
    await metered.send_request("tools/call", call)  # answered without a task
    await until(metered, COMPLETED, 1)
    assert (await samples(metered))[CREATED] == 1


@attrs.define(eq=False, repr=False)
class AnswersLate(MemoryStore):
    """A memory store whose ``create`` answers only once the creating client has left,
    as SQLite's batched write answers a caller cancelled while it ran."""

    # Set by the test once the client has left.
    left: trio.Event = attrs.field(factory=trio.Event)
    # Set once the task is in the store.
    holds_it: trio.Event = attrs.field(factory=trio.Event)

    async def create(self, stored: StoredTask, limits: Limits, now_ms: int) -> None:
        await super().create(stored, limits, now_ms)
        self.holds_it.set()
        with trio.CancelScope(shield=True):
            await self.left.wait()


async def test_a_task_whose_client_left_before_the_answer_is_counted_created() -> None:
    """``presa_tasks_created_total`` counts a task once it is stored: a client that
    leaves while it is being stored never gets the ``CreateTaskResult``, yet its
    task runs and ends, and it is counted created, once, as its end is counted."""
    store = AnswersLate()
    app = build_app(store=store)
    metered = Metered(app)
    call = request(
        "tools/call",
        {"name": "slow_compute", "arguments": {"seconds": 0}},
        capabilities=TASKS_CAPABILITIES,
    )
    body = json.dumps(call).encode()
    read = False

    async def receive() -> dict[str, Any]:
        nonlocal read
        if not read:
            read = True
            return {"type": "http.request", "body": body, "more_body": False}
        await store.holds_it.wait()
        store.left.set()
        return {"type": "http.disconnect"}

    sent: list[dict[str, Any]] = []

    async def send(event: dict[str, Any]) -> None:
        await trio.lowlevel.checkpoint()  # as a server's send: the client's leaving ends it
        sent.append(event)

    asgi: Any = metered
    async with running(app) as client:
        client.asgi = metered
        with trio.fail_after(5):
            await asgi(http_scope(headers_for(call)), receive, send)
        assert sent == []  # no answer went out
        await until(client, COMPLETED, 1)
        assert (await samples(client))[CREATED] == 1


async def test_a_tool_s_own_result_that_reads_like_a_task_is_not_counted() -> None:
    """``presa_tasks_created_total`` counts the tasks stored: a tool whose
    structured result holds ``"resultType": "task"`` created no task."""
    server = build_server()

    @server.tool(description="Answers with an object that mentions a task.")
    async def task_shaped(ctx: RequestContext, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"resultType": "task"}

    app = McpApp.for_server(server)
    metered = Metered(app)
    async with running(app) as client:
        client.asgi = metered
        answered = await client.send_request("tools/call", {"name": "task_shaped"})
        assert answered.result["resultType"] == "complete"
        seen = await samples(client)
    assert [name for name, _ in seen if name == "presa_tasks_created_total"] == []


async def test_the_scrape_keeps_the_dns_rebinding_checks(metered: McpClient) -> None:
    """Spec-mandated (streamable-http §Security & Endpoint): a foreign Host is 421 at
    ``/metrics`` too; only GET and HEAD are served (RFC 9110 §9.1)."""
    foreign = await metered.post(b"", {"host": "evil.example"}, method="GET", path="/metrics")
    posted = await metered.post(b"", HOST, path="/metrics")
    head = await metered.post(b"", HOST, method="HEAD", path="/metrics")
    assert (foreign.status, posted.status, head.status) == (421, 405, 200)


async def test_a_refused_scrape_closes_its_connection(metered: McpClient) -> None:
    """presa-defined (RFC 9112 §9.6), as every rejection at the endpoint: a scrape
    refused before its body is read (a POST, a foreign Host) says ``Connection: close``
    over HTTP/1.1, so that no client sends its next request on a connection the unread
    body leaves unable to carry it (the server drops it unanswered)."""
    foreign = await metered.post(b"", {"host": "evil.example"}, method="GET", path="/metrics")
    posted = await metered.post(b"{}", HOST, path="/metrics")
    assert (foreign.status, posted.status) == (421, 405)
    assert (foreign.headers.get("connection"), posted.headers.get("connection")) == (
        "close",
        "close",
    )


async def test_each_status_written_is_counted(metered: McpClient) -> None:
    """``presa_task_statuses_total`` counts the statuses this process wrote: a task
    that completed, and one cancelled."""
    quick = {"name": "slow_compute", "arguments": {"seconds": 0}}
    slow = {"name": "slow_compute", "arguments": {"seconds": 600}}
    done = await metered.send_request("tools/call", quick, capabilities=TASKS_CAPABILITIES)
    doomed = await metered.send_request("tools/call", slow, capabilities=TASKS_CAPABILITIES)
    await metered.send_request(
        "tasks/cancel", {"taskId": doomed.result["taskId"]}, capabilities=TASKS_CAPABILITIES
    )
    with trio.fail_after(5):
        while True:  # polled, as a client polls tasks/get
            got = await metered.send_request(
                "tasks/get", {"taskId": done.result["taskId"]}, capabilities=TASKS_CAPABILITIES
            )
            if got.result["status"] == "completed":
                break
            await trio.sleep(0.01)
    seen = await samples(metered)
    assert seen[("presa_task_statuses_total", (("status", "completed"),))] == 1
    assert seen[("presa_task_statuses_total", (("status", "cancelled"),))] == 1


async def test_a_listen_stream_is_in_flight_while_it_is_open(metered: McpClient) -> None:
    """``mcp_server_requests_in_flight`` counts a ``subscriptions/listen`` for as long
    as its stream is open, and no longer."""
    listen = request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    key = ("mcp_server_requests_in_flight", (("mcp_method_name", "subscriptions/listen"),))
    async with metered.stream(listen) as stream:
        await stream.next_message()  # the acknowledgement: the stream is open
        assert (await samples(metered))[key] == 1
    with trio.fail_after(5):
        while True:  # until the app has seen the client leave
            if (await samples(metered))[key] == 0:
                break
            await trio.sleep(0.01)


async def test_each_store_call_is_timed_by_call_and_outcome(metered: McpClient) -> None:
    """``presa_store_call_duration_seconds`` times the task store's calls: a creation,
    and a read of an unknown task, which is the store answering (``ok``), not a
    failure."""
    call = {"name": "slow_compute", "arguments": {"seconds": 0}}
    await metered.send_request("tools/call", call, capabilities=TASKS_CAPABILITIES)
    unknown = await metered.call(
        "tasks/get", {"taskId": "no-such-task"}, capabilities=TASKS_CAPABILITIES
    )
    assert "error" in unknown.json()
    seen = await samples(metered)
    name = "presa_store_call_duration_seconds_count"
    assert seen[(name, (("call", "create"), ("outcome", "ok")))] == 1
    assert seen[(name, (("call", "get"), ("outcome", "ok")))] >= 1
    assert not [key for key in seen if key[0] == name and ("outcome", "ok") not in key[1]]


Key = tuple[str, tuple[tuple[str, str], ...]]


async def until(client: McpClient, key: Key, value: float) -> None:
    """Scrape until the sample ``key`` reads ``value`` (the worker runs beside the request)."""
    with trio.fail_after(5):
        while True:  # polled, as an operator's scraper polls
            if (await samples(client)).get(key) == value:
                return
            await trio.sleep(0.01)


RUNNING = ("presa_tasks_running", ())
PARKED = ("presa_tasks_parked", ())


async def test_tasks_running_and_parked_return_to_zero_however_they_end(
    metered: McpClient,
) -> None:
    """``presa_tasks_running`` counts the tasks this process's workers run and
    ``presa_tasks_parked`` those waiting for answers; both go back to zero when a
    task is answered and completes, is cancelled, or fails."""
    asking = {"name": "confirm_delete", "arguments": {}}
    parked = await metered.send_request("tools/call", asking, capabilities=TASKS_CAPABILITIES)
    await until(metered, PARKED, 1)
    assert (await samples(metered))[RUNNING] == 1
    await metered.send_request(
        "tasks/cancel", {"taskId": parked.result["taskId"]}, capabilities=TASKS_CAPABILITIES
    )
    await until(metered, RUNNING, 0)
    assert (await samples(metered))[PARKED] == 0
    slow = {"name": "slow_compute", "arguments": {"seconds": 600}}
    await metered.send_request("tools/call", slow, capabilities=TASKS_CAPABILITIES)
    await until(metered, RUNNING, 1)
    failing = {"name": "protocol_error_job", "arguments": {}}
    await metered.send_request("tools/call", failing, capabilities=TASKS_CAPABILITIES)
    await until(metered, ("presa_task_statuses_total", (("status", "failed"),)), 1)
    assert (await samples(metered))[RUNNING] == 1  # the slow one alone


async def test_a_shutdown_leaves_no_task_running_or_parked(app: McpApp) -> None:
    """A shutdown stops every worker without writing for it: the gauges go back to zero
    all the same."""
    metered = Metered(app)
    async with running(app) as client:
        client.asgi = metered
        asking = {"name": "confirm_delete", "arguments": {}}
        await client.send_request("tools/call", asking, capabilities=TASKS_CAPABILITIES)
        await until(client, PARKED, 1)
    text = generate_latest(metered.metrics.registry).decode()
    gauges = {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }
    assert (gauges["presa_tasks_running"], gauges["presa_tasks_parked"]) == (0, 0)


async def test_a_client_that_leaves_before_the_answer_is_no_response(metered: McpClient) -> None:
    """An exchange the client left before any response began is ``no_response``, as its
    access line says ``status=None``: not a made-up ``http_None``."""
    slow = request("tools/call", {"name": "slow_compute", "arguments": {"seconds": 600}})
    body = json.dumps(slow).encode()
    left = trio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if not left.is_set():
            left.set()
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        sent.append(event)

    asgi: Any = metered.asgi
    with trio.fail_after(5):
        await asgi(http_scope(headers_for(slow)), receive, send)
    assert sent == []
    seen = await samples(metered)
    assert seen[count("tools/call", "slow_compute", "no_response")] == 1
    assert not [key for key in seen if ("outcome", "http_None") in key[1]]


async def test_the_operations_histogram_has_opentelemetry_s_buckets(metered: McpClient) -> None:
    """presa-defined, after OpenTelemetry's semantic conventions for MCP ("Metric:
    mcp.server.operation.duration": explicit bucket boundaries 0.01 s to 300 s), so a
    listen stream or a long tool call is not lost in ``+Inf`` past ten seconds."""
    await metered.call("tools/list")
    response = await metered.post(b"", HOST, method="GET", path="/metrics")
    bounds = [
        sample.labels["le"]
        for family in text_string_to_metric_families(response.body.decode())
        for sample in family.samples
        if sample.name == f"{OPERATIONS}_bucket"
        and sample.labels["mcp_method_name"] == "tools/list"
    ]
    assert [float(bound) for bound in bounds] == [
        0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, float("inf")
    ]  # fmt: skip


async def test_each_authorization_decision_is_counted_by_outcome() -> None:
    """``presa_authorization_decisions_total`` counts the rung's decisions: no token,
    a malformed one, an unknown one, scopes short of a tool's, scopes granted; a
    request refused before the rung (a foreign Origin) is no decision."""
    rules = ScopeRules(every_request=frozenset({"mcp"}), tools={"greet": frozenset({"people"})})
    guard = ResourceGuard(
        resource="http://localhost:3000/mcp",
        verifier=Verifiers(static=StaticTokens({"basic": "bob"}, scopes=frozenset({"mcp"}))),
        authorization_servers=["https://auth.example.com"],
        scopes=rules,
    )
    app = McpApp.for_server(build_server(), auth=guard)
    metered = Metered(app)
    listed = request("tools/list")
    greet = request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
    async with running(app) as client:
        client.asgi = metered
        sent = {
            "missing": await client.post(listed, headers_for(listed)),
            "invalid_request": await client.post(
                listed, {**headers_for(listed), "authorization": "Bearer a b"}
            ),
            "invalid_token": await client.post(
                listed, {**headers_for(listed), "authorization": "Bearer unknown"}
            ),
            "insufficient_scope": await client.post(
                greet, {**headers_for(greet), "authorization": "Bearer basic"}
            ),
            "granted": await client.post(
                listed, {**headers_for(listed), "authorization": "Bearer basic"}
            ),
        }
        await client.post(
            listed,
            {
                **headers_for(listed),
                "authorization": "Bearer basic",
                "origin": "http://evil.example",
            },
        )
        seen = await samples(client)
    assert {outcome: response.status for outcome, response in sent.items()} == {
        "missing": 401,
        "invalid_request": 400,
        "invalid_token": 401,
        "insufficient_scope": 403,
        "granted": 200,
    }
    decisions = {
        labels[0][1]: value
        for (name, labels), value in seen.items()
        if name == "presa_authorization_decisions_total"
    }
    assert decisions == dict.fromkeys(sent, 1)


async def test_a_scrape_is_counted_as_its_access_line_is_logged(metered: McpClient) -> None:
    """A scrape is an exchange like any other: counted once answered (the next scrape
    shows it), a refused one too, and never among those under way."""
    first = await samples(metered)
    await metered.post(b"", HOST, path="/metrics")  # POST: 405
    second = await samples(metered)
    assert count("", "", "ok") not in first
    assert second[count("", "", "ok")] == 1
    assert second[count("", "", "http_405")] == 1
    assert second.get(("mcp_server_requests_in_flight", (("mcp_method_name", ""),)), 0) == 0


async def test_without_metrics_there_is_no_metrics_path(app: McpApp) -> None:
    """presa-defined (docs/deployment.md, "Metrics"): without ``--metrics`` the app
    alone serves, and ``/metrics`` is a path like any other it does not have: 404."""
    async with running(app) as client:
        response = await client.post(b"", HOST, method="GET", path="/metrics")
    assert response.status == 404
