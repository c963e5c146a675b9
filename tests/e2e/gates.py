"""Gates a test opens to let a faulty store go on."""

from __future__ import annotations

import attrs
import trio


@attrs.define
class Gates:
    """Label -> the Event a ``work`` task with that label waits for."""

    events: dict[str, trio.Event] = attrs.field(factory=dict)

    def __getitem__(self, label: str) -> trio.Event:
        return self.events.setdefault(label, trio.Event())
