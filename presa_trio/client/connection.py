"""Requests as a 2026-07-28 client sends them: ``_meta`` on each, the mirrored headers, ids.

There is no session: every request carries the protocol version, the
client's capabilities and its name in ``params._meta`` (basic/index §_meta),
and over HTTP the headers that mirror the body
(:func:`presa_trio.wire.headers.request_headers`). The capabilities are the
three a person at a terminal can answer (elicitation in form mode, sampling,
roots) and, unless ``--no-tasks``, the Tasks extension (SEP-2663). With
``--log-level``, each request also carries ``logLevel``: 2026-07-28 has no
``logging/setLevel``, a request asks for its own logs (server/utilities/logging
§Per-request log level). Every notification a request's stream brings is
passed to :attr:`Connection.notify`, and every message sent or received to
:attr:`Connection.watch` (``-v``).

A server of another era is told apart as the spec says (streamable-http
§Backward Compatibility, basic/versioning §Backward Compatibility with
Initialization-Based Versions): when the first answer is no modern JSON-RPC
message, or an error such a server may give (:func:`may_be_legacy`: not
keyed to one code, since such servers answer a request before
``initialize`` with one of their choosing), and ``server/discover`` has no
result either (one that has is
modern, even if it also serves the initialize era), an ``initialize``
probe asks which version it speaks, so that the one-line error can say so.
Over stdio, where no HTTP status tells the era, the first request is always
``server/discover`` (:meth:`Connection.open`): a server of the ``initialize``
era that would serve a ``tools/call`` without its handshake is found before
it gets one (basic/versioning §Compatibility Matrix: SHOULD;
basic/transports/stdio §Backward Compatibility).

Spec: 2026-07-28 basic/index §_meta, §Statelessness; server/utilities/pagination.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from typing import Any, TypeVar

import attrs
import trio

from presa_trio import __version__
from presa_trio.client.answers import DECLARED
from presa_trio.client.errors import ProtocolFailure, RequestError, Unauthorized
from presa_trio.client.transport import (
    NotModern,
    Replies,
    Transport,
    cancelled_request,
    is_response,
)
from presa_trio.wire.envelope import is_request_id
from presa_trio.wire.errors import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    RESERVED_CODES,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from presa_trio.wire.headers import CORE_NAME_PARAMS, request_headers
from presa_trio.wire.meta import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    PROTOCOL_VERSION,
)
from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import EVENTS_GONE, TASK_AUGMENTED, TASK_NAME_PARAMS, TASKS_EXTENSION

CLIENT_INFO: JSONObject = {"name": "presa-trio", "version": __version__}
#: ``Mcp-Name`` mirrors: the core's and the Tasks extension's, as the server reads them.
NAME_PARAMS: Mapping[str, str] = {**CORE_NAME_PARAMS, **TASK_NAME_PARAMS}
#: The version an ``initialize`` probe offers a server of the previous era.
LEGACY_PROBE_VERSION = "2025-11-25"
#: The request that asks a server its era before any other, over stdio.
DISCOVER = "server/discover"
#: Errors only a server of this era sends: one of them says the server is modern (the
#: core's, and SEP-2694's ``events_gone``). A tuple, compared by equality: the code an
#: error carries may be any JSON, a list among them, which no set can hold.
MODERN_ERRORS = (
    HEADER_MISMATCH,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    EVENTS_GONE,
)
#: JSON-RPC's range for errors a server defines itself, the reserved range's last
#: hundred codes (-32099…-32000): a server of the initialize era answers a request
#: before ``initialize`` with one of its choosing (the TypeScript SDK's -32000), or
#: with -32600 or -32601.
SERVER_DEFINED_ERRORS = range(RESERVED_CODES.stop - 100, RESERVED_CODES.stop)

Notify = Callable[[JSONObject], None]
#: Handed each notification of one request's stream, awaited before the next is read.
Deliver = Callable[[JSONObject], Awaitable[None]]
#: Told of each message as it is sent (True) or received (False).
Watch = Callable[[bool, JSONObject], None]
#: What the client does on a 401: given the challenge, get a token the transport then sends.
Authorize = Callable[[dict[str, str]], Awaitable[None]]
#: Sign-ins (or step-ups) one request may cause before its 401 is final.
MAX_SIGN_INS = 2
T = TypeVar("T")


def may_be_legacy(failure: ProtocolFailure) -> bool:
    """Whether ``failure``, the first answer, may come from a server of the initialize
    era, whose answer to ``server/discover`` then tells (basic/transports/stdio
    §Backward Compatibility: not keyed to one code; streamable-http §Backward
    Compatibility: a body that is no recognized modern error).

    An error every era gives in its own meaning (-32602 invalid params, -32603 a
    failure, -32700) answers the request, not its era, unless the request was
    ``server/discover`` itself, which a modern server serves.
    """
    if isinstance(failure, NotModern):
        return True
    if not isinstance(failure, RequestError) or failure.code in MODERN_ERRORS:
        return False
    if failure.method == DISCOVER:
        return True
    code = failure.code
    if not isinstance(code, int) or isinstance(code, bool):
        return False
    return code in (INVALID_REQUEST, METHOD_NOT_FOUND) or code in SERVER_DEFINED_ERRORS


def ignore(message: JSONObject) -> None:
    """A notification nobody asked to see."""


def unwatched(sent: bool, message: JSONObject) -> None:
    """Messages nobody watches (no ``-v``)."""


@attrs.define(eq=False)
class _WatchedReplies:
    """An exchange's replies, each shown to the watcher as it is read."""

    replies: Replies
    watch: Watch

    async def next(self) -> JSONObject:
        message = await self.replies.next()
        self.watch(False, message)
        return message


