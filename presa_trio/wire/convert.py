"""The one cattrs converter: attrs models -> wire JSON.

Python reads snake_case, the wire speaks camelCase. One hook factory renames
every attrs class in one place (cattrs docs "Using Factory Hooks"), so models
stay plain. Fields equal to their default are omitted (the spec's optional
keys are absent, not null) unless a field is marked ``always``: the content
``type`` discriminator, for instance, is always sent.

Only this direction exists: what a client sends is read by hand where it
arrives (``presa_trio.wire.mrtr``, ``presa_trio.wire.meta``), each check
answering with the spec's error.
"""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

#: Attribute names whose wire name is not plain camelCase.
WIRE_NAME_EXCEPTIONS = {"meta": "_meta"}

#: Field metadata key: send this field even when it equals its default.
ALWAYS = "presa_always"


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


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter(omit_if_default=True)
    conv.register_unstructure_hook_factory(
        attrs.has,
        lambda cls: make_dict_unstructure_fn(
            cls, conv, _cattrs_omit_if_default=True, **_overrides(cls)
        ),
    )
    return conv


converter = _make_converter()


def to_wire(obj: Any) -> Any:
    """Unstructure a model (or a list of them) into JSON-ready values."""
    return converter.unstructure(obj)
