import dataclasses
import datetime
import decimal
import uuid
from typing import assert_type

import trio

from presa_trio.http import serve_http
from presa_trio.server import Elicited, RequestContext, Server, ToolError

server = Server("bookings", "1.0.0")


@dataclasses.dataclass
class Booking:
    room: str
    starts: datetime.datetime
    price: decimal.Decimal


@dataclasses.dataclass
class Receipt:
    reference: uuid.UUID
    booking: Booking
    total: decimal.Decimal


@dataclasses.dataclass
class Confirm:
    sure: bool
    note: str | None = None


@server.tool(needs=["elicitation"])
async def book(ctx: RequestContext, booking: Booking, nights: int = 1) -> Receipt:
    """Books a room, once the user confirms the price."""
    total = booking.price * nights
    answer = await ctx.elicit(f"Book {booking.room} for {total}?", Confirm)
    assert_type(answer, Elicited[Confirm])
    if answer.action != "accept" or not answer.data.sure:
        raise ToolError("not booked")
    return Receipt(uuid.uuid4(), booking, total)


if __name__ == "__main__":
    trio.run(serve_http, server)
