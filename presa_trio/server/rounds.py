"""The multi round-trip boundary: open a round from the retry, close it on the way out.

Handlers never see tokens. On the way in, :func:`open_round` validates
``inputResponses`` and opens ``requestState`` (verifying its signature,
expiry and binding to this very request and caller). On the way out, :func:`close_round`
checks every input request against the capabilities this request declared
and seals the handler's state; :func:`asked` turns a prompt's or a resource's
pending ``ask`` into the round to close. Which methods may answer ``input_required``
at all is a column of the method table (``Method.may_ask``), enforced by the
dispatcher.

Spec: 2026-07-28 basic/patterns/mrtr §InputResponses, §Server Requirements (Basic Workflow),
§Security Considerations.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

import attrs

from presa_trio.auth.principal import access_scope
from presa_trio.server.context import RequestContext
from presa_trio.server.faults import leaves
from presa_trio.wire.mrtr import (
    InputPending,
    InputRequired,
    parse_input_responses,
    require_allowed,
)
from presa_trio.wire.request_state import Binding, canonical_digest

Output = TypeVar("Output")


@attrs.frozen
class RoundTarget:
    """What a round's ``requestState`` is bound to: method, target, arguments, caller.

    The binding (with the arguments' canonical digest) is computed only when
    a token is opened or a state sealed: most requests do neither, and the
    digest is a canonical JSON encoding and a hash of the arguments.
    """

    method: str
    target: str
    arguments: Any

    def binding(self, ctx: RequestContext) -> Binding:
        """The binding for this request's caller, so one principal's state is refused to another."""
        digest = canonical_digest(self.arguments)
        return Binding(self.method, self.target, digest, access_scope(ctx.principal))


def open_round(ctx: RequestContext, params: dict[str, Any], target: RoundTarget) -> None:
    """Load this round's input responses and verified state onto ``ctx``."""
    ctx.input_responses = parse_input_responses(params)
    token = params.get("requestState")
    if token is not None:
        ctx.state = ctx.server.sealer.open(token, target.binding(ctx), ctx.server.clock())


async def asked(output: Awaitable[Output]) -> Output | InputRequired:
    """What a prompt or resource handler returned, or the round its ``ask`` left open.

    ``ctx.ask`` (and ``ctx.elicit`` over it) raises
    :class:`~presa_trio.wire.mrtr.InputPending` until every answer is in; on
    ``prompts/get`` and ``resources/read``, which may answer
    ``input_required`` as ``tools/call`` does (mrtr §Supported Requests),
    that is the round to close, whether it was raised directly or from the
    handler's own nurseries, as on a tool. The tools boundary maps it with
    the rest of what a tool may raise (:func:`~presa_trio.server.tools.tool_outcome`).
    """
    try:
        return await output
    except Exception as error:
        found = leaves(error)
        if not all(isinstance(leaf, InputPending) for leaf in found):
            raise
        return pending_round(found)


def pending_round(found: list[BaseException]) -> InputRequired:
    """One ``input_required`` asking for every key the :class:`InputPending` in ``found``
    wait for, with the first state one of them carries."""
    pending = [leaf.needed for leaf in found if isinstance(leaf, InputPending)]
    requests = {key: r for needed in pending for key, r in needed.requests.items()}
    state = next((needed.state for needed in pending if needed.state is not None), None)
    return InputRequired(requests, state)


def close_round(ctx: RequestContext, needed: InputRequired, target: RoundTarget) -> dict[str, Any]:
    """The wire ``InputRequiredResult`` for ``needed``.

    Spec: mrtr §Server Requirements (Basic Workflow) 7 — an input request for
    a capability this request did not declare is never sent; the answer is
    -32021 instead (:func:`~presa_trio.wire.mrtr.require_allowed`).
    """
    require_allowed(needed.requests, ctx.capabilities)
    result: dict[str, Any] = {"resultType": "input_required"}
    if needed.requests:
        result["inputRequests"] = {key: r.to_wire() for key, r in needed.requests.items()}
    if needed.state is not None:
        binding = target.binding(ctx)
        result["requestState"] = ctx.server.sealer.seal(needed.state, binding, ctx.server.clock())
    return result
