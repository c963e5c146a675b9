"""Three counts of one load that must agree: the load client's, ``/metrics``', the access log's.

``presa-trio serve --metrics`` as users run it (its access log on, written
to a file), with ``--workers 2`` on a shared store where there is one
(``bench.scaleout`` runs it on its PostgreSQL), takes ``tools/call`` at
c=32 for one window. Then:

1. the load client says how many responses it received, every one of
   them, in the window or not;
2. ``GET /metrics`` is scraped, the server still up, and the
   ``mcp_server_operation_duration_seconds_count`` samples of
   ``tools/call`` summed, every outcome and worker. An exchange is
   counted when it ends, just after its last byte went out, so a worker
   the machine's load holds up may not have counted the last responses
   the client already has: the scrape is repeated until no ``tools/call``
   is in flight and two scrapes agree (:func:`settled_count`);
3. the server is stopped (SIGTERM: every worker drains and writes its
   last access lines) and the access lines of ``tools/call`` in its log
   counted.

The three are printed; any difference fails the run (bench/targets.py).
"""

from __future__ import annotations

import asyncio
import sys

import attrs

from bench import load, mcp, servers
from bench.cells import CALL, Settings, ok_response

#: The series whose ``_count`` is the requests, the exchanges under way, and the label
#: of the load's method.
OPERATIONS_COUNT = "mcp_server_operation_duration_seconds_count{"
IN_FLIGHT = "mcp_server_requests_in_flight{"
TOOLS_CALL = 'mcp_method_name="tools/call"'
#: What marks an access line of the load's requests in the server's log.
ACCESS_LINE = "presa_trio.access: POST /mcp "
CONCURRENCY = 32
#: The longest the scrapes may take to settle, in seconds.
SETTLE_TIMEOUT = 10.0


@attrs.frozen
class Counts:
    """The requests of one load, as each side counted them."""

    workers: int
    client: int
    metrics: int
    access_lines: int

    @property
    def agree(self) -> bool:
        return self.client == self.metrics == self.access_lines


def command(store: str, workers: int) -> servers.Command:
    """``presa-trio serve --metrics`` with its default logging, on ``store`` with ``workers``."""

    def on_port(port: int) -> list[str]:
        options = ("--store", store, "--workers", str(workers), "--metrics")
        return [*servers.presa_default_command(port), *options]

    return on_port


def scraped(text: str, series: str) -> int:
    """The sum of a Prometheus text exposition's ``series`` samples of ``tools/call``."""
    return round(
        sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(series) and TOOLS_CALL in line
        )
    )


async def settled_count(port: int) -> int:
    """The ``tools/call`` requests ``/metrics`` counts once none is in flight and two
    scrapes in a row agree (within :data:`SETTLE_TIMEOUT` seconds)."""
    last = -1
    async with asyncio.timeout(SETTLE_TIMEOUT):
        while True:
            text = await scrape(port)
            count = scraped(text, OPERATIONS_COUNT)
            if count == last and scraped(text, IN_FLIGHT) == 0:
                return count
            last = count
            await asyncio.sleep(0.1)


async def scrape(port: int) -> str:
    connection = await load.Connection.open("127.0.0.1", port)
    try:
        request = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"
        response = await connection.roundtrip(request)
    finally:
        await connection.close()
    if response.status != 200:
        raise RuntimeError(f"GET /metrics answered {response.status}: {response.body[:200]!r}")
    return response.body.decode()


async def run(settings: Settings, store: str, *, workers: int) -> Counts:
    port = servers.free_port()
    served = await servers.start("presa-metrics", command(store, workers)(port), port, core=None)
    try:
        raw = mcp.http_request(port, "tools/call", CALL)
        clients = await load.connections("127.0.0.1", port, raw, CONCURRENCY)
        outcome = await load.closed_loop(
            clients, warmup=settings.warmup, duration=settings.duration, check=ok_response
        )
        metrics = await settled_count(port)
    finally:
        served.stop()
    logged = served.log_path.read_text(errors="replace")
    lines = sum(
        1 for line in logged.splitlines() if ACCESS_LINE in line and "mcp-method=tools/call" in line
    )
    if served.process.returncode != 0:
        print(f"presa-metrics exited with {served.process.returncode}", file=sys.stderr)
    return Counts(workers, outcome.answered, metrics, lines)


def table(counts: Counts) -> str:
    verdict = "agree" if counts.agree else "DISAGREE"
    return (
        f"`tools/call` c={CONCURRENCY} on `serve --workers {counts.workers} --metrics`, "
        f"access log to a file: the load client received {counts.client:,} responses, "
        f"`/metrics` counts {counts.metrics:,}, the access log has {counts.access_lines:,} "
        f"lines: they {verdict}."
    )
