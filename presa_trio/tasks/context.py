"""The context a task's job runs with: the creating request, detached from its stream.

A task outlives the ``tools/call`` that created it, so its job cannot use
that request's stream: :class:`WorkerContext` keeps what the request
declared and writes to the task instead (:meth:`WorkerContext.ask` records
input requests, then waits on the worker's Events for their answers;
:meth:`WorkerContext.set_status_message` the status message), through the
:class:`~presa_trio.tasks.writes.StoreWriter`, under the worker's lease.

Spec: SEP-2663 §Task Update Requests, §Task Status Notifications.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import trio

from presa_trio.server.context import RequestContext
from presa_trio.server.faults import report_fault
from presa_trio.tasks.worker import Worker, asking, is_json_object, withdrawing
from presa_trio.tasks.writes import WRITE_GRACE, StoreWriter
from presa_trio.wire.envelope import compact_encoder
from presa_trio.wire.meta import ClientCapabilities, RequestMeta
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import Answers, InputRequest, elicitation_modes, require_allowed

log = logging.getLogger(__name__)

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
        """Record ``requests`` on the task, then wait on one Event per key until all are answered.

        A request the creating request's capabilities do not allow is
        -32021, raised before anything is recorded (mrtr §Server
        Requirements; spec-notes §30), and one JSON cannot hold is the
        tool's bug, a generic -32603, as on the plain path: recorded, it
        would make every ``tasks/get`` of the task fail. An ask of no
        requests returns no answers at once, as the plain path's does, and
        writes nothing. The requests are recorded in one write (SEP-2663
        §Task Update Requests), under the worker's lease; then this waits on
        a ``trio.Event`` for each key (:meth:`Worker.expect`), and an
        announced change of the task sets the Events of the keys it
        answered: a partial update is a partial wake-up.

        The wait is this frame's own: a parked task keeps every frame from
        the tool's ``await`` down to the Event's, so there is no other in
        between, and this one keeps the keys, not the requests (the task
        holds those).

        If the wait ends early by the tool's own doing (its timeout), the
        keys still outstanding are withdrawn, so the task never shows
        requests nobody waits for; so are they when that cancel reaches the
        write of the requests, which may have committed all the same. The
        withdrawal is shielded, bounded, and ended by a stop
        (:meth:`Worker.shielded`). A wait ended by the task's own stop
        (cancel, TTL, lease loss, shutdown) writes nothing:
        the task's state is not the worker's to change then. While it
        waits, the task counts as parked
        (:attr:`~presa_trio.tasks.writes.StoreWriter.on_load`).
        """
        # A key asked already in this run is the job's bug, as on the plain path; a
        # re-run's store write would not refuse it (it asks again what its first run
        # asked), and two waits under one key would share one Event slot.
        self.note_asked(requests)
        require_allowed(requests, self.capabilities)
        require_writable(requests)
        if not requests:  # nothing to wait for: no answers, as on the plain path
            await trio.sleep(0)
            return Answers({})
        worker = self.worker
        keys = tuple(requests)
        modes = elicitation_modes(requests)
        try:
            await self.writer.write(worker, asking(requests, rerun=worker.rerun))
        except trio.Cancelled:
            # A store may commit a write and still raise the cancel that reached
            # its call (PostgreSQL's caller does not learn which): the requests
            # may be on the task, and nobody will wait for them.
            await self._withdraw(keys)
            raise
        del requests
        # The checkpoint comes only where expect registered nothing: from a key
        # registered to the try below there is none, so no cancel leaves a key
        # behind, nor the task counted as parked.
        if not worker.expect(keys):
            await trio.sleep(0)  # every key answered already: still a checkpoint
        answered = False
        self.writer.on_load("parked", 1)
        try:
            # One Event at a time, found afresh after each: nothing iterates across a wait.
            while (event := worker.awaited(keys)) is not None:
                await event.wait()
            answered = True
        finally:
            self.writer.on_load("parked", -1)
            worker.forget(keys)
            if not answered:
                await self._withdraw(keys)
        return Answers(worker.answers(keys), modes)

    async def _withdraw(self, keys: tuple[str, ...]) -> None:
        """Withdraw ``keys`` nobody waits for any more, unless the task was stopped.

        Shielded from the cancel that ended the wait, bounded, and ended by
        a stop (:meth:`Worker.shielded`); a withdrawal of keys not
        outstanding changes nothing.
        """
        worker = self.worker
        if not worker.stopped():
            with worker.shielded(WRITE_GRACE):
                await self.writer.write(worker, withdrawing(keys))

    async def set_status_message(self, message: str) -> None:
        """The task's ``statusMessage`` until its status changes; the status stays.

        A store write under the worker's lease, announced like any other, so
        ``tasks/get`` and the listen streams see it (SEP-2663 §Tasks).
        """
        await super().set_status_message(message)
        await self.writer.report(self.worker, message)

    async def emit(self, event_type: str, payload: Mapping[str, Any]) -> None:
        """Append a tool's event to the task's log, with task event streams on (SEP-2694).

        Stored, or :class:`~presa_trio.server.context.EmitFailed` once the
        store has been unavailable for the store timeout, or refused it
        (:meth:`~presa_trio.tasks.writes.StoreWriter.emit`).
        """
        await self.writer.emit(self.worker, event_type, payload)


def require_writable(requests: Mapping[str, InputRequest]) -> None:
    """-32603, the detail logged, unless every request's wire form is strict JSON."""
    for key, request in requests.items():
        if not is_json_object(request.to_wire()):
            raise report_fault(log, "input request %r cannot be written as JSON", key)


async def ask(ctx: RequestContext, requests: Mapping[str, InputRequest]) -> Answers:
    """``ctx.ask(requests)``, spelt as a function: ``answers = await ask(ctx, {...})``.

    The request's context decides (:meth:`RequestContext.ask
    <presa_trio.server.context.RequestContext.ask>` on a plain call,
    :meth:`WorkerContext.ask` in a task).
    """
    return await ctx.ask(requests)


#: Most distinct request declarations kept for workers to share.
DECLARATIONS_KEPT = 64
#: Longest declaration shared, as canonical JSON, in characters: a client's is a few
#: hundred; a longer one (a client's own keys make it so) is kept by its task alone,
#: so what the cache holds stays bounded in bytes, not only in entries.
LONGEST_SHARED_DECLARATION = 16 * 1024


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
    kept, each at most :data:`LONGEST_SHARED_DECLARATION` long, so a client
    that varies its declaration cannot grow the memory: a longer one is kept
    as the request decoded it, unshared, and goes with its task.

    A declaration nested within a few levels of the body parser's depth
    limit cannot be written out and read back from here (a
    ``RecursionError``): it is kept unshared too, so the call is answered as
    any other (spec-notes §31), never as a fault.
    """
    declared = [meta.protocol_version, meta.capabilities.raw, meta.client_info]
    try:
        canonical = _canonical_json(declared)
        if len(canonical) <= LONGEST_SHARED_DECLARATION:
            return _declaration(canonical)
    except RecursionError:
        pass
    return RequestMeta(meta.protocol_version, meta.capabilities, meta.client_info)


#: Compact JSON with sorted keys, the encoder built once (json.dumps builds one per call).
_canonical_json = compact_encoder(sort_keys=True)


@functools.lru_cache(maxsize=DECLARATIONS_KEPT)
def _declaration(canonical: str) -> RequestMeta:
    version, capabilities, client_info = json.loads(canonical)
    return RequestMeta(version, ClientCapabilities(capabilities), client_info)


async def drop(message: dict[str, Any]) -> None:
    """A worker's ``send``: there is no stream to write to."""
