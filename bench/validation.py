"""What checking a tool's arguments against its ``inputSchema`` costs per ``tools/call``.

In-process, no HTTP: for three tools of the demo server, the time of one
argument check (the compiled schema the server checks with, on the
arguments the call sends) beside the time of the whole ``tools/call``
through the dispatcher (parse, ``_meta``, dispatch, the check, the handler,
encode), so the check's share of a call reads directly. Each figure is the
median of several repeats of a fixed number of iterations.

The tools: ``test_simple_text`` (no parameters: the load cells' call),
``slow_compute`` with ``seconds: 0`` (two typed properties and a minimum),
and ``json_schema_2020_12_tool`` (``$ref`` into ``$defs``, ``allOf``/``anyOf``,
``if``/``then``/``else``, ``additionalProperties``).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import attrs
import trio

from presa_trio.demo import build_server
from presa_trio.server import Dispatcher
from presa_trio.wire.envelope import Request, parse_json, parse_message
from presa_trio.wire.meta import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, RequestMeta

REPEATS = 5
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("test_simple_text", {}),
    ("slow_compute", {"seconds": 0, "label": "bench"}),
    (
        "json_schema_2020_12_tool",
        {
            "name": "Ada",
            "contactMethod": "email",
            "email": "ada@example.com",
            "address": {"street": "1 Loop", "city": "Lisbon"},
        },
    ),
]


@attrs.frozen
class Cost:
    tool: str
    # Seconds per argument check, and per whole in-process tools/call.
    check: float
    call: float

    @property
    def share(self) -> float:
        return self.check / self.call


def body_for(name: str, arguments: dict[str, Any]) -> bytes:
    params = {
        "name": name,
        "arguments": arguments,
        "_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}},
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    ).encode()


def median_seconds(run: Callable[[], None], iterations: int) -> float:
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) / iterations)
    return statistics.median(samples)


async def discard(message: dict[str, Any]) -> None:
    """No stream: these calls send no notifications."""


async def measure(iterations: int) -> list[Cost]:
    server = build_server()
    dispatcher = Dispatcher.for_server(server)
    costs = []
    for name, arguments in CALLS:
        schema = server.tools[name].arguments
        if schema.violations(arguments):
            raise RuntimeError(f"{name}: the bench's arguments must be valid")

        def checks(schema: Any = schema, arguments: dict[str, Any] = arguments) -> None:
            for _ in range(iterations):
                schema.violations(arguments)

        body = body_for(name, arguments)
        samples = []
        for _ in range(REPEATS):
            start = time.perf_counter()
            for _ in range(iterations):
                message = parse_message(parse_json(body))
                if not isinstance(message, Request):
                    raise TypeError("the bench sends requests")
                meta = RequestMeta.from_params(message.params)
                data, status = await dispatcher.respond(message, meta, discard)
            samples.append((time.perf_counter() - start) / iterations)
        if status != 200 or b'"isError"' in data:
            raise RuntimeError(f"{name}: unexpected answer {data[:300]!r}")
        costs.append(Cost(name, median_seconds(checks, iterations), statistics.median(samples)))
    return costs


def run(quick: bool) -> list[Cost]:
    """Measure in a Trio run of its own (the tools are Trio code)."""
    iterations = 500 if quick else 3000
    return trio.run(measure, iterations)


def table(costs: list[Cost]) -> str:
    lines = [
        "| tools/call, in-process | argument check µs | checks/s | whole call µs | check's share |",
        "|---|--:|--:|--:|--:|",
    ]
    for cost in costs:
        lines.append(
            f"| {cost.tool} | {cost.check * 1e6:.2f} | {1 / cost.check:,.0f} "
            f"| {cost.call * 1e6:.1f} | {cost.share:.1%} |"
        )
    return "\n".join(lines)
