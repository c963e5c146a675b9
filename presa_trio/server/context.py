"""The per-request context a handler receives.

There is no session: everything a handler may know about its caller arrives
with the request — the protocol version, the client's capabilities, its log
level and progress token (basic/index §_meta) — and, on a multi round-trip retry, the
client's input responses and the handler's own verified state (mrtr).

Notifications a handler sends go only to the stream of this request
(streamable-http §Receiving Messages).

A tool call can have a nursery (:attr:`RequestContext.nursery`): child
tasks a tool starts there run beside it, and the call ends only once they
all have. In a task it is the task's own nursery, so the children are
cancelled with the task. On a plain call it is opened around the handler
(:meth:`RequestContext.supervising`) for a tool registered with
``nursery=True``, and for no other: Trio cannot open a nursery later around
a function that is already running (a nursery is a ``with`` block, and no
task may outlive it), and opening one on every call costs a cancel scope and
a schedule point that a tool starting no child does not need. So a tool
says at registration that it starts children, and reads the same on both
paths.

A handler sees the server through :class:`ServerView`: what it may use
(who the server is, its clock and state sealer, change announcements for
``subscriptions/listen`` streams), not the registration API.
:class:`~presa_trio.server.Server` has all of it, so it is its own view.
This module imports nothing else of ``presa_trio.server``: the context is the
bottom of its import graph, and no import cycle runs through it (typed
elicitation, :meth:`RequestContext.elicit`, is pure and lives in
:mod:`presa_trio.wire.elicitation`).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol, TypeVar, overload

import attrs
import trio
import trio.lowlevel

from presa_trio.auth.principal import OPEN_ACCESS, Access, Principal
from presa_trio.wire import mrtr
from presa_trio.wire.convert import to_wire
from presa_trio.wire.elicitation import Elicited, Form, class_form, schema_form
from presa_trio.wire.envelope import RequestId, notification
from presa_trio.wire.errors import MissingRequiredClientCapability
from presa_trio.wire.meta import LOG_LEVELS, ClientCapabilities, RequestMeta
from presa_trio.wire.models import LogMessage
from presa_trio.wire.request_state import StateSealer
from presa_trio.wire.tasks import PARTIAL_CONTENT_EVENT
from presa_trio.wire.well_formed import is_number

#: Delivers one JSON-RPC message on the stream that answers this request.
Send = Callable[[dict[str, Any]], Awaitable[None]]
T = TypeVar("T")


@attrs.frozen
class Connection:
    """The transport connection a request came on, as its edge names it.

    Two requests came on one connection exactly when their ``Connection``
    values are equal. :attr:`peer` is the other end as far as the transport
    can tell: over HTTP the client's IP address (a client that opens more
    connections keeps it; clients behind one proxy share the proxy's), over
    stdio the pipe. Without authorization, limits per client count by it
    (``tasks/stream``: SEP-2694 §Security Implications; spec-notes §50).
    """

    # Who is at the other end: ``("http", address)``, or the stdio edge itself.
    peer: Hashable
    # Which of the peer's connections: the client's port over HTTP; None over stdio.
    port: int | None = None


class EmitFailed(Exception):
    """``ctx.emit`` could not confirm that the task's log holds the event.

    Raised to the tool, which may catch it and decide: emit again (the
    event may then be in the log twice, under two ``seq``), go on without
    it, or let it fail the task. ``maybe_stored`` says which way it
    failed: the store was unavailable past the store timeout, so its answer
    was lost and the event may be in the log or land once the store is
    back (True); or the store refused the event or failed otherwise, and
    it is not in the log (False). Never raised for a task that has ended:
    its log is closed, and the emit does nothing (spec-notes §50).
    """

    def __init__(self, message: str, *, maybe_stored: bool) -> None:
        super().__init__(message)
        self.maybe_stored = maybe_stored


class ServerView(Protocol):
    """What a handler may use of the server that serves its request."""

    @property
    def name(self) -> str:
        """``serverInfo.name``."""

    @property
    def version(self) -> str:
        """``serverInfo.version``."""

    @property
    def sealer(self) -> StateSealer:
        """Seals and opens ``requestState`` (basic/patterns/mrtr)."""

    @property
    def clock(self) -> Callable[[], float]:
        """Wall-clock seconds, for ``requestState`` expiry."""

    def notify_tools_list_changed(self) -> None:
        """Tell listen streams that asked, in every process on the store: the tools changed."""

    def notify_prompts_list_changed(self) -> None:
        """Tell listen streams that asked, in every process on the store: the prompts changed."""

    def notify_resources_list_changed(self) -> None:
        """Tell listen streams that asked, in every process on the store: the resources changed."""

    def notify_resource_updated(self, uri: str) -> None:
        """Tell listen streams subscribed to ``uri``, in every process on the store: it changed."""


@attrs.define(eq=False)
class RequestContext:
    """What one request knows about its caller, and how it talks back."""

    # The request's id and method, as received.
    request_id: RequestId
    method: str
    # The validated ``_meta`` of this request; the only source of capabilities.
    meta: RequestMeta
    # The server serving the request, as far as a handler may see it.
    server: ServerView = attrs.field(repr=False)
    # Where request-scoped notifications go; for a detached worker it drops them.
    send: Send = attrs.field(repr=False)
    # Raw ``inputResponses`` by key (validated as objects), ``{}`` on a first round.
    input_responses: dict[str, Any] = attrs.field(factory=dict)
    # The handler state sealed into ``requestState`` on the previous round.
    state: Any = None
    # The caller, verified from its access token; ``None`` when authorization is off.
    principal: Principal | None = None
    # The scopes the request needed, and when its token lapses (authorization).
    access: Access = OPEN_ACCESS
    # The transport connection the request came on; ``None`` when the edge names
    # none (then the request is a connection, and a peer, of its own).
    connection: Connection | None = None
    # The last progress value sent: progress must increase (progress §Behavior Requirements).
    _last_progress: float | None = None
    # Where the call's child tasks run, while a tool runs (see :attr:`nursery`).
    _nursery: trio.Nursery | None = attrs.field(default=None, repr=False)
    # How many ``elicit`` calls this run of the handler made: the next key's number.
    _elicited: int = attrs.field(default=0, repr=False)
    # The keys ``ask`` was called with in this run of the handler (shared empty default:
    # most requests never ask).
    _asked: frozenset[str] = attrs.field(default=frozenset(), repr=False)

    @property
    def capabilities(self) -> ClientCapabilities:
        return self.meta.capabilities

    def require_capability(self, name: str) -> None:
        """-32021 unless this request declared the top-level capability ``name``."""
        if not self.capabilities.has(name):
            raise MissingRequiredClientCapability.for_capability(name)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if, and only if, the request asked for it.

        Spec: basic/patterns/progress §Progress Flow, §Behavior Requirements — only
        with ``_meta.progressToken``, echoing it, with a value that increases every time;
        schema ``$defs.ProgressNotificationParams`` — numbers, and a string message.
        Anything else is the caller's bug, a ``TypeError``, with or without a token.
        """
        if not is_number(progress) or not (total is None or is_number(total)):
            raise TypeError(f"progress and total must be numbers, not {progress!r}, {total!r}")
        if not (message is None or isinstance(message, str)):
            raise TypeError(f"a progress message must be a string, not {message!r}")
        token = self.meta.progress_token
        if token is None:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            raise ValueError("progress must increase with each notification")
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.send(notification("notifications/progress", params))

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if the request's ``logLevel`` admits ``level``.

        Spec: server/utilities/logging §Per-request log level — without ``logLevel``, nothing;
        schema ``$defs.LoggingMessageNotificationParams`` — ``logger`` a string.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        if not (logger is None or isinstance(logger, str)):
            raise TypeError(f"a logger's name must be a string, not {logger!r}")
        if not self.meta.logs_at(level):
            return
        message = LogMessage(level, data, logger)
        await self.send(notification("notifications/message", to_wire(message)))

    # --- child tasks and status --------------------------------------------------

    @property
    def nursery(self) -> trio.Nursery:
        """Where a tool starts child tasks; the call ends once they have all ended.

        A child's exception cancels the tool and its other children, and the
        call answers with :func:`~presa_trio.server.tools.error_for` of it.
        In a task this is the task's nursery: ``tasks/cancel``, the TTL,
        lease loss and shutdown cancel the children with the task. On a
        plain call only a tool registered with ``nursery=True`` has one.
        """
        if self._nursery is None:
            raise RuntimeError(
                "only a running tool call has a nursery; on a plain call, only a tool "
                "registered with nursery=True"
            )
        return self._nursery

    @asynccontextmanager
    async def supervising(self) -> AsyncIterator[None]:
        """Give the call a nursery for the block, unless it has one (a task's)."""
        if self._nursery is not None:
            yield
            return
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                yield
            finally:
                self._nursery = None

    async def set_status_message(self, message: str) -> None:
        """Describe where the work is (e.g. "step 2 of 5"); only a task shows it.

        In a task it becomes the task's ``statusMessage`` until its status
        changes. A plain call has no status to show it in, and progress
        needs a number the message does not give, so here it does nothing
        (spec-notes §46). A message that is not a non-empty string is a
        ``ValueError`` on both paths.
        """
        if not (isinstance(message, str) and message):
            raise ValueError("a status message must be a non-empty string")

    # --- asking the client (mrtr; SEP-2663 §Task Update Requests) ---------------

    async def ask(self, requests: Mapping[str, mrtr.InputRequest]) -> mrtr.Answers:
        """Ask the client for input; await the answers by key, checked and typed (``Answers``).

        One call serves both ways a tool may run, and the tool reads the
        same (``answers = await ctx.ask({...})``):

        - on a plain request (here), it returns the answers once the client
          has given them all (multi round-trip retries); until then it
          raises :class:`~presa_trio.wire.mrtr.InputPending`, which the
          tools boundary answers as ``input_required`` for the missing keys,
          carrying the answers already given in ``requestState``; a prompt
          or a resource may ask the same way (``prompts/get`` and
          ``resources/read`` answer it alike);
        - in a task, the worker's context overrides it
          (:meth:`presa_trio.tasks.context.WorkerContext.ask`): the requests
          go on the task and the await returns once ``tasks/update`` has
          answered every key.

        Each answer is checked against the kind of its request (-32602 if
        it is not, say, a valid ``ElicitResult``). A request the creating
        request's capabilities do not allow is -32021 on both paths: here
        where the round closes, in a task before anything is recorded
        (2026-07-28 basic/patterns/mrtr §Server Requirements;
        spec-notes §30).

        A key asked already in this run of the handler is the tool's bug, a
        ``ValueError`` (so a generic -32603): the answer under it is the
        first question's, never the second's, and a task refuses the same
        (keys are unique within the request, mrtr §Server Requirements
        (Basic Workflow) 2; SEP-2663 §Task Update Requests).

        It checkpoints, as every ``await`` of the runtime does, even when
        the answers are already at hand.
        """
        self.note_asked(requests)
        answers = mrtr.answers_for(requests, self.input_responses, self.state)
        await trio.lowlevel.checkpoint()
        return answers

    def note_asked(self, requests: Mapping[str, mrtr.InputRequest]) -> None:
        """Note the keys of ``requests`` as asked in this run of the handler; a
        ``ValueError`` if one was asked already (see :meth:`ask`)."""
        if again := sorted(self._asked.intersection(requests)):
            raise ValueError(f"input keys asked already in this call: {again}")
        self._asked = self._asked.union(requests)

    @overload
    async def elicit(
        self, message: str, form: type[T], *, key: str | None = None
    ) -> Elicited[T]: ...

    @overload
    async def elicit(
        self, message: str, form: dict[str, Any], *, key: str | None = None
    ) -> Elicited[dict[str, Any]]: ...

    async def elicit(
        self, message: str, form: type[Any] | dict[str, Any], *, key: str | None = None
    ) -> Elicited[Any]:
        """Ask the user to fill in ``form``; the answer typed, or declined, or cancelled.

        ``form`` is an attrs class or a dataclass (the answer's ``data`` is
        an instance of it), or a JSON Schema dict (``data`` is the content).
        Either must be a form the spec allows: one outside it is refused
        here, a :class:`~presa_trio.wire.hints.SignatureError` naming the
        field (:mod:`presa_trio.wire.elicitation`)::

            answer = await ctx.elicit(f"Delete {path}?", Confirm)
            if answer.action != "accept" or not answer.data.sure:
                return "kept"

        It is an :meth:`ask` of one form-mode ``elicitation/create``, so it
        works on a plain call (multi round-trip) and in a task alike. The
        input key is ``key``, else ``elicit-1``, ``elicit-2``… by the order
        of the calls in this run of the handler: a plain call runs the
        handler again from the top on each round, so the same question
        gets the same key as long as the tool asks in the same order. Child
        tasks asking at once have no order: give each its own ``key``.

        Spec: client/elicitation §Form Mode Elicitation Requests, §Response
        Actions; basic/patterns/mrtr §InputRequests.
        """
        asked: Form[Any] = schema_form(form) if isinstance(form, dict) else class_form(form)
        if key is None:
            self._elicited += 1
            key = f"elicit-{self._elicited}"
        answers = await self.ask({key: mrtr.Elicitation(message, asked.schema)})
        return asked.answer(key, answers.elicitation(key))

    # --- task events (SEP-2694, with --task-events) ----------------------------

    async def emit(self, event_type: str, payload: Mapping[str, Any]) -> None:
        """Append an event to the task's event stream; only a task has one.

        In a task run by a server with task event streams on
        (``--task-events``, SEP-2694), the event gets the task's next
        ``seq`` and goes to every ``tasks/stream`` of the task; its type
        needs a vendor prefix (``com.example.step``, else ``ValueError``) and
        its payload must be a JSON object (else ``TypeError``) within the
        size limit (:mod:`presa_trio.tasks.events`). A plain call has no
        task to stream, and there, as with the option off, it does nothing.

        An event is stored or the tool is told: a store that is unavailable
        is waited for, within the store timeout (``--store-timeout``), and
        then, as for an event the store refuses, :class:`EmitFailed` is
        raised here. Once the task has ended its log is closed, and an emit
        does nothing.
        """

    async def emit_partial(self, content: Iterable[Mapping[str, Any]]) -> None:
        """Emit partial output as content blocks: ``presa_trio.content.partial``.

        The payload is ``{"content": [...]}``, SEP-2679's shape carried as
        a prefixed task event (SEP-2694 §Relationship to SEP-2679).
        """
        await self.emit(PARTIAL_CONTENT_EVENT, {"content": [dict(block) for block in content]})

    # --- multi round-trip answers (mrtr §InputResponses) -----------------------

    def elicitation(
        self, key: str, mode: mrtr.ElicitationMode = "form"
    ) -> mrtr.ElicitResult | None:
        """The client's answer to the elicitation issued under ``key``, if any.

        It is a valid ``ElicitResult`` to a request of ``mode`` (-32602
        otherwise: an accepted form carries content, an accepted
        :class:`~presa_trio.wire.mrtr.UrlElicitation` none), its content as
        the client sent it: this round does not know the form it answers, so
        the content is not checked against it, as :meth:`ask` and
        :meth:`elicit` check it (client/elicitation §Form Mode Security).
        """
        raw = self.input_responses.get(key)
        if raw is None:
            return None
        return mrtr.read_answer(functools.partial(mrtr.read_elicit_result, mode=mode), key, raw)

    def sampling(self, key: str) -> mrtr.SamplingResult | None:
        """The client's model answer to the sampling request under ``key``, if any."""
        raw = self.input_responses.get(key)
        return None if raw is None else mrtr.read_answer(mrtr.read_sampling_result, key, raw)

    def roots(self, key: str) -> list[dict[str, Any]] | None:
        """The roots the client listed under ``key``, if any."""
        raw = self.input_responses.get(key)
        return None if raw is None else mrtr.read_answer(mrtr.read_roots, key, raw)
