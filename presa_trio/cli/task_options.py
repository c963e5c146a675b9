"""The ``serve`` and ``stdio`` commands' Tasks options: task limits and event streams.

Each option group's flags and defaults are here beside the function that
applies them to a server's Tasks extension (:class:`~presa_trio.tasks.runner.Limits`,
:class:`~presa_trio.tasks.event_log.TaskEventLog`); :mod:`presa_trio.cli.main`
adds them to its parser. The retention table is in docs/task-events.md.
"""

from __future__ import annotations

import argparse
from typing import Any

import attrs

from presa_trio.cli.option_values import (
    UsageError,
    event_count,
    event_seconds,
    payload_size,
    stream_count,
    task_count,
)
from presa_trio.needed_options import NeedsOption
from presa_trio.server import Server
from presa_trio.tasks.event_log import TaskEventLog
from presa_trio.tasks.events import Retention
from presa_trio.tasks.extension import TasksExtension
from presa_trio.tasks.runner import Limits

#: What each ``--task-events-*`` option adds to ``add_argument``: it tunes streams, so
#: without ``--task-events`` it is refused rather than ignored.
EVENTS_ON: dict[str, Any] = {
    "action": NeedsOption,
    "needs": "--task-events",
    "why": "task event streams are off",
}


def add_task_event_options(parser: argparse.ArgumentParser) -> None:
    """Task event streams (SEP-2694, a draft): off unless ``--task-events``.

    The retention table and the stream limits, with these defaults, are in
    docs/task-events.md.
    """
    default = Retention()
    assert default.max_age_ms is not None
    events = parser.add_argument_group(
        "task event streams (SEP-2694, a draft; each --task-events-* option needs --task-events)"
    )
    events.add_argument(
        "--task-events",
        action="store_true",
        help="serve tasks/stream: each task's events, replayable after a cursor (default: off)",
    )
    events.add_argument(
        "--task-events-max",
        **EVENTS_ON,
        type=event_count,
        default=default.max_events,
        metavar="N",
        help="most events kept per task; older ones are dropped (default: %(default)s)",
    )
    events.add_argument(
        "--task-events-max-age",
        **EVENTS_ON,
        type=event_seconds,
        default=default.max_age_ms / 1000,
        metavar="SECONDS",
        help="events older than this are dropped; 0 keeps them as long as the task "
        "(default: %(default)s)",
    )
    events.add_argument(
        "--task-events-terminal-retention",
        **EVENTS_ON,
        type=event_seconds,
        metavar="SECONDS",
        help="how long a finished task's events stay, never longer than the task "
        "(default: as long as the task)",
    )
    events.add_argument(
        "--task-events-max-payload",
        **EVENTS_ON,
        type=payload_size,
        default=default.max_payload_bytes,
        metavar="BYTES",
        help="largest event payload, as compact JSON (default: %(default)s)",
    )
    log = TaskEventLog()
    events.add_argument(
        "--task-events-max-streams-per-client",
        **EVENTS_ON,
        type=stream_count,
        default=log.max_streams_per_client,
        metavar="N",
        help="most open tasks/stream requests of one client on this process: its principal "
        "with authorization, else its IP address (over stdio, the pipe); one more is a "
        "retryable -32603 (over HTTP 429, with Retry-After) (default: %(default)s)",
    )
    events.add_argument(
        "--task-events-max-streams",
        **EVENTS_ON,
        type=stream_count,
        default=log.max_streams,
        metavar="N",
        help="most open tasks/stream requests on this process; one more is a retryable "
        "-32603 (over HTTP 503, with Retry-After) (default: %(default)s)",
    )


def task_event_log(args: argparse.Namespace) -> TaskEventLog | None:
    """The event log the ``--task-events*`` options describe, or None when off."""
    if not args.task_events:
        return None
    terminal = args.task_events_terminal_retention
    retention = Retention(
        max_events=args.task_events_max,
        max_age_ms=round(args.task_events_max_age * 1000) or None,
        terminal_ms=None if terminal is None else round(terminal * 1000),
        max_payload_bytes=args.task_events_max_payload,
    )
    return TaskEventLog(
        retention,
        max_streams_per_client=args.task_events_max_streams_per_client,
        max_streams=args.task_events_max_streams,
        emit_wait=args.store_timeout,
    )


def use_task_events(server: Server, args: argparse.Namespace) -> None:
    """Turn task event streams on for the server's Tasks extension, if asked."""
    events = task_event_log(args)
    if events is None:
        return
    extensions = [e for e in server.extensions if isinstance(e, TasksExtension)]
    if not extensions:
        raise UsageError("--task-events needs a server with the Tasks extension")
    for extension in extensions:
        extension.enable_events(events)


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    """The task limits: what one caller, and the whole server, may hold."""
    defaults = Limits()
    limits = parser.add_argument_group(
        "task limits (per caller with authorization on, where without it all callers are "
        "one; past a limit a task-optional tool answers as a plain call and a task-required "
        "one is refused, 429 for a caller's limit and 503 for the server's, with Retry-After)"
    )
    for flag, field, what in (
        ("--task-max-active", "max_active", "unfinished tasks on this server"),
        ("--task-max-active-per-scope", "max_active_per_scope", "unfinished tasks per caller"),
        ("--task-max-stored", "max_stored", "stored tasks, finished ones until their TTL"),
        ("--task-max-stored-per-scope", "max_stored_per_scope", "stored tasks per caller"),
    ):
        limits.add_argument(
            flag,
            dest=field,
            type=task_count,
            default=getattr(defaults, field),
            metavar="N",
            help=f"most {what} (default: %(default)s)",
        )


def use_limits(server: Server, args: argparse.Namespace) -> None:
    """Bound the server's tasks by the ``--task-max-*`` options."""
    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.runner.limits = attrs.evolve(
                extension.runner.limits,
                max_active=args.max_active,
                max_active_per_scope=args.max_active_per_scope,
                max_stored=args.max_stored,
                max_stored_per_scope=args.max_stored_per_scope,
            )
