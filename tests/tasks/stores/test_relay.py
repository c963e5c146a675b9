"""The PostgreSQL relay of the server's own change notifications, between two stores.

Two stores opened on one fresh database stand for two processes, each with its
own change bus; every wait is bounded (``PATIENCE``), and nothing asserts how
long anything took. The processes end to end: tests/e2e/test_changes_across_processes.py.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import psycopg
import pytest
import trio
from psycopg import sql

from presa_trio.server import RequestContext, Server
from presa_trio.server.subscriptions import (
    LIST_CHANGES,
    TOOLS_LIST_CHANGED,
    Change,
    ChangeBus,
    Subscription,
    resource_updated,
)
from presa_trio.tasks import TaskRunner, TasksExtension
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import RelaysChanges, TaskStore
from presa_trio.tasks.stores.postgres.database import Database
from presa_trio.tasks.stores.postgres.relay import MAX_QUEUED, RELAY_CHANNEL, ChangeRelay
from presa_trio.testing import open_client
from tests.postgres import Postgres, listeners_cut
from tests.tasks.stores.records import PATIENCE

#: Announced last by the other process: what a subscription holds before it came first.
MARK = resource_updated("test://mark")


@asynccontextmanager
async def two_relays(url: str) -> AsyncIterator[tuple[ChangeBus, ChangeBus]]:
    """The buses of processes A and B, each relayed through its own store on ``url``."""
    buses = ChangeBus(), ChangeBus()
    async with (
        open_store(url) as a,
        open_store(url) as b,
        trio.open_nursery() as nursery,
    ):
        for store, bus, origin in zip((a, b), buses, ("a", "b"), strict=True):
            assert isinstance(store, RelaysChanges)
            await nursery.start(store.relay_changes, bus, origin)
        yield buses
        nursery.cancel_scope.cancel()


async def until(subscription: Subscription, last: Change = MARK) -> list[Change]:
    """What ``subscription`` delivers before ``last``."""
    received: list[Change] = []
    with trio.fail_after(PATIENCE):
        async for change in subscription:
            if change == last:
                return received
            received.append(change)
    raise AssertionError("the subscription ended before the mark")


async def test_after_a_lost_connection_every_list_is_announced_changed(
    postgres: Postgres, postgres_url: str
) -> None:
    """presa-defined (relay.py, "A lost connection"; subscriptions: a lost "look again"
    must not leave a stream on stale lists): once B's relay listens again after its
    connection was cut, B's bus publishes each list's list_changed, once; A's changes
    reach B again after."""
    database = urlsplit(postgres_url).path.lstrip("/")
    async with two_relays(postgres_url) as (on_a, on_b):
        with on_b.subscribe(lambda change: True) as heard:
            with listeners_cut(postgres, database, RELAY_CHANNEL):
                pass
            with trio.fail_after(PATIENCE):
                resynced = [await heard.__anext__() for _ in LIST_CHANGES]
            on_a.announce(MARK)
            assert await until(heard) == []
    assert resynced == [Change(method) for method in LIST_CHANGES]


FOREIGN_PAYLOADS = [
    "not json",
    "[1, 2]",
    '{"origin": "x", "method": "tools/call", "params": {}}',
    '{"origin": "x", "method": "notifications/resources/updated", "params": {}}',
    '{"origin": 7, "method": "notifications/tools/list_changed", "params": {}}',
    # Nested deeper than the JSON decoder goes (RecursionError), within the payload limit.
    "[" * 3000 + "]" * 3000,
]


async def test_payloads_presa_did_not_send_are_ignored_and_the_relay_goes_on(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """presa-defined (relay.py, "Hearing": any role that may connect may NOTIFY): a
    payload that is no relayed change is ignored with one warning in each process, and publishes
    nothing; A's next change reaches B on the same connection, and B's own announced
    change reaches its own stream once."""
    tools = Change(TOOLS_LIST_CHANGED)
    async with two_relays(postgres_url) as (on_a, on_b):
        with (
            on_a.subscribe(lambda change: True) as heard_on_a,
            on_b.subscribe(lambda change: True) as heard_on_b,
        ):
            with psycopg.connect(postgres_url, autocommit=True) as other:
                for payload in FOREIGN_PAYLOADS:
                    notify = sql.SQL("NOTIFY {}, {}")
                    other.execute(
                        notify.format(sql.Identifier(RELAY_CHANNEL), sql.Literal(payload))
                    )
            on_b.announce(tools)
            on_a.announce(MARK)
            assert await until(heard_on_b) == [tools]
            # A published its MARK at once; B's change came after the foreign payloads.
            assert await until(heard_on_a, tools) == [MARK]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2 * len(FOREIGN_PAYLOADS)  # heard by A and by B
    assert all("that is not presa's" in line for line in warned), warned


def test_a_relay_that_is_behind_drops_new_changes_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """presa-defined (relay.py, "Sending"): the relay never blocks nor fails the code
    that announces; once MAX_QUEUED changes wait, a new one is dropped, with one
    warning line for however many."""
    relay = ChangeRelay(Database("postgresql://nowhere.invalid/db"), ChangeBus(), "a")
    for n in range(MAX_QUEUED + 10):
        relay.offer(resource_updated(f"test://{n}"))
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1
    assert "dropped" in warned[0]


def relayed_server(name: str, store: TaskStore) -> Server:
    """A server whose Tasks extension runs on ``store``, made in code, not by the command line."""
    server = Server(name, "1.0.0")
    server.add_extension(TasksExtension(TaskRunner(store)))

    @server.tool()
    async def hello(ctx: RequestContext) -> str:
        """A tool, so that the server lists tools and a stream may ask for their changes."""
        return "hello"

    return server


async def test_a_runner_made_in_code_on_a_shared_store_relays_its_servers_changes(
    postgres_url: str,
) -> None:
    """presa-defined (docs/api.md, ``Server.notify_tools_list_changed``: on a PostgreSQL
    store the streams of every process are told): two servers built as api.md shows,
    ``TasksExtension(TaskRunner(store))`` on one database, served in-process; a listen
    stream on B hears the list change A's code announces, as under ``presa-trio serve``."""
    async with open_store(postgres_url) as store_a, open_store(postgres_url) as store_b:
        server_a = relayed_server("a", store_a)
        server_b = relayed_server("b", store_b)
        async with (
            open_client(server_a),
            open_client(server_b) as client_b,
            client_b.listen(tools_list_changed=True) as changes,
        ):
            server_a.notify_tools_list_changed()
            with trio.fail_after(PATIENCE):
                heard = await changes.next()
    assert changes.honoured == {"toolsListChanged": True}
    assert heard.method == TOOLS_LIST_CHANGED
