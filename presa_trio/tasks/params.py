"""The params of the task methods, checked before anything is looked up (pure).

A bad shape is -32602 here, before the store is asked; what the params
name (a task, its outstanding keys) is checked by the extension. The rules
of a task id are all here: its shape (:func:`valid_task_id`), and what no
task's id holds (:func:`can_name_a_task`), which the runner applies to
every id it is asked for, a listen's included.

Spec: SEP-2663 §Task Polling, §Task Update Requests, §Task Status Notifications.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from presa_trio.wire.errors import InvalidParams
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import parse_input_responses

#: Longest accepted ``taskId``, in UTF-8 bytes; presa's ids are 32 (spec-notes §37).
MAX_TASK_ID_BYTES = 256
#: Most task ids one listen stream may ask for (presa's bound).
MAX_SUBSCRIBED_TASKS = 100


def valid_task_id(task_id: Any) -> bool:
    """A task id is a non-empty string of at most 256 UTF-8 bytes (a lone surrogate: 3)."""
    return (
        isinstance(task_id, str)
        and 0 < len(task_id.encode("utf-8", "surrogatepass")) <= MAX_TASK_ID_BYTES
    )


def can_name_a_task(task_id: str) -> bool:
    """Whether ``task_id`` could be any task's id: it holds no U+0000 and no lone surrogate.

    presa's ids are base64url (spec-notes §37), and SQLite and PostgreSQL
    cannot even take such an id as a key (UTF-8 has no lone surrogate,
    PostgreSQL text no U+0000): they would refuse it as data. A valid
    id (:func:`valid_task_id`) that fails this is unknown, as every unknown
    id is (SEP-2663 §Protocol Errors: -32602), before any store is asked
    (:func:`~presa_trio.tasks.runner.check_nameable`).
    """
    try:
        return b"\x00" not in task_id.encode("utf-8")
    except UnicodeEncodeError:
        return False


def read_task_id(params: dict[str, Any]) -> str:
    """``params.taskId``, a valid task id, else -32602."""
    task_id = params.get("taskId")
    if not valid_task_id(task_id):
        raise InvalidParams(
            f"taskId must be a non-empty string of at most {MAX_TASK_ID_BYTES} bytes"
        )
    assert isinstance(task_id, str)
    return task_id


def read_subscribed_ids(wanted: Mapping[str, Any]) -> list[str]:
    """``notifications.taskIds``: at most 100 valid task ids, else -32602."""
    task_ids = wanted["taskIds"]
    if not isinstance(task_ids, list) or not all(valid_task_id(t) for t in task_ids):
        raise InvalidParams("notifications.taskIds must be a list of task ids")
    if len(task_ids) > MAX_SUBSCRIBED_TASKS:
        raise InvalidParams(f"notifications.taskIds lists more than {MAX_SUBSCRIBED_TASKS} ids")
    return task_ids


def read_answers(params: dict[str, Any]) -> dict[str, JSONObject]:
    """``tasks/update`` ``inputResponses``: a required object; non-empty keys; object values.

    ``null`` is no object: the request's type has ``inputResponses:
    InputResponses`` (SEP-2663 §Task Update Requests (Request)), though on
    a ``tools/call`` an absent or null one means no answers (mrtr).
    Only the shape is checked here;
    :meth:`~presa_trio.tasks.extension.TasksExtension.update_task`
    checks each answer to an outstanding key against its request, and one
    under a key that is not outstanding is never looked at (spec-notes §29).
    """
    if not isinstance(params.get("inputResponses"), dict):
        raise InvalidParams("tasks/update requires an inputResponses object")
    answers = parse_input_responses(params)
    if not all(answers):
        raise InvalidParams("inputResponses keys must be non-empty")
    return answers
