"""argparse value types for the command line's options, and its one-line usage error.

A value that does not parse is argparse's own error, written as one line
by :class:`presa_trio.cli.main.Parser`; a combination of options that cannot
work is a :class:`UsageError`, and so is an option that only has an effect
with another (a :class:`NeedsOption`) given without it. All exit with status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from presa_trio import logs
from presa_trio.http.rate_limit import is_call_rate
from presa_trio.needed_options import NEEDING, NeedsOption
from presa_trio.tasks.events import MAX_SEQ, MIN_PAYLOAD_BYTES


class UsageError(Exception):
    """An operator mistake: reported as one line, exit status 2."""


def check_needed_options(args: argparse.Namespace) -> None:
    """Refuse the first :class:`NeedsOption` given without the option it needs: it would
    change nothing, and the operator would believe it did."""
    given: tuple[tuple[str, NeedsOption], ...] = getattr(args, NEEDING, ())
    for flag, option in given:
        if not getattr(args, option.needs.removeprefix("--").replace("-", "_")):
            raise UsageError(f"{flag} needs {option.needs} ({option.why})")


def checked(
    convert: Callable[[str], float], accept: Callable[[float], bool], what: str
) -> Callable[[str], float]:
    """An argparse ``type``: ``convert`` the text, then require ``accept`` of the value."""

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not accept(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value

    parse.__name__ = what
    return parse


port_number = checked(int, lambda n: 0 <= n <= 65535, "a port number (0-65535)")
byte_count = checked(int, lambda n: n > 0, "a positive number of bytes")
#: A task limit is compared in the store with a count of its tasks, a signed 64-bit
#: integer in every store that counts in SQL (a larger one fails every task's creation).
task_count = checked(
    int, lambda n: 0 < n <= MAX_SEQ, f"a positive number of tasks (at most {MAX_SEQ})"
)
#: The most ``--workers`` a server may ask for: more than any machine has cores, so
#: a slip of the keyboard (``--workers 20000``) is refused rather than starting
#: processes until the host runs out of memory.
MAX_WORKERS = 1024
worker_count = checked(
    int,
    lambda n: 0 <= n <= MAX_WORKERS,
    f"a number of workers (0: one per core; at most {MAX_WORKERS})",
)
event_count = checked(
    int, lambda n: 0 < n <= MAX_SEQ, f"a positive number of events (at most {MAX_SEQ})"
)
#: An event's age or a finished task's event retention, in seconds: its milliseconds
#: are a store's 64-bit integer (:class:`~presa_trio.tasks.events.Retention`). A
#: positive value under half a millisecond is refused: counted in milliseconds it
#: would be 0, which for ``--task-events-max-age`` means no limit at all.
event_seconds = checked(
    float,
    lambda s: 0 <= s < float("inf") and (s == 0 or 1 <= round(s * 1000) <= MAX_SEQ),
    f"a number of seconds, 0 or at least 0.001 (at most {MAX_SEQ // 1000})",
)
payload_size = checked(
    int,
    lambda n: n >= MIN_PAYLOAD_BYTES,
    f"a payload size of at least {MIN_PAYLOAD_BYTES} bytes (that of {{}})",
)
stream_count = checked(int, lambda n: n > 0, "a positive number of streams")
positive_seconds = checked(float, lambda s: 0 < s < float("inf"), "a positive number of seconds")
seconds = checked(float, lambda s: 0 <= s < float("inf"), "a number of seconds")
#: The longest ``--store-timeout``, in seconds: the longest idle time before a TCP
#: keepalive probe that Linux takes (``TCP_KEEPIDLE``), which a ``postgresql://``
#: store sets to it. Longer, that store cannot connect at all, and a timeout whose
#: milliseconds overflow a float fails every call of any store.
MAX_STORE_TIMEOUT_S = 32_767.0
store_seconds = checked(
    float,
    lambda s: 0 < s <= MAX_STORE_TIMEOUT_S,
    f"a positive number of seconds, at most {MAX_STORE_TIMEOUT_S:g}",
)
call_rate = checked(float, is_call_rate, "a positive number of calls a second")
#: The bounds of ``--task-lease``. Renewal is a store write every third of a
#: lease and recovery one every half, so a shorter lease (one that rounds to
#: 0 ms above all) makes them a busy loop on the store; a longer one is how long
#: a killed server's tasks wait to be recovered, and past a day its expiry soon
#: leaves what a store's 64-bit integer holds.
MIN_LEASE_S, MAX_LEASE_S = 0.1, 86_400.0
lease_seconds = checked(
    float,
    lambda s: MIN_LEASE_S <= s <= MAX_LEASE_S,
    f"a lease of {MIN_LEASE_S:g} to {MAX_LEASE_S:g} seconds",
)


def nonblank_host(text: str) -> str:
    """``--allow-host``: a name as a Host or Origin header carries it; ``--host``: the
    address to bind. Never blank: a blank ``--host`` (a shell variable left unset)
    would bind every interface."""
    if not text or any(character.isspace() for character in text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a host name")
    return text


def level_name(text: str) -> str:
    if text.upper() not in logs.LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(logs.LEVELS)}")
    return text.upper()
