"""What both ends of the wire know of the Tasks extension: its id, the statuses, the names.

A client that follows a task and the server that runs it read the same
facts: the extension's identifier in ``capabilities.extensions``, the
requests a task may answer, the five statuses as they are spelt on the
wire and which of them end a task, which ``params`` key ``Mcp-Name``
mirrors on the task methods, and the event
types presa writes to a task's event stream, how that stream is
advertised, delivered and refused, and the shape of one streamed event.
They live here, apart from the
runtime (:mod:`presa_trio.tasks`), so that :mod:`presa_trio.client` needs
no part of the server to speak to one.

Spec: SEP-2663 §Supported Methods, §Tasks, §Task Status, §Streamable HTTP: Routing
Headers; SEP-2694 (draft) §Specification, §notifications/tasks/event, §events_gone
error, §Event Types.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from presa_trio.wire.models import JSONObject

#: The extension's identifier, a key of ``capabilities.extensions`` (SEP-2663).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


class Status(enum.Enum):
    """The five task statuses, spelt as on the wire (SEP-2663 §Task Status)."""

    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: The statuses a task never leaves (SEP-2663 §Task Status).
TERMINAL: frozenset[Status] = frozenset({Status.COMPLETED, Status.FAILED, Status.CANCELLED})

#: The requests a server may answer with a ``CreateTaskResult`` (SEP-2663
#: §Supported Methods); a task in answer to any other is an invalid response
#: (§Capability Negotiation).
TASK_AUGMENTED: frozenset[str] = frozenset({"tools/call"})

#: ``Mcp-Name`` on the task methods mirrors ``params.taskId`` (SEP-2663
#: §Streamable HTTP: Routing Headers); a client sends it on ``tasks/stream``
#: too (SEP-2694, a draft), for the same routing.
TASK_NAME_PARAMS: Mapping[str, str] = dict.fromkeys(
    ("tasks/get", "tasks/update", "tasks/cancel", "tasks/stream"), "taskId"
)
#: The task methods whose ``Mcp-Name`` a server checks only when it is sent:
#: SEP-2694 asks for none on ``tasks/stream``, so a client written from it
#: alone leaves it out (spec-notes §50).
NAME_CHECKED_WHEN_SENT: frozenset[str] = frozenset({"tasks/stream"})

#: The notification that carries a task's newest ``DetailedTask`` to a listen
#: stream that asked for it (SEP-2663 §Task Status Notifications).
TASK_NOTIFICATION = "notifications/tasks"

#: presa's own task event types start with this (an implementation-controlled
#: namespace: the package's name, which presa holds; SEP-2694 §Event Types).
PRESA_PREFIX = "presa_trio."
STATUS_EVENT = PRESA_PREFIX + "task.status"
INPUT_REQUESTED_EVENT = PRESA_PREFIX + "task.input_requested"
INPUT_ANSWERED_EVENT = PRESA_PREFIX + "task.input_answered"
#: Partial content blocks, as SEP-2679 shaped them (SEP-2694 §Relationship to SEP-2679).
PARTIAL_CONTENT_EVENT = PRESA_PREFIX + "content.partial"

#: The key of the Tasks extension's settings in ``server/discover`` that says
#: ``tasks/stream`` is served (SEP-2694 §Specification: "MAY advertise this
#: support as an eventStreams sub-capability of Tasks").
EVENT_STREAMS = "eventStreams"
#: The request that streams a task's events (SEP-2694 §tasks/stream).
TASK_STREAM = "tasks/stream"
#: The method of the notification that carries one event (SEP-2694 §notifications/tasks/event).
EVENT_NOTIFICATION = "notifications/tasks/event"
#: ``events_gone``'s code, from the implementation-defined server error range
#: (SEP-2694 §events_gone error); its ``data.earliestSeq`` is the oldest event kept.
EVENTS_GONE = -32010


@attrs.frozen
class StreamedTaskEvent:
    """One event of a task's stream, as ``notifications/tasks/event`` carries it.

    The proposal's ``TaskEvent``; the server's stored record of it, with the
    time it was appended, is :class:`presa_trio.tasks.events.TaskEvent`.

    Spec: SEP-2694 (draft) §Task Event, §notifications/tasks/event.
    """

    # 0 for the task's first event, then exactly one more for each.
    seq: int
    task_id: str
    # A prefixed type: ``com.example.step``, presa's ``presa_trio.task.status``.
    type: str
    payload: JSONObject
    # Carries ``io.modelcontextprotocol/related-task`` naming the same task.
    meta: JSONObject | None = None
