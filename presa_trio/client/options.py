"""The client commands' options: the part of ``presa-trio``'s parser they add.

:func:`add_client_commands` adds ``discover``, ``list``, ``describe``, ``call``,
``read``, ``prompt``, ``complete``, ``listen``, ``request``, ``task``, ``login`` and
``logout`` to the command line's subcommands, and
:func:`split_stdio` takes ``--stdio … -- COMMAND`` apart before parsing.
This module needs only argparse: the command line builds its whole parser
with it, and imports what runs a command (:mod:`.commands`, httpx) only
when a client command is given, so a serving process never loads the client.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from presa_trio.client.errors import UsageProblem
from presa_trio.wire.meta import LOG_LEVELS

CLIENT_COMMANDS = (
    "discover",
    "list",
    "describe",
    "call",
    "read",
    "prompt",
    "complete",
    "listen",
    "request",
    "task",
    "login",
    "logout",
)
#: The environment variable ``--token`` defaults to.
TOKEN_ENV = "PRESA_TOKEN"
#: The environment variable ``--client-secret`` defaults to (with ``--client-id``):
#: a secret in the environment is not shown to everyone who lists processes.
CLIENT_SECRET_ENV = "PRESA_CLIENT_SECRET"
#: Stands for the endpoint in the URL's place when ``--stdio`` names a command.
STDIO_ENDPOINT = "stdio:"
#: What ``list`` lists: the method that lists it, and the key of its items.
LISTS = {
    "tools": ("tools/list", "tools"),
    "resources": ("resources/list", "resources"),
    "templates": ("resources/templates/list", "resourceTemplates"),
    "prompts": ("prompts/list", "prompts"),
}


def split_stdio(words: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """Take ``--stdio … -- COMMAND ARGS…`` apart: the words to parse, and the command.

    The endpoint stands first among the positionals, so ``stdio:`` takes
    the URL's place there.
    """
    words = list(words)
    cut = words.index("--") if "--" in words else len(words)
    if not words or words[0] not in CLIENT_COMMANDS or "--stdio" not in words[:cut]:
        return words, None
    command = words[cut + 1 :]
    if not command:
        raise UsageProblem("--stdio needs the server's command after --: --stdio -- COMMAND ARGS…")
    parsed = [word for word in words[:cut] if word != "--stdio"]
    parsed.insert(2 if parsed[0] == "task" else 1, STDIO_ENDPOINT)
    return parsed, command


def json_asked(words: Sequence[str]) -> bool:
    """Whether a client command's words ask for ``--json``: then even a mistake in them
    is answered with a JSON document (:func:`presa_trio.client.errors.error_document`)."""
    words = list(words)
    cut = words.index("--") if "--" in words else len(words)
    return bool(words) and words[0] in CLIENT_COMMANDS and "--json" in words[:cut]


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def log_level(text: str) -> str:
    """``--log-level``: one of the spec's levels (logging §Log Levels), in any case."""
    if text.lower() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(LOG_LEVELS)}")
    return text.lower()


