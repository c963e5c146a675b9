"""The context a task's job runs with: the creating request, detached from its stream.

A task outlives the ``tools/call`` that created it, so its job cannot use
that request's stream: :class:`WorkerContext` keeps what the request
declared and writes to the task instead (:meth:`WorkerContext.ask` records
input requests, :meth:`WorkerContext.set_status_message` the status
message), through the :class:`~presa_trio.tasks.writes.StoreWriter`, under
the worker's lease.

Spec: SEP-2663 §Task Update Requests, §Task Status Notifications.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

from presa_trio.server.context import RequestContext
from presa_trio.tasks.worker import Worker
from presa_trio.tasks.writes import StoreWriter
from presa_trio.wire.envelope import compact_encoder
from presa_trio.wire.errors import MissingRequiredClientCapability
from presa_trio.wire.meta import ClientCapabilities, RequestMeta
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import Answers, InputRequest

#: What a task runs: given its detached context, the request's final result as
#: a JSON object, or a raised error; nothing in it is tied to ``tools/call``
#: (SEP-2663 §Task Creation).
Job = Callable[["WorkerContext"], Awaitable[JSONObject]]


@attrs.define(eq=False)
class WorkerContext(RequestContext):
    """The context a task's worker runs with: the creating request, detached.

    It keeps what the request declared (version, capabilities, the verified
    multi round-trip answers) and loses its stream: ``send`` drops every
    message, and the progress token and log level are gone, so a task never
    sends progress or log notifications (SEP-2663 §Task Status Notifications;
    spec-notes §41). Its ``nursery`` is the task's own.
    """

    writer: StoreWriter = attrs.field(kw_only=True, repr=False)
    worker: Worker = attrs.field(kw_only=True)

    async def ask(self, requests: Mapping[str, InputRequest]) -> Answers:
        """The requests go on the task (``input_required``); the answers once all have come.

        A request the creating request's capabilities do not allow is
        -32021, raised before anything is recorded (mrtr §Server Requirements;
        spec-notes §30).
        """
        for request in requests.values():
            if not request.allowed_by(self.capabilities):
                raise MissingRequiredClientCapability.for_capability(request.capability)
        return await self.writer.wait_inputs(self.worker, requests)

    async def set_status_message(self, message: str) -> None:
        """The task's ``statusMessage`` until its status changes; the status stays.

        A store write under the worker's lease, announced like any other, so
        ``tasks/get`` and the listen streams see it (SEP-2663 §Tasks).
        """
        await super().set_status_message(message)
        await self.writer.report(self.worker, message)

    async def emit(self, event_type: str, payload: Mapping[str, Any]) -> None:
        """Append a tool's event to the task's log, with task event streams on (SEP-2694)."""
        await self.writer.emit(self.worker, event_type, payload)


async def ask(ctx: RequestContext, requests: Mapping[str, InputRequest]) -> Answers:
    """``ctx.ask(requests)``, spelt as a function: ``answers = await ask(ctx, {...})``.

    The request's context decides (:meth:`RequestContext.ask
    <presa_trio.server.context.RequestContext.ask>` on a plain call,
    :meth:`WorkerContext.ask` in a task).
    """
    return await ctx.ask(requests)


#: Most distinct request declarations kept for workers to share.
DECLARATIONS_KEPT = 64


def detached_meta(meta: RequestMeta) -> RequestMeta:
    """What a task keeps of its creating request's ``_meta``: the declaration, shared.

    A worker has no stream, so it drops the progress token and the log
    level (SEP-2663 §Task Status Notifications; spec-notes §41). What is
    left, the protocol version, the declared capabilities and the client
    info (basic/index §_meta), is the same on nearly every request a
    client sends, so every task created with the same declaration shares
    one copy instead of keeping its request's decoded objects: a parked
    task holds only what is its own. The copy is rebuilt from the canonical
    JSON, so no request holds it, and at most :data:`DECLARATIONS_KEPT` are
    kept, so a client that varies its declaration cannot grow the memory.
    """
    declared = [meta.protocol_version, meta.capabilities.raw, meta.client_info]
    return _declaration(_canonical_json(declared))


#: Compact JSON with sorted keys, the encoder built once (json.dumps builds one per call).
_canonical_json = compact_encoder(sort_keys=True)


@functools.lru_cache(maxsize=DECLARATIONS_KEPT)
def _declaration(canonical: str) -> RequestMeta:
    version, capabilities, client_info = json.loads(canonical)
    return RequestMeta(version, ClientCapabilities(capabilities), client_info)


async def drop(message: dict[str, Any]) -> None:
    """A worker's ``send``: there is no stream to write to."""
