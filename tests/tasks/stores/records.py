"""Tasks, work and limits the store tests share, and a watcher that records what it saw."""

from __future__ import annotations

from typing import Any

import attrs
import trio
import trio.testing

from presa_trio.tasks import model
from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import (
    Lease,
    Limits,
    StoredTask,
    Work,
)

T0 = 1_800_000_000_000  # epoch ms


ROOMY = Limits()
ASK = {"method": "elicitation/create", "params": {"message": "Sure?"}}


WORK = Work(
    tool="slow_compute",
    arguments={"seconds": 1, "label": "ünïcode"},
    protocol_version="2026-07-28",
    capabilities={"extensions": {"io.modelcontextprotocol/tasks": {}}},
    input_responses={"earlier": {"action": "accept", "content": {}}},
    state={"round": 2},
    rerun=True,
    principal={"issuer": "https://as.example", "subject": "alice", "clientId": None, "scopes": []},
)


def new_task(task_id: str = "t-1", ttl_ms: int | None = 60_000) -> Task:
    return model.create(task_id, now_ms=T0, ttl_ms=ttl_ms, poll_interval_ms=100)


def stored(
    task_id: str = "t-1",
    scope: str = "alice",
    ttl_ms: int | None = 60_000,
    lease: Lease | None = None,
) -> StoredTask:
    return StoredTask(scope, new_task(task_id, ttl_ms), WORK, lease or Lease("p1", 1, T0 + 30_000))


#: Strings no store may change: U+0000 (which PostgreSQL's jsonb refuses), a
#: lone surrogate (which no UTF-8 text holds; JSON writes it ``\\ud800``), and
#: the six characters of an escaped U+0000, which must not read back as one.
AWKWARD = ["a\x00b", "\x00", "lone \ud800 surrogate", "\\u0000", "\udfff\x00é"]


def awkward_value(text: str) -> dict[str, Any]:
    return {text: text, "list": [text, {"nested": text}]}


def awkward_work(text: str) -> dict[str, Any]:
    """Work fields holding ``text``: the tool arguments and the handler state."""
    return {"arguments": awkward_value(text), "state": awkward_value(text)}


def awkward_task(text: str) -> list[Task]:
    """A task's moves holding ``text``: asked, answered, a status message, completed."""
    asked = model.request_input(new_task(), {"k": ASK}, T0 + 1)
    answer = {"action": "accept", "content": awkward_value(text)}
    answered = model.fulfil(asked, {"k": answer}, T0 + 2)
    reported = model.report(answered, text, T0 + 3)
    result = {"content": [{"type": "text", "text": text}], "structuredContent": awkward_value(text)}
    return [asked, answered, reported, model.complete(reported, result, T0 + 4)]


@attrs.define
class Seen:
    """A watcher that records what it is given and wakes whoever waits for more."""

    # Store events, or (from watch_events) task ids and RESYNC.
    events: list[object] = attrs.field(factory=list)
    _more: trio.Event = attrs.field(factory=trio.Event)

    def __call__(self, event: object) -> None:
        self.events.append(event)
        self._more.set()
        self._more = trio.Event()

    async def until(self, wanted: object) -> None:
        with trio.fail_after(PATIENCE):
            while wanted not in self.events:
                await self._more.wait()


PATIENCE = 60
