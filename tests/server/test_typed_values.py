"""Typed tools with values JSON has no type for: dates, UUIDs, decimals, paths, dataclasses.

Each travels as a string with its JSON Schema ``format`` (a ``Decimal`` as a
string of digits), arrives structured into its type, goes back out as its
string in ``structuredContent``; a string that is not the value its hint
says is refused on the wire as the schema's violations are, naming the
parameter, as the tool's result on a plain call and in a task alike.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import logging
import pathlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
from trio.testing import wait_all_tasks_blocked

from presa_trio.server import RequestContext, Server
from presa_trio.tasks import TASKS_EXTENSION, Policy, TasksExtension
from presa_trio.testing import McpClient, connect
from presa_trio.wire.errors import INTERNAL_ERROR
from tests.expect import error_of, tools_by_name

DECLARED: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}
WHEN = datetime.datetime(2026, 7, 28, 9, 30, tzinfo=datetime.UTC)
ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


@dataclasses.dataclass(frozen=True)
class Booking:
    room: str
    starts: datetime.datetime
    day: datetime.date
    at: datetime.time
    reference: uuid.UUID
    price: decimal.Decimal
    folder: pathlib.Path
    guests: int = 1
    notes: list[str] = dataclasses.field(default_factory=list)


@attrs.frozen
class Receipt:
    booking: Booking
    issued: datetime.datetime
    total: decimal.Decimal


@attrs.frozen
class Positive:
    amount: int = attrs.field(validator=attrs.validators.gt(0))


seen: list[Any] = []


def build() -> Server:
    server = Server("typed-values", "1.0.0")
    tasks = TasksExtension()
    server.add_extension(tasks)

    @server.tool()
    async def book(ctx: RequestContext, booking: Booking, paid: decimal.Decimal) -> Receipt:
        """Books a room and returns the receipt."""
        seen.append((booking, paid))
        return Receipt(booking, WHEN, booking.price + paid)

    @server.tool()
    async def moment(
        ctx: RequestContext,
        when: datetime.datetime,
        day: datetime.date = datetime.date(2026, 1, 1),
        id: uuid.UUID | None = None,
        where: pathlib.Path = pathlib.Path("/tmp"),
    ) -> datetime.datetime:
        """Echoes a moment, a day later."""
        seen.append((when, day, id, where))
        return when + datetime.timedelta(days=1)

    @tasks.tool(Policy.OPTIONAL)
    async def later(ctx: RequestContext, when: datetime.datetime, fund: Positive) -> str:
        """Schedules something, as a task if the client likes."""
        seen.append(when)
        return when.isoformat()

    @server.tool()
    async def not_a_number(ctx: RequestContext) -> Receipt:
        """Returns a total that no decimal string can hold."""
        booking = Booking(
            "A", WHEN, WHEN.date(), WHEN.time(), ID, decimal.Decimal(1), pathlib.Path()
        )
        return Receipt(booking, WHEN, decimal.Decimal("NaN"))

    return server


BOOKING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "room": {"type": "string"},
        "starts": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "time"},
        "reference": {"type": "string", "format": "uuid"},
        "price": {"type": "string", "pattern": r"^-?[0-9]+(\.[0-9]+)?$"},
        "folder": {"type": "string"},
        "guests": {"type": "integer", "default": 1},
        "notes": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["room", "starts", "day", "at", "reference", "price", "folder"],
}
BOOKING = {
    "room": "Blue",
    "starts": "2026-07-28T09:30:00+00:00",
    "day": "2026-07-28",
    "at": "09:30:00",
    "reference": str(ID),
    "price": "120.10",
    "folder": "/srv/bookings",
}


@pytest.fixture
async def client() -> AsyncIterator[McpClient]:
    seen.clear()
    async with connect(build()) as opened:
        yield opened


async def test_each_type_has_its_string_schema_in_and_out(client: McpClient) -> None:
    """Spec-mandated (server/tools §Tool, §Output Schema; basic/index §JSON Schema
    Usage; JSON Schema 2020-12 Validation §7.3 formats): a dataclass is an object;
    ``datetime``, ``date``, ``time``, ``UUID`` are strings with their ``format``; a
    ``Decimal`` a string of digits, a ``Path`` a string; the same in the output schema."""
    tools = await tools_by_name(client)
    assert tools["book"]["inputSchema"] == {
        "type": "object",
        "properties": {"booking": BOOKING_SCHEMA, "paid": BOOKING_SCHEMA["properties"]["price"]},
        "required": ["booking", "paid"],
    }
    assert tools["book"]["outputSchema"]["properties"] == {
        "booking": BOOKING_SCHEMA,
        "issued": {"type": "string", "format": "date-time"},
        "total": BOOKING_SCHEMA["properties"]["price"],
    }
    assert tools["moment"]["inputSchema"]["properties"] == {
        "when": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date", "default": "2026-01-01"},
        "id": {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}], "default": None},
        "where": {"type": "string", "default": "/tmp"},
    }


async def test_arguments_arrive_as_their_types_and_return_as_strings(client: McpClient) -> None:
    """presa-defined (docs/api.md, typed tools): cattrs structures each string into
    its type, the dataclass from its object; ``structuredContent`` writes them back
    as strings, the ``Decimal`` in full digits."""
    result = await client.call_tool("book", {"booking": BOOKING, "paid": "0.20"})
    ((booking, paid),) = seen
    assert booking == Booking(
        "Blue",
        WHEN,
        datetime.date(2026, 7, 28),
        datetime.time(9, 30),
        ID,
        decimal.Decimal("120.10"),
        pathlib.Path("/srv/bookings"),
    )
    assert paid == decimal.Decimal("0.20")
    assert result["structuredContent"] == {
        "booking": {**BOOKING, "guests": 1, "notes": []},
        "issued": "2026-07-28T09:30:00+00:00",
        "total": "120.30",
    }
    assert "isError" not in result


async def test_a_declared_datetime_return_is_its_json_string(client: McpClient) -> None:
    """presa-defined (docs/api.md): ``-> datetime`` is sent as its JSON text;
    absent optional parameters get their defaults as their types."""
    result = await client.call_tool("moment", {"when": "2026-07-28T09:30:00Z"})
    assert result["content"] == [{"type": "text", "text": '"2026-07-29T09:30:00+00:00"'}]
    assert seen == [(WHEN, datetime.date(2026, 1, 1), None, pathlib.Path("/tmp"))]


@pytest.mark.parametrize("written", ["2026-07-28t09:30:00z", "2026-07-28T09:30:00z"])
async def test_a_date_time_in_lower_case_is_read_as_rfc_3339_allows(
    client: McpClient, written: str
) -> None:
    """Spec-mandated (JSON Schema 2020-12 Validation §7.3.1: ``date-time`` is RFC 3339's,
    whose §5.6 lets ``T`` and ``Z`` be lower case): the tool gets the same moment."""
    result = await client.call_tool("moment", {"when": written})
    assert result["content"] == [{"type": "text", "text": '"2026-07-29T09:30:00+00:00"'}]
    assert seen == [(WHEN, datetime.date(2026, 1, 1), None, pathlib.Path("/tmp"))]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"when": "tomorrow"}, "when: 'tomorrow' is not an ISO 8601 date-time"),
        ({"when": "2026-07-28", "day": "28/07/2026"}, "day: '28/07/2026' is not an ISO 8601 date"),
        ({"when": "2026-07-28", "id": "not-a-uuid"}, "id: 'not-a-uuid' is not a UUID"),
    ],
    ids=["date-time", "date", "uuid"],
)
async def test_a_string_that_is_not_its_type_is_an_error_result_naming_the_parameter(
    client: McpClient, arguments: dict[str, Any], named: str
) -> None:
    """Spec-mandated (server/tools §Error Handling: input validation errors, "date
    in wrong format", are tool execution errors): ``isError`` naming the parameter
    and what is wrong; the tool never runs."""
    result = await client.call_tool("moment", arguments)
    assert result["isError"] is True
    assert result["content"][0]["text"] == f"Invalid arguments for tool 'moment':\n- {named}"
    assert seen == []


async def test_a_decimal_that_is_no_decimal_breaks_the_schema(client: McpClient) -> None:
    """Spec-mandated (server/tools §Error Handling): a ``Decimal``'s pattern is part
    of the schema, so the schema check refuses it, naming the nested field."""
    result = await client.call_tool("book", {"booking": {**BOOKING, "price": "1e3"}, "paid": "1"})
    assert result["isError"] is True
    assert "/booking/price: " in result["content"][0]["text"]
    assert seen == []


async def test_a_refused_value_in_a_task_completes_it_with_the_same_error_result(
    client: McpClient,
) -> None:
    """Spec-mandated (server/tools §Error Handling; SEP-2663 §Task Execution
    Errors: a tool execution error completes the task with an ``isError``
    result). The type check is the call's, so in a task it answers the task; an
    attrs validator's refusal counts, in its own words under the parameter's name."""
    arguments = {"when": "soon", "fund": {"amount": 0}}
    created = await client.call_tool("later", arguments, capabilities=DECLARED)
    assert created["resultType"] == "task"
    await wait_all_tasks_blocked()
    task = await client.get_task(created["taskId"])
    assert task["status"] == "completed"
    text = task["result"]["content"][0]["text"]
    assert task["result"]["isError"] is True
    assert text.startswith("Invalid arguments for tool 'later':\n- when: 'soon' is not")
    assert text.endswith("\n- fund: 'amount' must be > 0: 0")
    assert seen == []


async def test_a_valid_typed_call_runs_as_a_task(client: McpClient) -> None:
    """presa-defined (docs/api.md): in a task, the tool gets the same types."""
    arguments = {"when": "2026-07-28T09:30:00+00:00", "fund": {"amount": 1}}
    created = await client.call_tool("later", arguments, capabilities=DECLARED)
    await wait_all_tasks_blocked()
    task = await client.get_task(created["taskId"])
    assert task["result"]["content"] == [{"type": "text", "text": WHEN.isoformat()}]
    assert seen == [WHEN]


async def test_a_return_whose_decimal_has_no_string_is_a_server_fault(
    client: McpClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Spec-mandated (server/tools §Output Schema: structured results MUST conform):
    ``Decimal("NaN")`` breaks the decimal pattern, so the result is -32603 and the
    log names the field."""
    with caplog.at_level(logging.ERROR):
        response = await client.call("tools/call", {"name": "not_a_number", "arguments": {}})
    error_of(response, 500, INTERNAL_ERROR)
    assert "/total" in caplog.text
