"""Client capabilities a tool needs, declared at registration and checked before it runs.

A tool that may ask the client for input (an elicitation, a sampling
request, its roots) says so with ``needs=``; a call whose request does not
declare one of them is refused with -32021 before the tool runs a single
step and before any task is created for it, rather than at the question.
The question is checked again when it is asked (basic/patterns/mrtr
§Server Requirements), for a tool that asks what it did not declare.

Spec: 2026-07-28 basic/patterns/mrtr §Server Requirements (a request the
client's capabilities do not allow is -32021); basic/index §_meta
(``clientCapabilities`` arrive with each request); client/elicitation
§Capabilities (the form and URL modes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import attrs

from presa_trio.wire.errors import MissingRequiredClientCapability
from presa_trio.wire.meta import ClientCapabilities
from presa_trio.wire.models import JSONObject


@attrs.frozen
class Need:
    """What one need requires of a request's capabilities, and the -32021 naming it."""

    met_by: Callable[[ClientCapabilities], bool]
    capability: str
    settings: JSONObject = attrs.field(factory=dict)


#: Each need by its name: ``elicitation`` is form mode
#: (:class:`~presa_trio.wire.mrtr.Elicitation`; ``elicitation: {}`` declares
#: it), ``elicitation.url`` URL mode (:class:`~presa_trio.wire.mrtr.UrlElicitation`),
#: as client/elicitation §Capabilities reads them.
NEEDS: Mapping[str, Need] = {
    "elicitation": Need(lambda declared: declared.has_elicitation_mode("form"), "elicitation"),
    "elicitation.url": Need(
        lambda declared: declared.has_elicitation_mode("url"), "elicitation", {"url": {}}
    ),
    "sampling": Need(lambda declared: declared.has("sampling"), "sampling"),
    "roots": Need(lambda declared: declared.has("roots"), "roots"),
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
    for name in sorted(needs):
        need = NEEDS[name]
        if not need.met_by(capabilities):
            raise MissingRequiredClientCapability.for_capability(
                need.capability, dict(need.settings)
            )
