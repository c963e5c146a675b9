"""Client capabilities a tool needs, declared at registration and checked before it runs.

A tool that may ask the client for input (an elicitation, a sampling
request, its roots) says so with ``needs=``; a call whose request does not
declare one of them is refused with -32021 before the tool runs a single
step and before any task is created for it, rather than at the question.
The question is checked again when it is asked (basic/patterns/mrtr
§Server Requirements), for a tool that asks what it did not declare.

Spec: 2026-07-28 basic/patterns/mrtr §Server Requirements (a request the
client's capabilities do not allow is -32021); basic/index §_meta
(``clientCapabilities`` arrive with each request).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from presa_trio.wire.errors import MissingRequiredClientCapability
from presa_trio.wire.meta import ClientCapabilities

#: What each need requires of a request's declared capabilities. presa asks
#: only form-mode elicitations (:class:`~presa_trio.wire.mrtr.Elicitation`).
NEEDS: Mapping[str, Callable[[ClientCapabilities], bool]] = {
    "elicitation": lambda capabilities: capabilities.has_elicitation_mode("form"),
    "sampling": lambda capabilities: capabilities.has("sampling"),
    "roots": lambda capabilities: capabilities.has("roots"),
}


def read_needs(tool: str, needs: Iterable[str]) -> frozenset[str]:
    """The declared needs, each one known; else a one-line ``ValueError`` naming the tool.

    A bare string (``needs="elicitation"``) is refused as such, rather than
    read as its letters.
    """
    if isinstance(needs, str):  # a ValueError, as every refusal of needs= (docs/api.md)
        raise ValueError(  # noqa: TRY004
            f"tool {tool!r}: needs= is a list of client capabilities, such as "
            f"needs=[{needs!r}]; not the string {needs!r}"
        )
    declared = frozenset(needs)
    unknown = sorted(declared - NEEDS.keys())
    if unknown:
        raise ValueError(
            f"tool {tool!r}: needs={unknown} is not a client capability presa asks for "
            f"(one of {sorted(NEEDS)})"
        )
    return declared


def require_needs(needs: frozenset[str], capabilities: ClientCapabilities) -> None:
    """-32021 for the first need (in name order) this request's capabilities lack."""
    for need in sorted(needs):
        if not NEEDS[need](capabilities):
            raise MissingRequiredClientCapability.for_capability(need)
