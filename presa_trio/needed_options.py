"""An option that only has an effect together with another, for argparse.

The command line refuses such an option given without the one it needs
(:func:`presa_trio.cli.option_values.check_needed_options`), in one line,
rather than ignoring it. The action lives here, outside the command line's
package, because the library's own option groups (the authorization
options of :mod:`presa_trio.auth.options`) declare options with it too,
and no library module imports the command line.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

#: The namespace attribute where each :class:`NeedsOption` given notes itself.
NEEDING = "needing_options"


class NeedsOption(argparse.Action):
    """An option that only has an effect with the option ``needs``: it stores its value
    and notes its flag as given, so that given without ``needs`` it is refused (see
    the module's docstring) rather than ignored. ``why`` says what it changes nothing
    without, for the error."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, *, needs: str, why: str, **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.needs = needs
        self.why = why

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, NEEDING, (*getattr(namespace, NEEDING, ()), (option_string, self)))