@attrs.define(eq=False)
class Connection:
    """One endpoint, and what this client declares on each request to it."""

    transport: Transport
    tasks: bool = True
    #: Seconds a plain request may take (a task, or a listen, is not bound by it).
    timeout_s: float = 30.0
    #: Called on a 401 to sign in; None leaves the 401 final.
    authorize: Authorize | None = None
    #: The ``logLevel`` each request asks for (``--log-level``); None asks for no logs.
    log_level: str | None = None
    #: Where a request's notifications go when its caller does not take them.
    notify: Notify = ignore
    #: Shown every message sent and received (``-v``).
    watch: Watch = unwatched
    _last_id: int = 0
    _era_known: bool = False

    @property
    def where(self) -> str:
        return self.transport.where

    @property
    def capabilities(self) -> JSONObject:
        declared: JSONObject = dict(DECLARED)
        if self.tasks:
            declared["extensions"] = {TASKS_EXTENSION: {}}
        return declared

    def message(
        self, method: str, params: Mapping[str, Any], *, progress: bool = False
    ) -> JSONObject:
        """The JSON-RPC request, with a fresh id and the request's own ``_meta``.

        With ``progress``, the id is also its ``progressToken``
        (basic/patterns/progress), so progress finds its request on stdio too.
        A ``_meta`` in ``params`` (``request METHOD JSON``) is kept, its keys
        over the client's own.
        """
        self._last_id += 1
        meta: JSONObject = {
            META_PROTOCOL_VERSION: PROTOCOL_VERSION,
            META_CLIENT_CAPABILITIES: self.capabilities,
            META_CLIENT_INFO: CLIENT_INFO,
        }
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        if progress:
            meta["progressToken"] = self._last_id
        given = params.get("_meta")
        body = {**params, "_meta": {**meta, **(given if isinstance(given, dict) else {})}}
        return {"jsonrpc": "2.0", "id": self._last_id, "method": method, "params": body}

    @asynccontextmanager
    async def open(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        param_headers: Mapping[str, tuple[str, ...]] | None = None,
        progress: bool = False,
        sign_in: bool = True,
    ) -> AsyncIterator[tuple[JSONObject, Replies]]:
        """Send a request and hold its exchange open: for a stream such as a listen.

        A 401 is met as :meth:`signed_in` says, unless ``sign_in`` is False:
        then the caller does that, outside a deadline of its own. Over a
        transport that :attr:`~presa_trio.client.transport.Transport.probes_era`,
        ``server/discover`` goes first, once: its failure is this request's.
        """
        if self.transport.probes_era and not self._era_known and method != DISCOVER:
            await self.request(DISCOVER, {})
        try:
            async with AsyncExitStack() as stack:

                async def send() -> tuple[JSONObject, Replies]:
                    message = self.message(method, params, progress=progress)
                    headers = request_headers(message, NAME_PARAMS, param_headers)
                    self.watch(True, message)
                    exchange = self.transport.exchange(message, headers)
                    return message, await stack.enter_async_context(exchange)

                message, replies = await (self.signed_in(send) if sign_in else send())
                yield message, _WatchedReplies(replies, self.watch)
        except NotModern as failure:
            raise await self.explain(failure) from None

    async def first_reply(self, method: str, replies: Replies) -> JSONObject:
        """The first message of an exchange held open, within :attr:`timeout_s`: a
        stream's acknowledgement is the answer to its request, and the server MUST send
        it first (basic/patterns/subscriptions §Acknowledgment)."""
        with trio.move_on_after(self.timeout_s):
            return await replies.next()
        raise ProtocolFailure(f"{self.where} did not answer {method} within {self.timeout_s:g} s")

    async def signed_in(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()``; on a 401, :attr:`authorize` (sign-in, refresh or step-up) and
        ``attempt()`` again, at most :data:`MAX_SIGN_INS` times (basic/authorization
        §Step-Up Authorization Flow: "no more than a few times")."""
        for sign_ins in itertools.count():
            try:
                return await attempt()
            except Unauthorized as failure:
                if self.authorize is None or sign_ins >= MAX_SIGN_INS:
                    raise await failure.named() from None
                await self.authorize(failure.challenge)
        raise AssertionError("unreachable")

    async def request(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        param_headers: Mapping[str, tuple[str, ...]] | None = None,
        timeout_s: float | None = None,
        progress: bool = False,
        on_notification: Deliver | None = None,
    ) -> JSONObject:
        """Send ``method`` and return its result; an error raises :class:`RequestError`.

        A server that answers ``UnsupportedProtocolVersionError`` yet lists this
        client's version among those it supports is asked once more
        (basic/versioning: the client retries with a mutually supported version).
        A 401 is met as :meth:`signed_in` says, the sign-in outside the
        request's deadline (a person may be at the browser).
        """
        version_retried = False
        once = partial(
            self.request_once,
            method,
            params,
            param_headers=param_headers,
            timeout_s=timeout_s,
            progress=progress,
            on_notification=on_notification,
        )
        while True:
            try:
                return await self.signed_in(once)
            except RequestError as error:
                data = error.data if isinstance(error.data, dict) else {}
                supported = data.get("supported")
                if (
                    version_retried
                    or error.code != UNSUPPORTED_PROTOCOL_VERSION
                    or not isinstance(supported, list)
                    or PROTOCOL_VERSION not in supported
                ):
                    raise
                version_retried = True

    async def request_once(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        param_headers: Mapping[str, tuple[str, ...]] | None = None,
        timeout_s: float | None = None,
        progress: bool = False,
        on_notification: Deliver | None = None,
    ) -> JSONObject:
        """One exchange of ``method``: its result, or :class:`RequestError`.

        A task in answer to a request no task may answer is the server's
        mistake, :class:`ProtocolFailure` (SEP-2663 §Capability Negotiation:
        an invalid response), though the client declares the extension on
        every request. The task methods answer with a task anyway: one
        marked ``"task"`` there, as the SEP's own §Task Execution Errors
        examples are (spec-notes §21), is read as the task it is.

        The notifications on its stream go to ``on_notification`` when given
        (a ``tasks/stream``'s events), awaited one by one, so a slow reader
        reads the stream no faster than it takes them; else to :attr:`notify`.
        """
        limit = self.timeout_s if timeout_s is None else timeout_s
        with trio.move_on_after(limit) as waited:
            async with self.open(
                method, params, param_headers=param_headers, progress=progress, sign_in=False
            ) as (
                message,
                replies,
            ):
                while not is_response(reply := await replies.next()):
                    if cancelled_request(reply) == message["id"]:
                        raise ProtocolFailure(
                            f"{self.where} cancelled {method}, which a server may do "
                            "only to a subscriptions/listen"
                        )
                    if on_notification is None:
                        self.notify(reply)
                    else:
                        await on_notification(reply)
        if waited.cancelled_caught:
            raise ProtocolFailure(f"{self.where} did not answer {method} within {limit:g} s")
        if "error" in reply:  # any id, or none (spec-notes §52: an unread id)
            raise await self.explain(RequestError(method, reply["error"]))
        # True and 1.0 equal 1 in Python, yet are no id (basic/index §Requests).
        answered = reply.get("id")
        if not is_request_id(answered) or answered != message["id"]:
            raise ProtocolFailure(
                f"{self.where} answered {method} with an id that is not the request's"
            )
        self._era_known = True
        result = reply.get("result")
        if not isinstance(result, dict):
            raise ProtocolFailure(f"{self.where} answered {method} with a result that is no object")
        tasked = method in TASK_AUGMENTED or method in TASK_NAME_PARAMS
        if result.get("resultType") == "task" and not tasked:
            only = ", ".join(sorted(TASK_AUGMENTED))
            raise ProtocolFailure(
                f"{self.where} answered {method} with a task, which only {only} may be"
            )
        return result

    async def explain(self, failure: ProtocolFailure) -> ProtocolFailure:
        """``failure``, or what a legacy server said it speaks if the first answer suggests one."""
        first, self._era_known = not self._era_known, True
        discover_failed = isinstance(failure, RequestError) and failure.method == DISCOVER
        suspicious = may_be_legacy(failure)
        # A server/discover that just failed is not asked again.
        if not (first and suspicious) or (not discover_failed and await self.answers_discover()):
            return failure
        version = await self.legacy_version()
        if version is None:
            return failure
        return ProtocolFailure(
            f"{self.where} speaks MCP {version} (the initialize handshake), "
            f"not {PROTOCOL_VERSION}, the only version this client speaks"
        )

    async def answers_discover(self) -> bool:
        """Whether ``server/discover`` has a result: then the server is modern, though it
        may answer ``initialize`` too (basic/versioning §Compatibility Matrix: a
        dual-era server is modern to a modern client)."""
        try:
            await self.request_once(DISCOVER, {})
        except ProtocolFailure:
            return False
        return True

    async def legacy_version(self) -> str | None:
        """The version a server of the initialize era answers with, if it is one."""
        self._last_id += 1
        params = {
            "protocolVersion": LEGACY_PROBE_VERSION,
            "capabilities": {},
            "clientInfo": CLIENT_INFO,
        }
        probe = {"jsonrpc": "2.0", "id": self._last_id, "method": "initialize", "params": params}
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        self.watch(True, probe)
        try:
            with trio.move_on_after(self.timeout_s):
                async with self.transport.exchange(probe, headers) as sent:
                    replies = _WatchedReplies(sent, self.watch)
                    while not is_response(reply := await replies.next()):
                        pass
                    result = reply.get("result")
                    version = result.get("protocolVersion") if isinstance(result, dict) else None
                    return version if isinstance(version, str) else None
        except ProtocolFailure:
            pass
        return None

    async def list_all(self, method: str, key: str) -> list[JSONObject]:
        """Every page of a list (server/utilities/pagination: follow ``nextCursor``).

        Each item must be an object, a ``nextCursor`` other than a string
        is no cursor and no end either (§Implementation Guidelines 3: only
        whether one was given counts; schema ``$defs.PaginatedResult``), and a
        cursor given twice would page forever: all are protocol failures.
        """
        items: list[JSONObject] = []
        params: JSONObject = {}
        cursors: set[str] = set()
        while True:
            result = await self.request(method, params)
            page = result.get(key)
            if not isinstance(page, list) or not all(isinstance(item, dict) for item in page):
                raise ProtocolFailure(
                    f"{self.where} answered {method} without a list of {key} objects"
                )
            items += page
            cursor = result.get("nextCursor")
            if cursor is None:
                return items
            if not isinstance(cursor, str):
                raise ProtocolFailure(
                    f"{self.where} answered {method} with a nextCursor that is no string"
                )
            if cursor in cursors:
                raise ProtocolFailure(f"{self.where} gave the cursor {cursor!r} twice")
            cursors.add(cursor)
            params = {"cursor": cursor}
