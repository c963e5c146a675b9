"""The one cattrs converter of the wire models, both ways: attrs models <-> wire JSON.

Python reads snake_case, the wire speaks camelCase. One hook factory per
direction renames every attrs class in one place (cattrs docs "Using
Factory Hooks"), so models stay plain. Fields equal to their default are
omitted (the spec's optional keys are absent, not null) unless a field is
marked ``always``: the content ``type`` discriminator, for instance, is
always sent.

:func:`to_wire` is the server's direction. :func:`from_wire` reads what a
server sent into the same models, for a client (the in-process testing
client): unions are told apart by their ``type`` literal or by the key only
one member has (``text`` or ``blob``), and a value of the wrong JSON type
is refused rather than coerced (cattrs turns ``1`` into ``"1"`` unless
told otherwise; a client that checks a server must not). What a server
receives is not read here: it is read by hand where it arrives
(``presa_trio.wire.mrtr``, ``presa_trio.wire.meta``), each check answering
with the spec's error.
"""

from __future__ import annotations

from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

#: Attribute names whose wire name is not plain camelCase.
WIRE_NAME_EXCEPTIONS = {"meta": "_meta"}

#: Field metadata key: send this field even when it equals its default.
ALWAYS = "presa_always"

T = TypeVar("T")


def wire_name(attribute: str) -> str:
    """``mime_type`` -> ``mimeType``; ``meta`` -> ``_meta``."""
    if attribute in WIRE_NAME_EXCEPTIONS:
        return WIRE_NAME_EXCEPTIONS[attribute]
    head, *rest = attribute.split("_")
    return head + "".join(part.title() for part in rest)


def always(default: Any) -> Any:
    """An attrs field with a default that is sent on the wire all the same."""
    return attrs.field(default=default, metadata={ALWAYS: True})


def _overrides(cls: type) -> dict[str, Any]:
    return {
        a.name: override(rename=wire_name(a.name), omit_if_default=not a.metadata.get(ALWAYS))
        for a in attrs.fields(cls)
    }


def _renames(cls: type) -> dict[str, Any]:
    return {a.name: override(rename=wire_name(a.name)) for a in attrs.fields(cls)}


def _exactly(kind: type) -> Any:
    """A structure hook that takes only a value of ``kind`` (an integer for a float too)."""
    accepted = (int, float) if kind is float else (kind,)

    def structure(value: Any, _: Any) -> Any:
        if type(value) not in accepted:
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}: {value!r}")
        return value

    return structure


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(omit_if_default=True)
    conv.register_unstructure_hook_factory(
        attrs.has,
        lambda cls: make_dict_unstructure_fn(
            cls, conv, _cattrs_omit_if_default=True, **_overrides(cls)
        ),
    )
    for kind in (str, int, float, bool):
        conv.register_structure_hook(kind, _exactly(kind))
    conv.register_structure_hook_factory(
        attrs.has,
        lambda cls: make_dict_structure_fn(cls, conv, **_renames(cls)),
    )
    return conv


converter = _make_converter()


def to_wire(obj: Any) -> Any:
    """Unstructure a model (or a list of them) into JSON-ready values."""
    return converter.unstructure(obj)


def from_wire(data: Any, model: type[T]) -> T:
    """Structure JSON a server sent into ``model`` (an attrs class, a list or union of them).

    A value that does not fit raises (cattrs' ``ClassValidationError``, an
    ``ExceptionGroup`` naming each failing field).
    """
    return converter.structure(data, model)
