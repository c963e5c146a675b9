"""The storage record: one stored task as versioned JSON, the same in every store.

A durable store keeps each task as the JSON object :func:`to_record` makes
and reads it back with :func:`from_record`; the round trip is exact for
every status (the contract suite checks it). The format::

    {"version": 1,
     "scope": "…",                                  # the access scope, opaque
     "task": {"taskId", "status", "createdMs", "updatedMs", "ttlMs",
              "pollIntervalMs", "inputRequests", "issued", "inbox",
              "result", "error", "revision", "statusMessage"?,
              "requiredScopes"?},
     "work": {"tool", "arguments", "protocolVersion", "capabilities",
              "inputResponses", "state", "rerun", "principal"} | null,
     "lease": {"owner", "generation", "expiresMs"} | null}

Times are epoch milliseconds. ``issued`` is a sorted list. ``statusMessage``
(the worker's own, :func:`~presa_trio.tasks.model.report`) is written only
when set; a record without it reads as having none, so adding it needed no
new version: every version-1 record reads the same as before. So it is with
``requiredScopes`` (sorted), the scopes the creating request needed: written
only when there are some (authorization on), read as none when absent, and
kept in the task, so that every store and every process enforces them on
``tasks/get``, ``tasks/update`` and ``tasks/cancel``. A store may keep
``lease`` in columns of its own instead (it changes without the task
changing); its three fields map one to one.

``work``, ``lease`` and a work's ``principal`` go through :data:`converter`,
the attrs classes' fields under the wire's camelCase names
(:func:`~presa_trio.wire.convert.wire_name`); the task is written by hand,
because its record is not its fields (the requests as on the wire, the
withdrawn ids as what was ``issued``).

A record of an unknown ``version`` is refused: a newer server wrote it.

As text (:func:`record_text`), a record holds every string a Python JSON
value may hold, U+0000 and lone surrogates included, so every store keeps
what the memory store keeps: UTF-8 where the text can be UTF-8, and
``\\uXXXX`` escapes (plain ASCII) where it cannot.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, TypeVar, get_origin

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from presa_trio.tasks.model import Task
from presa_trio.tasks.stores.base import Lease, StoredTask, Work
from presa_trio.wire.convert import wire_name
from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import Status

RECORD_VERSION = 1

T = TypeVar("T")

log = logging.getLogger(__name__)


#: The field types that hold a JSON value as the wire carried it (``Work.arguments``,
#: its answers, its handler state…).
JSON_VALUE_TYPES: tuple[Any, ...] = (JSONObject, JSONObject | None, Any)


def _as_is(value: Any) -> Any:
    return value


def _is_frozenset(cls: Any) -> bool:
    """``frozenset[str]`` as well as a bare ``frozenset``: cattrs would keep the set."""
    return cls is frozenset or get_origin(cls) is frozenset


def _make_converter() -> cattrs.Converter:
    """Every field written, under its wire name; sets as sorted lists.

    A JSON value is written as it is, not walked: it is JSON already, and a
    walk takes several Python frames per level, so a value nested as deep as
    a request body may carry (some hundreds of levels) would overflow the
    stack where the body's parser did not.
    """
    conv = cattrs.Converter()
    conv.register_unstructure_hook_func(_is_frozenset, sorted)
    conv.register_unstructure_hook_func(lambda cls: cls in JSON_VALUE_TYPES, _as_is)

    def renamed(cls: type) -> dict[str, Any]:
        return {a.name: override(rename=wire_name(a.name)) for a in attrs.fields(cls)}

    conv.register_unstructure_hook_factory(
        attrs.has, lambda cls: make_dict_unstructure_fn(cls, conv, **renamed(cls))
    )
    conv.register_structure_hook_factory(
        attrs.has, lambda cls: make_dict_structure_fn(cls, conv, **renamed(cls))
    )
    return conv


#: Work, Lease and Principal to and from their record JSON.
converter = _make_converter()


def to_json(value: Any) -> Any:
    """A work, lease or principal as record JSON; None stays None."""
    return converter.unstructure(value)


def from_json(data: JSONObject | None, cls: type[T]) -> T | None:
    """A ``cls`` (work, lease or principal) read from its record JSON; None stays None."""
    return None if data is None else converter.structure(data, cls)


class TooDeepToStore(ValueError):
    """A value nested deeper than the record's JSON encoder can follow: data a store
    refuses, like a string it cannot hold (each store's ``classify``)."""


def record_text(value: Any) -> str:
    """``value`` as compact JSON text that UTF-8 can carry, whatever its strings hold.

    A value the body's parser took near its depth limit may be too deep to
    write again from deeper in the stack: :class:`TooDeepToStore`.
    """
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON allows
            return json.dumps(value, separators=(",", ":"))
    except RecursionError:
        raise TooDeepToStore("a value is nested too deeply to store") from None
    return text


class UnknownRecordVersion(ValueError):
    """The record was written by a storage format this server does not know."""


def task_to_json(task: Task) -> JSONObject:
    data: JSONObject = {
        "taskId": task.task_id,
        "status": task.status.value,
        "createdMs": task.created_ms,
        "updatedMs": task.updated_ms,
        "ttlMs": task.ttl_ms,
        "pollIntervalMs": task.poll_interval_ms,
        "inputRequests": task.requests_on_wire(),
        "issued": sorted(task.issued),
        "inbox": dict(task.inbox),
        "result": task.result,
        "error": task.error,
        "revision": task.revision,
    }
    if task.message is not None:
        data["statusMessage"] = task.message
    if task.required_scopes:
        data["requiredScopes"] = sorted(task.required_scopes)
    return data


def task_from_json(data: JSONObject) -> Task:
    return Task(
        task_id=data["taskId"],
        status=Status(data["status"]),
        created_ms=data["createdMs"],
        updated_ms=data["updatedMs"],
        ttl_ms=data["ttlMs"],
        poll_interval_ms=data["pollIntervalMs"],
        input_requests=data["inputRequests"],
        withdrawn=frozenset(data["issued"]).difference(data["inputRequests"], data["inbox"]),
        inbox=data["inbox"],
        result=data["result"],
        error=data["error"],
        revision=data["revision"],
        message=data.get("statusMessage"),
        required_scopes=frozenset(data.get("requiredScopes", ())),
    )


#: What reading a record this server cannot read raises: a status or a field
#: another server wrote, a value of another type, text that is not a record.
UNREADABLE = (ValueError, KeyError, TypeError, cattrs.BaseValidationError)
#: What a claim leaves a task out of (:func:`readable`).
UNCLAIMED = "it is not recovered"
#: What the announcements leave a task out of, heard or re-read (:func:`readable`).
UNDELIVERED = "its change is not delivered"


def readable(task_id: str, read: Callable[[], T], left_out: str) -> T | None:
    """What ``read`` makes of a task's stored record, or None if this server cannot read it.

    A claim, a resync and the announcements each take many tasks; one whose
    record this server cannot read (another server's, or edited by hand)
    must not stop them for the others. It is left out, in one line of the
    log naming it and what it is ``left_out`` of.
    """
    try:
        return read()
    except UNREADABLE as error:
        why = str(error)
    log.error("task %s cannot be read, so %s: %s", task_id, left_out, why)
    return None


def lease_columns(lease: Lease | None) -> tuple[str | None, int | None, int | None]:
    """The lease as a SQL store keeps it: owner, generation and expiry columns."""
    if lease is None:
        return None, None, None
    return lease.owner, lease.generation, lease.expires_ms


def to_record(stored: StoredTask) -> JSONObject:
    """The versioned JSON record of ``stored``."""
    return {
        "version": RECORD_VERSION,
        "scope": stored.scope,
        "task": task_to_json(stored.task),
        "work": to_json(stored.work),
        "lease": to_json(stored.lease),
    }


def from_record(record: dict[str, Any]) -> StoredTask:
    """The stored task a record holds; :class:`UnknownRecordVersion` if not ours."""
    version = record.get("version")
    if version != RECORD_VERSION:
        raise UnknownRecordVersion(f"task record version {version!r}; this server reads 1")
    return StoredTask(
        scope=record["scope"],
        task=task_from_json(record["task"]),
        work=from_json(record["work"], Work),
        lease=from_json(record["lease"], Lease),
    )
