"""``--metrics``: Prometheus text at ``GET /metrics``, through ``prometheus_client``.

:class:`Metered` is ASGI middleware around the app. When an exchange ends it
observes what the access line logs (:mod:`presa_trio.http.access`), from the
same reading of the response, so the two agree on every count:

``mcp_server_operation_duration_seconds`` (histogram; ``_count`` is the requests)
    one per HTTP exchange, health checks and scrapes included, labelled
    ``mcp_method_name`` (``Mcp-Method``), ``gen_ai_tool_name`` (``Mcp-Name``
    of a ``tools/call``) and ``outcome``:
    ``ok``, the JSON-RPC error code of the answer, ``http_<status>`` for a
    plain HTTP rejection, or ``no_response`` when the exchange ended before
    its response began (the client left). The name, the first two labels and
    the buckets are OpenTelemetry's semantic conventions for MCP (status
    Development): ``mcp.server.operation.duration`` (seconds),
    ``mcp.method.name`` and ``gen_ai.tool.name``, as Prometheus spells them,
    and the boundaries that metric advises (:data:`OPERATION_BUCKETS`). What
    differs from them: ``outcome`` is presa's own (the conventions put a
    JSON-RPC error code in ``error.type`` and ``rpc.response.status_code``,
    set only on failure, and ``tool_error`` in ``error.type`` for a result with
    ``isError``, which is ``ok`` here); an exchange without ``Mcp-Method`` (a
    health check, a request that lacks the header) is counted with
    ``mcp_method_name=""``, where the conventions require a method; and
    ``other`` stands for the names the server does not have. The other series
    have no counterpart there: ``mcp_server_requests_in_flight`` is presa's
    name, not theirs.
``presa_tasks_created_total`` (counter)
    the tasks this process created, by ``gen_ai_tool_name`` (the tool the
    ``tools/call`` named), each once, when the task runner has stored it
    (:attr:`~presa_trio.tasks.runner.TaskRunner.on_created`): whether or not
    the client stays to read the ``CreateTaskResult``, so every task that
    ends (``presa_task_statuses_total``) was counted created first, here or,
    for a task another process created and this one recovered, there.
``mcp_server_requests_in_flight`` (gauge)
    the exchanges under way, by ``mcp_method_name``: a ``subscriptions/listen``
    or a ``tasks/stream`` is one for as long as its stream is open.
``presa_store_call_duration_seconds`` (histogram)
    each call of the task store, by ``call`` (``create``, ``get``,
    ``compare_and_set``…) and ``outcome``: ``ok``, ``cancelled``, or the
    class of the store's failure (``StoreUnavailable``, ``StoreRefused``,
    ``StoreDefect``); its ``_count`` by outcome is the errors by class.
``presa_task_statuses_total`` (counter)
    the statuses this process wrote, by the ``status`` entered: ``completed``,
    ``failed`` and ``cancelled`` count tasks ended, ``input_required`` the
    questions asked (a task that asks twice counts twice).
``presa_authorization_decisions_total`` (counter; with authorization on)
    each decision of the authorization rung (:mod:`presa_trio.auth.guard`) by
    ``outcome``: a request's scopes ``granted`` or ``insufficient_scope``, a
    token ``missing``, ``invalid_request`` or ``invalid_token``, or none checked
    (``unavailable``, ``misconfigured``). A request refused before the rung
    (Host, Origin) is no decision; one whose task asks for more scopes than
    its method did counts ``granted``, then ``insufficient_scope``.
``presa_tasks_running`` and ``presa_tasks_parked`` (gauges)
    the tasks this process's workers run, from the worker's first step to its
    last however it ends (completed, failed, cancelled, stopped by a
    shutdown), and those among them parked: waiting for the answers their
    ``ctx.ask`` asked for.

A label's values are bounded: a method the server does not serve is
``other``, a tool it does not have is ``other``, an ``outcome`` is a code or
status the server itself answered with, and no id or URI is ever a label, so
no client can grow the series without end. ``/metrics`` itself sits outside MCP's admission rules,
like the health checks, and behind the same Host and Origin checks.

**Across workers** (``--workers N``), every worker writes its samples to
files in one directory (``prometheus_client``'s multiprocess mode, the
directory named by ``PROMETHEUS_MULTIPROC_DIR``, which the parent makes, or
empties of a previous run's samples: :func:`~presa_trio.http.workers.clear_samples`),
and ``/metrics`` on any worker sums them all: a scrape through the shared port
sees the whole server, whichever worker answers it. A ``*.db`` file there that
holds no samples makes the scrape 503, its error logged.
"""

