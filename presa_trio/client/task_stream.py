"""``presa-trio task stream URL TASK_ID [--after N]``: a task's events, printed as they come.

Each event is one line on stdout as soon as it arrives: with ``--json``
the ``params`` of its ``notifications/tasks/event`` as the server sent
them, compact, one JSON document per line; else ``seq``, type and a
reading of the payload (presa's own types in words, partial content as
text, any other payload as compact JSON). Events the client will never
see (``events_gone``, or a server that skipped them) are said on stderr,
and the seqs on stdout jump where they were. A cut stream is resumed from
the last event printed (:class:`~presa_trio.client.events.TaskEvents`), and
so is one the server refused for now (:func:`follow_refused`).

The command ends when the task's log closes, with the exit status
``task wait`` gives the task's outcome (:func:`~presa_trio.client.follow.ended_status`);
the result itself is one ``presa-trio task get`` away. Ctrl-C ends the
stream, not the task (SEP-2694 §tasks/stream: "Cancellation stops event
delivery but does not cancel the underlying task").

Payloads are shown as the server sent them, as tool results are
(SEP-2694 §Security Implications: render them as tool results).
"""

from __future__ import annotations

import trio

from presa_trio.client.errors import ProtocolFailure
from presa_trio.client.events import Handler, Lost, TaskEvents, is_terminal
from presa_trio.client.follow import Refusals, TaskFollower, ended_status, poll_seconds
from presa_trio.client.output import Console, block_line, compact
from presa_trio.client.transport import object_at
from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import (
    INPUT_ANSWERED_EVENT,
    INPUT_REQUESTED_EVENT,
    PARTIAL_CONTENT_EVENT,
    STATUS_EVENT,
)

#: Seconds the wait between two tries of a refused stream grows to at most.
LONGEST_RETRY_S = 10.0


def payload_text(kind: object, payload: JSONObject) -> str:
    """What an event's payload says, for reading: presa's own types in words."""
    keys = payload.get("keys")
    if kind == STATUS_EVENT:
        said = payload.get("statusMessage")
        return f"{payload.get('status')}" + (f" — {said}" if isinstance(said, str) else "")
    if kind in (INPUT_REQUESTED_EVENT, INPUT_ANSWERED_EVENT) and isinstance(keys, list):
        return ", ".join(map(str, keys))
    if kind == PARTIAL_CONTENT_EVENT and isinstance(payload.get("content"), list):
        return "\n".join(block_line(block) for block in payload["content"])
    return compact(payload)


def event_text(event: JSONObject) -> str:
    """One event as a person reads it: ``seq type: payload``."""
    kind = event.get("type")
    return f"{event.get('seq')} {kind}: {payload_text(kind, object_at(event, 'payload'))}"


async def stream_task(follower: TaskFollower, task: JSONObject, after: int | None) -> int:
    """Print the events of ``task`` (its ``tasks/get`` snapshot) after ``after`` until its log
    closes; the exit status of its outcome."""
    console, task_id = follower.console, str(task.get("taskId"))
    events = TaskEvents(
        follower.connection,
        task_id,
        cursor=after,
        retry_s=poll_seconds(task),
        ended=is_terminal(task),
        last_read=task,
    )

    async def show(item: JSONObject | Lost) -> None:
        if isinstance(item, Lost):
            console.note(item.line())
        else:
            console.line(item, event_text(item))

    ended = await follow_refused(events, show, console)
    return ended_status(await follower.outcome(task_id, ended), console)


async def follow_refused(events: TaskEvents, handle: Handler, console: Console) -> JSONObject:
    """``events.follow(handle)``, tried again after an error the server marks retryable.

    A refusal for now (:func:`~presa_trio.client.follow.for_now`: presa's -32603
    ``data.retryable: true`` for too many streams, over HTTP 429 or 503, or a store
    that cannot be reached; a 429 or 503 of a proxy, after its ``Retry-After``) is said
    on stderr and the stream resumed after the last event handed on, as after
    a cut; the wait doubles from the task's poll interval up to
    :data:`LONGEST_RETRY_S`. Refusals that have gone on for the connection's
    ``--timeout`` with no event between end the command with the last one.
    """
    refusals = Refusals(events.connection.timeout_s)
    first_wait = min(events.retry_s, LONGEST_RETRY_S)  # a long poll interval waits the cap
    wait = first_wait
    while True:
        before = events.cursor
        try:
            return await events.follow(handle)
        except ProtocolFailure as error:
            if events.cursor != before:
                refusals.progressed()
                wait = first_wait
            later = refusals.wait(error)
            wait = min(max(wait, later), events.connection.timeout_s)
            console.note(f"{error}; trying again in {wait:g} s")
            await trio.sleep(wait)
            wait = min(wait * 2, LONGEST_RETRY_S)
