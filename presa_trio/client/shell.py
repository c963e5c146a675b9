"""A command as a shell reads it back, on one line, for the client's messages.

The client names a ``--stdio`` command in its error lines and in the hint
that answers a waiting task later; a word holding a space or a control
character (a newline, an escape) must neither split the line nor read
back as another command.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

#: The escapes of ``$'…'`` (POSIX.1-2024 dollar-single-quotes) for what is written so.
_DOLLAR_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def shell_word(word: str) -> str:
    """``word`` as a shell reads it back, on one line: as :func:`shlex.quote` quotes it,
    or, holding a control character (a newline, an escape), as ``$'…'`` with that
    character escaped, so that a line naming a command stays one line."""
    if word.isprintable():
        return shlex.quote(word)
    return "$'" + "".join(map(_dollar_escaped, word)) + "'"


def _dollar_escaped(c: str) -> str:
    """One character inside ``$'…'``: as it is if printable, else escaped (``\\u`` and
    ``\\U`` past ASCII, as bash and zsh read them)."""
    code = ord(c)
    if c in _DOLLAR_ESCAPES:
        return _DOLLAR_ESCAPES[c]
    if c.isprintable():
        return c
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def command_line(command: Sequence[str]) -> str:
    """``command`` on one line, each word as :func:`shell_word` writes it."""
    return " ".join(map(shell_word, command))