from __future__ import annotations

import logging
import time

import attrs
import trio
from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable, HTTPScope, Scope
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)

from presa_trio.http.access import _Exchange as Exchange
from presa_trio.http.app import McpApp
from presa_trio.http.headers import HTTP1_VERSIONS, mcp_headers, request_headers
from presa_trio.http.health import NO_STORE
from presa_trio.http.sse import send_whole
from presa_trio.http.workers import shared_metrics_directory
from presa_trio.tasks.extension import TasksExtension
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import StoredTask
from presa_trio.tasks.stores.metered import MeteredStore
from presa_trio.wire.http_values import Rejection, check_read_only

METRICS_PATH = "/metrics"
#: The histogram's buckets, in seconds: the explicit boundaries OpenTelemetry's
#: ``mcp.server.operation.duration`` advises (semantic conventions for MCP, "Metric:
#: mcp.server.operation.duration"), up to five minutes for a long tool call or stream.
OPERATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
#: The label of a method or tool the server does not have.
OTHER = "other"
#: The outcome of an exchange that ended with no response sent.
NO_RESPONSE = "no_response"
#: A scrape's answer when the samples cannot be read (a file in the directory of every
#: worker's samples that holds none); why goes to the log, not to whoever scrapes.
UNREADABLE = b"the metric samples cannot be read\n"

log = logging.getLogger(__name__)


@attrs.define(eq=False)
class Metrics:
    """The series, and the registry a scrape reads."""

    registry: CollectorRegistry
    operations: Histogram
    tasks_created: Counter
    statuses: Counter
    in_flight: Gauge
    store_calls: Histogram
    # ``running`` and ``parked``: :meth:`task_load`'s gauges, by the name it is told.
    load: dict[str, Gauge]
    decisions: Counter

    @classmethod
    def create(cls, shared: bool | None = None) -> Metrics:
        """The series; ``shared`` (across workers), a registry that sums every worker's
        samples. Unless told, the series are shared when ``PROMETHEUS_MULTIPROC_DIR``
        names the directory of every process's samples."""
        if shared is None:
            shared = shared_metrics_directory() is not None
        registry = CollectorRegistry()
        own = None if shared else registry
        if shared:
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        operations = Histogram(
            "mcp_server_operation_duration_seconds",
            "HTTP exchanges with the MCP server, by method, tool and outcome",
            ["mcp_method_name", "gen_ai_tool_name", "outcome"],
            registry=own,
            buckets=OPERATION_BUCKETS,
        )
        created = Counter(
            "presa_tasks_created",
            "tasks created by this process, by tool, counted once stored",
            ["gen_ai_tool_name"],
            registry=own,
        )
        statuses = Counter(
            "presa_task_statuses",
            "task statuses written by this server, by the status entered",
            ["status"],
            registry=own,
        )
        in_flight = Gauge(
            "mcp_server_requests_in_flight",
            "HTTP exchanges under way, by method: the listen and event streams open among them",
            ["mcp_method_name"],
            registry=own,
            multiprocess_mode="livesum",
        )
        store_calls = Histogram(
            "presa_store_call_duration_seconds",
            "calls of the task store, by call and outcome (ok, or the failure's class)",
            ["call", "outcome"],
            registry=own,
        )
        load = {
            state: Gauge(
                f"presa_tasks_{state}",
                f"tasks {what} in this process's workers",
                registry=own,
                multiprocess_mode="livesum",
            )
            for state, what in (("running", "running"), ("parked", "waiting for input"))
        }
        decisions = Counter(
            "presa_authorization_decisions",
            "decisions of the authorization rung, by outcome",
            ["outcome"],
            registry=own,
        )
        return cls(registry, operations, created, statuses, in_flight, store_calls, load, decisions)

    def store_call(self, call: str, seconds: float, ended: str) -> None:
        """A call of the task store (:class:`~presa_trio.tasks.stores.metered.MeteredStore`)."""
        self.store_calls.labels(call, ended).observe(seconds)

    def task_load(self, gauge: str, change: int) -> None:
        """A task started or ended, parked or resumed
        (:attr:`~presa_trio.tasks.runner.TaskRunner.on_load`)."""
        self.load[gauge].inc(change)

    def decided(self, outcome: str) -> None:
        """A decision of the authorization rung
        (:attr:`~presa_trio.auth.guard.ResourceGuard.on_decision`)."""
        self.decisions.labels(outcome).inc()

    def task_created(self, stored: StoredTask) -> None:
        """A task the runner stored (:attr:`~presa_trio.tasks.runner.TaskRunner.on_created`),
        by the tool its work names: the registry's name, so one the server has."""
        self.tasks_created.labels("" if stored.work is None else stored.work.tool).inc()

    def status_written(self, task: Task) -> None:
        """A status the runner wrote (:attr:`~presa_trio.tasks.runner.TaskRunner.on_status`)."""
        self.statuses.labels(task.status.value).inc()