def sequence_number(text: str) -> int:
    """A task event's ``seq``: a non-negative integer (SEP-2694 §Resume and Replay Semantics)."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not an event's seq (0, 1, 2…)")
    return int(text)


def endpoint_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("url", metavar="URL", help="the MCP endpoint, or --stdio -- COMMAND ARGS…")
    options.add_argument(
        "--stdio",
        action="store_true",
        help="start COMMAND (after --) and speak MCP on its stdin/stdout",
    )
    options.add_argument(
        "--json",
        action="store_true",
        help="print the result (or the failure) as one JSON document on stdout",
    )
    options.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show each message sent and received on stderr, as it goes",
    )
    options.add_argument(
        "--log-level",
        type=log_level,
        metavar="LEVEL",
        help=f"ask for the server's logs from LEVEL up, on stderr ({', '.join(LOG_LEVELS)})",
    )
    options.add_argument(
        "--token", metavar="TOKEN", help=f"send Authorization: Bearer TOKEN (default: ${TOKEN_ENV})"
    )
    options.add_argument(
        "--transcript",
        type=Path,
        metavar="FILE",
        help="append every exchange to FILE as JSON lines (- for stdout)",
    )
    options.add_argument(
        "--timeout",
        type=seconds,
        default=60.0,
        metavar="SECONDS",
        help="longest wait for one answer; a task is followed however long (default: %(default)s)",
    )
    options.add_argument(
        "--no-tasks", action="store_true", help="do not declare the Tasks extension"
    )
    add_signin_options(options)
    return options


def add_signin_options(options: argparse.ArgumentParser) -> None:
    """How to sign in when the server asks (a 401), or on ``login``."""
    options.add_argument(
        "--no-browser",
        action="store_true",
        help="print the sign-in URL instead of opening the browser",
    )
    options.add_argument("--client-id", metavar="ID", help="a client registered in advance")
    options.add_argument(
        "--client-secret",
        metavar="SECRET",
        help=f"that client's secret (default with --client-id and no key: ${CLIENT_SECRET_ENV})",
    )
    options.add_argument(
        "--client-metadata-url",
        metavar="URL",
        help="this client's ID metadata document, for servers that support them",
    )
    options.add_argument(
        "--client-key",
        metavar="PEM",
        help="that client's private key: it authenticates with a signed JWT (private_key_jwt)",
    )
    options.add_argument(
        "--client-credentials",
        action="store_true",
        help="sign in as that client itself (client credentials grant): no person, no browser",
    )


def answer_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="the answer to the input request KEY, e.g. "
        'who=\'{"action":"accept","content":{"name":"Ada"}}\'; repeatable',
    )
    options.add_argument(
        "--answers", type=Path, metavar="FILE", help="a JSON object of answers by key"
    )
    options.add_argument(
        "--root",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help="a directory to offer when the server asks for roots; repeatable",
    )
    options.add_argument(
        "--no-listen", action="store_true", help="follow a task by polling tasks/get only"
    )
    return options


def add_client_commands(commands: Any) -> None:
    """Add the client's commands to ``presa-trio``'s subcommands."""
    endpoint, answering = endpoint_options(), answer_options()
    both = [endpoint, answering]
    commands.add_parser(
        "discover", parents=[endpoint], help="ask a server what it is (server/discover)"
    )
    listing = commands.add_parser(
        "list", parents=[endpoint], help="list tools, resources or prompts"
    )
    listing.add_argument("what", nargs="?", choices=sorted(LISTS), default="tools")
    described = commands.add_parser(
        "describe", parents=[endpoint], help="show a tool: its signature, annotations, schemas"
    )
    described.add_argument("name", metavar="TOOL")
    call = commands.add_parser("call", parents=both, help="call a tool; follow it if it is a task")
    call.add_argument("name", metavar="TOOL")
    call.add_argument(
        "pairs", nargs="*", default=[], metavar="KEY=VALUE", help="arguments, typed by the schema"
    )
    call.add_argument("--args", metavar="JSON", help="the arguments as one JSON object")
    call.add_argument("--detach", action="store_true", help="print a task's id and exit")
    read = commands.add_parser("read", parents=both, help="read a resource (resources/read)")
    read.add_argument("uri", metavar="URI")
    prompt = commands.add_parser("prompt", parents=both, help="get a prompt (prompts/get)")
    prompt.add_argument("name", metavar="PROMPT")
    prompt.add_argument(
        "pairs", nargs="*", default=[], metavar="KEY=VALUE", help="the prompt's arguments"
    )
    prompt.add_argument("--args", metavar="JSON", help="the arguments as one JSON object")
    add_complete_command(commands, endpoint)
    add_listen_command(commands, endpoint)
    raw = commands.add_parser(
        "request", parents=[endpoint], help="send any request as it is, print its result"
    )
    raw.add_argument("method", metavar="METHOD")
    raw.add_argument("params", nargs="?", default="{}", metavar="JSON", help="its params object")
    commands.add_parser(
        "login", parents=[endpoint], help="sign in to a server now and keep the token"
    )
    commands.add_parser("logout", parents=[endpoint], help="forget the token kept for a server")
    task = commands.add_parser("task", help="get, wait for, answer or cancel a task by id")
    actions = task.add_subparsers(
        dest="action", required=True, metavar="ACTION", parser_class=type(task)
    )
    for action, said in (
        ("get", "show the task as it is now"),
        ("wait", "follow the task until it ends, answering what it asks"),
        ("update", "answer what the task asks now"),
        ("cancel", "cancel the task"),
    ):
        parser = actions.add_parser(action, parents=both, help=said)
        parser.add_argument("task_id", metavar="TASK_ID")
    stream = actions.add_parser(
        "stream",
        parents=[endpoint],
        help="print the task's events as they come, until it ends (tasks/stream, SEP-2694)",
    )
    stream.add_argument("task_id", metavar="TASK_ID")
    stream.add_argument(
        "--after",
        type=sequence_number,
        metavar="N",
        help="start after event N (default: at the earliest event the server keeps)",
    )


def add_complete_command(commands: Any, endpoint: argparse.ArgumentParser) -> None:
    """``complete URL prompt|template REF ARG=VALUE [KEY=VALUE…]`` (server/utilities/completion)."""
    complete = commands.add_parser(
        "complete",
        parents=[endpoint],
        help="ask for completions of a prompt's or a resource template's argument",
    )
    complete.add_argument("kind", choices=("prompt", "template"), help="what REF names")
    complete.add_argument("ref", metavar="REF", help="the prompt's name, or the template's URI")
    complete.add_argument(
        "argument", metavar="ARG=VALUE", help="the argument to complete, and what is typed so far"
    )
    complete.add_argument(
        "context", nargs="*", default=[], metavar="KEY=VALUE", help="arguments already chosen"
    )


def add_listen_command(commands: Any, endpoint: argparse.ArgumentParser) -> None:
    """``listen URL [--tools] [--prompts] [--resources] [--resource URI…] [--task ID…]``."""
    listen = commands.add_parser(
        "listen",
        parents=[endpoint],
        help="print list changes, resource updates and task statuses (subscriptions/listen)",
    )
    for flag, said in (
        ("--tools", "the tool list changed"),
        ("--prompts", "the prompt list changed"),
        ("--resources", "the resource list changed"),
    ):
        listen.add_argument(flag, action="store_true", help=f"{said} (all three by default)")
    listen.add_argument(
        "--resource",
        action="append",
        default=[],
        metavar="URI",
        help="this resource was updated; repeatable",
    )
    listen.add_argument(
        "--task",
        action="append",
        default=[],
        metavar="TASK_ID",
        help="this task's status changed (the Tasks extension); repeatable",
    )
    listen.add_argument(
        "--count", type=count, metavar="N", help="stop after N notifications (default: never)"
    )


def count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value