def outcome(exchange: Exchange) -> str:
    """``ok``, the JSON-RPC error code, ``http_<status>`` for a plain rejection, or
    :data:`NO_RESPONSE` for an exchange that ended before its response began (the
    client left, or a shutdown's grace ran out: the access line's ``status=None``)."""
    if exchange.status is None:
        return NO_RESPONSE
    code, _ = exchange.jsonrpc_error()
    if code is not None:
        return str(code)
    if exchange.status is not None and exchange.status < 400:
        return "ok"
    return f"http_{exchange.status}"


@attrs.define(eq=False, repr=False)
class Metered:
    """ASGI middleware observing every exchange of ``app``, and answering ``/metrics``.

    Made before ``app`` runs: its task runner takes the creation, status and
    load listeners, and the store wrapped to time its calls, as it starts; its
    authorization guard, if any, the decision listener.
    """

    app: McpApp
    metrics: Metrics = attrs.field(factory=Metrics.create)

    def __attrs_post_init__(self) -> None:
        if self.app.auth is not None:
            self.app.auth.on_decision = self.metrics.decided
        for extension in self.app.dispatcher.server.extensions:
            if isinstance(extension, TasksExtension):
                runner = extension.runner
                runner.on_created = self.metrics.task_created
                runner.on_status = self.metrics.status_written
                runner.on_load = self.metrics.task_load
                runner.store = MeteredStore(runner.store, self.metrics.store_call)

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, tool = self.labels(scope)
        # A scrape is counted once answered, as the access log logs it, but not
        # among the exchanges under way, where it would count itself.
        scraping = scope["path"] == METRICS_PATH
        in_flight = None if scraping else self.metrics.in_flight.labels(method)
        if in_flight is not None:
            in_flight.inc()
        exchange = Exchange(send)
        started = time.perf_counter()
        try:
            if scraping:
                await self.scrape(scope, exchange.send)
            else:
                await self.app(scope, receive, exchange.send)
        finally:
            if in_flight is not None:
                in_flight.dec()
            self.observe(method, tool, exchange, time.perf_counter() - started)

    def labels(self, scope: HTTPScope) -> tuple[str, str]:
        """The method and tool labels of a request: what it names, if the server has it."""
        method, name = mcp_headers(scope)
        if method is None:
            return "", ""
        if method not in self.app.dispatcher.table:
            return OTHER, ""
        if method == "tools/call" and name is not None:
            return method, name if name in self.app.dispatcher.server.tools else OTHER
        return method, ""

    def observe(self, method: str, tool: str, exchange: Exchange, seconds: float) -> None:
        self.metrics.operations.labels(method, tool, outcome(exchange)).observe(seconds)

    async def scrape(self, scope: HTTPScope, send: ASGISendCallable) -> None:
        """``GET /metrics``: the text exposition format, behind the Host and Origin checks."""
        try:
            self.app.policy.check_host_and_origin(request_headers(scope))
            check_read_only(scope["method"])
        except Rejection as rejection:
            closing = scope["http_version"] in HTTP1_VERSIONS
            await self.app.reject(send, rejection, close=closing)
            return
        # Across workers, collecting reads every worker's sample files: file I/O,
        # so it runs in a worker thread (prometheus_client's registry is thread-safe).
        try:
            body = await trio.to_thread.run_sync(generate_latest, self.metrics.registry)
        except Exception as error:  # a *.db file there that holds no samples
            log.warning("cannot read the metric samples: %s: %s", type(error).__name__, error)
            await send_whole(send, 503, UNREADABLE, b"text/plain; charset=utf-8", NO_STORE)
            return
        await send_whole(send, 200, body, CONTENT_TYPE_LATEST.encode(), NO_STORE)
