"""The command line: ``presa-trio serve [MODULE:ATTR]`` (Streamable HTTP),
``presa-trio stdio [MODULE:ATTR]``, ``presa-trio transcript FILE``, and the
client of any server: ``presa-trio discover``, ``list``, ``call``, ``task`` and the
rest (:mod:`presa_trio.client.commands`).

Both transports serve the ``Server`` that ``MODULE:ATTR`` names (or a
factory returning one), else the built-in demo, with its tasks in the store
``--store`` names (default ``memory:``). The HTTP server binds to
loopback by default, and the DNS-rebinding allowlist admits loopback names
only, so a non-loopback ``--host`` also needs ``--allow-host``.

An operator's mistake (a bad flag value, a port in use, a file that cannot
be read, a target that names no server, a short key) ends the command with
one line on stderr and exit status 2, never a traceback. A server that
started and then cannot run on (its task runner failed) ends with one line
and exit status 1, for a supervisor to restart it. Ctrl-C (SIGINT) where no
command handles it, as under ``stdio``, ends with status 130, also without a
traceback.

The parser knows every command, but a command's own machinery is imported
only when that command runs: the client (and httpx) for the client's
commands, the reloader for ``serve --reload``, the stdio edge for ``stdio``,
the renderer for ``transcript``; the auth options and the store URLs import
theirs the same way. A plain ``serve`` loads what serving needs and no more
(tests/e2e/test_serve_imports.py): the modules a server imports are most of
its resident memory (docs/performance.md, "Where the peak RSS goes").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, suppress
from functools import partial
from pathlib import Path
from typing import NoReturn

import trio

from presa_trio import __version__, logs
from presa_trio.auth.options import add_auth_arguments, auth_requested, guard_from_args
from presa_trio.cli.collector import settle_for_serving
from presa_trio.cli.open_files import raise_open_files_limit
from presa_trio.cli.option_values import (
    MAX_STORE_TIMEOUT_S,
    UsageError,
    byte_count,
    call_rate,
    check_needed_options,
    lease_seconds,
    level_name,
    nonblank_host,
    port_number,
    positive_seconds,
    seconds,
    store_seconds,
    stream_count,
    worker_count,
)
from presa_trio.cli.target import TargetError, load_server
from presa_trio.cli.task_options import (
    add_limit_options,
    add_task_event_options,
    use_limits,
    use_task_events,
)
from presa_trio.client.errors import (
    EXIT_CANCELLED,
    EXIT_USAGE,
    ClientError,
    OutputCut,
    UsageProblem,
    error_document,
)
from presa_trio.client.options import (
    CLIENT_COMMANDS,
    add_client_commands,
    json_asked,
    split_stdio,
)
from presa_trio.client.streams import writing_stdout
from presa_trio.demo import build_server
from presa_trio.http.app import DEFAULT_KEEP_ALIVE_S, DEFAULT_MAX_BODY, DEFAULT_READ_TIMEOUT_S
from presa_trio.http.serving import DEFAULT_SHUTDOWN_GRACE_S, serve_http
from presa_trio.http.workers import ServeRefused, keep_inherited, serve_workers, stop_bound
from presa_trio.server import Server
from presa_trio.server.faults import ServerFailed
from presa_trio.server.open_streams import (
    DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT,
    MAX_LONG_LIVED_BODY,
)
from presa_trio.tasks.extension import TasksExtension
from presa_trio.tasks.stores import DEFAULT_STORE, open_store, store_opener
from presa_trio.tasks.stores.base import DEFAULT_STORE_TIMEOUT_S, StoreUnavailable, TaskStore
from presa_trio.transcript_file import TranscriptFile
from presa_trio.wire.request_state import StateSealer

STATE_KEY_ENV = "PRESA_STATE_KEY"
#: The server started, then could not run on: a supervisor should restart it.
EXIT_FAILED = 1


class Parser(argparse.ArgumentParser):
    """argparse, but a mistake is a :class:`UsageError` (one line), not usage and exit,
    and a command's options may stand among its positionals: ``call URL TOOL --json
    a=1`` and ``list URL --json prompts`` read as with the option last.

    argparse alone ends a list of positionals (``KEY=VALUE…``, an optional ``what``)
    at the first option, and calls what follows it unrecognized; a command is parsed
    intermixed instead (argparse's ``parse_known_intermixed_args``), except one with
    commands of its own (``presa-trio``, ``task``), which argparse cannot parse so.
    """

    #: Set while this parser parses intermixed: the two passes it makes parse plainly.
    _intermixing = False

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._subparsers is not None or self._intermixing:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


# --- the parser ------------------------------------------------------------------


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """What every serving command takes: the target, the requestState keys, the logs."""
    parser.add_argument(
        "target",
        nargs="?",
        metavar="MODULE:ATTR",
        help="the Server to serve, or a zero-argument factory returning one "
        "(default: the built-in demo)",
    )
    parser.add_argument(
        "--state-key",
        action="append",
        default=[],
        metavar="KEY",
        help="requestState HMAC key, at least 16 bytes; repeat to rotate, the first signs "
        f"(default: ${STATE_KEY_ENV}, comma-separated, else a random key valid for this "
        "process only)",
    )
    parser.add_argument(
        "--log-level",
        type=level_name,
        default="INFO",
        metavar="LEVEL",
        help=f"{', '.join(logs.LEVELS)} (default: %(default)s)",
    )
    parser.add_argument(
        "--log-format",
        choices=logs.FORMATS,
        default="text",
        help="text lines, or JSON lines for machines; logs go to stderr (default: %(default)s)",
    )
    parser.add_argument(
        "--store",
        default=DEFAULT_STORE,
        metavar="URL",
        help="where tasks live: memory: (gone with the process), sqlite:///PATH (survives "
        "restarts; four slashes for an absolute path) or postgresql://… (shared by many "
        "processes; needs the postgresql extra) (default: %(default)s)",
    )
    parser.add_argument(
        "--store-timeout",
        type=store_seconds,
        default=DEFAULT_STORE_TIMEOUT_S,
        metavar="SECONDS",
        help="longest a call to the store may take, waiting included; slower is a "
        "retryable -32603; also how long a tool's ctx.emit waits out an unavailable store; "
        f"at most {MAX_STORE_TIMEOUT_S:g} (default: %(default)s)",
    )
    parser.add_argument(
        "--task-lease",
        type=lease_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long a running task's lease lasts unless renewed; after a crash its tasks "
        "are recovered once it expires; 0.1 to 86400 (default: %(default)s)",
    )
    parser.add_argument(
        "--listen-max-streams-per-client",
        type=stream_count,
        default=DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT,
        metavar="N",
        help="most open subscriptions/listen requests of one client on this process: its "
        "principal with authorization, else its IP address (over stdio, the pipe); one more "
        "is a retryable -32603 (over HTTP 429, with Retry-After) (default: %(default)s)",
    )


def add_http_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host",
        type=nonblank_host,
        default="127.0.0.1",
        help="address to bind (default: %(default)s)",
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=3000,
        help="port to bind; 0 picks a free one (default: %(default)s)",
    )
    parser.add_argument(
        "--allow-host",
        type=nonblank_host,
        action="append",
        default=[],
        metavar="NAME",
        help="another Host/Origin name to admit; repeatable "
        "(default: loopback names only: localhost, 127.0.0.1, [::1])",
    )
    parser.add_argument(
        "--max-body",
        type=byte_count,
        default=DEFAULT_MAX_BODY,
        metavar="BYTES",
        help=(
            "largest request body accepted; larger is 413; a subscriptions/listen or"
            f" tasks/stream body, at most {MAX_LONG_LIVED_BODY} of it (default: %(default)s)"
        ),
    )
    parser.add_argument(
        "--rate-limit",
        type=call_rate,
        default=None,
        metavar="CALLS",
        help="tools/call and completion/complete each client may make a second, in bursts "
        "of as many; more is 429 with Retry-After (a client: its token's caller, else its "
        "address; each worker counts its own) (default: no limit)",
    )
    parser.add_argument(
        "--read-timeout",
        type=positive_seconds,
        default=DEFAULT_READ_TIMEOUT_S,
        metavar="SECONDS",
        help="time a request body may take to arrive; slower is 408 and the connection "
        "closes (default: %(default)s)",
    )
    parser.add_argument(
        "--keep-alive",
        type=positive_seconds,
        default=DEFAULT_KEEP_ALIVE_S,
        metavar="SECONDS",
        help="time an idle connection is kept for the client's next request; behind a load "
        "balancer that keeps idle connections for reuse, set it above that balancer's idle "
        "timeout (default: %(default)s)",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=seconds,
        default=DEFAULT_SHUTDOWN_GRACE_S,
        metavar="SECONDS",
        help="on SIGINT/SIGTERM/SIGHUP, time requests in flight may still take "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=worker_count,
        default=1,
        metavar="N",
        help="serve with N processes on one address, restarted if they die; 0 is one per "
        "core this process may run on (a container's CPU quota is not counted); more than "
        "one needs a shared store (postgresql://…) (default: %(default)s)",
    )
    parser.add_argument(
        "--metrics",
        action="store_true",
        help="serve Prometheus metrics at GET /metrics, summed over every worker; needs the "
        "metrics extra (default: off)",
    )
    parser.add_argument(
        "--drain-delay",
        type=seconds,
        default=0.0,
        metavar="SECONDS",
        help="on SIGINT/SIGTERM/SIGHUP, time to keep accepting while GET /readyz says 503, so a "
        "load balancer takes the process out first (default: %(default)s)",
    )
    parser.add_argument(
        "--reload",
        action="store_true",
        help="restart when a .py file of MODULE's directory changes; for development only "
        "(default: off)",
    )
    parser.add_argument(
        "--transcript",
        type=Path,
        metavar="FILE",
        help="append every HTTP exchange to FILE as JSON lines; a FILE it creates is mode 0600 "
        "(default: off)",
    )


#: What ``presa-trio --help`` says first: plain text, as a terminal shows it.
DESCRIPTION = (
    "Serve MCP 2026-07-28 over Streamable HTTP (serve) or stdin/stdout (stdio), "
    "render a transcript (transcript), or speak to any server as its client "
    "(discover, list, call, task and the rest)."
)


def build_parser() -> Parser:
    parser = Parser(prog="presa-trio", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"presa-trio {__version__}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=Parser
    )
    http = commands.add_parser("serve", help="serve over Streamable HTTP")
    add_server_options(http)
    add_limit_options(http)
    add_http_options(http)
    add_auth_arguments(http)
    add_task_event_options(http)
    stdio = commands.add_parser("stdio", help="serve over stdin/stdout")
    add_server_options(stdio)
    add_task_event_options(stdio)
    render = commands.add_parser("transcript", help="render a transcript file as Markdown")
    render.add_argument("file", type=Path, metavar="FILE", help="a file written by --transcript")
    add_client_commands(commands)
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The options of one command line; a mistake raises :class:`UsageError`."""
    return build_parser().parse_args(argv)


# --- what the options mean ---------------------------------------------------------


def state_sealer(flags: Sequence[str]) -> StateSealer | None:
    """The key ring from ``--state-key`` or ``$PRESA_STATE_KEY``; None if neither gives one.

    An empty or short key is refused, never dropped: a ring the operator
    believes in but the server does not use is worse than an error.
    """
    named = [(f"--state-key #{n}", key) for n, key in enumerate(flags, 1)]
    if not named and os.environ.get(STATE_KEY_ENV):
        entries = os.environ[STATE_KEY_ENV].split(",")
        named = [(f"{STATE_KEY_ENV} entry {n}", key) for n, key in enumerate(entries, 1)]
    if not named:
        return None
    for where, key in named:
        try:
            StateSealer([key.encode()])
        except ValueError as error:
            raise UsageError(f"{where}: {error}") from None
    return StateSealer([key.encode() for _, key in named])


def chosen_server(target: str | None, sealer: StateSealer | None) -> Server:
    """The user's server (its own sealer unless keys were given), else the demo."""
    if target is None:
        return build_server() if sealer is None else build_server(sealer=sealer)
    try:
        server = load_server(target)
    except TargetError as error:
        raise UsageError(str(error)) from None
    if sealer is not None:
        server.sealer = sealer
    return server


def use_store(server: Server, store: TaskStore, lease_ms: int) -> None:
    """Put the server's tasks in ``store``, leased for ``lease_ms`` (a store many
    processes share relays the server's own change notifications too:
    :meth:`TasksExtension.run`)."""
    for extension in server.extensions:
        if isinstance(extension, TasksExtension):
            extension.runner.store = store
            extension.runner.lease_ms = lease_ms


async def on_store(
    args: argparse.Namespace, server: Server, serve: Callable[[Server], Awaitable[None]]
) -> None:
    """Open the task store ``--store`` names, serve on it, close it last."""
    async with AsyncExitStack() as stack:
        try:
            store = await stack.enter_async_context(open_store(args.store, args.store_timeout))
        except StoreUnavailable as error:
            raise UsageError(str(error)) from None
        use_store(server, store, round(args.task_lease * 1000))
        await serve(server)


def check_writable(path: Path) -> None:
    try:
        TranscriptFile(path).check()
    except OSError as error:
        raise UsageError(f"cannot write the transcript {path}: {error.strerror}") from None


def serve(args: argparse.Namespace, server: Server) -> None:
    if args.transcript is not None:
        check_writable(args.transcript)
    raise_open_files_limit()
    use_limits(server, args)
    auth = None
    if auth_requested(args):
        try:
            auth = guard_from_args(args, args.host)
        except ValueError as error:
            raise UsageError(str(error)) from None
    try:
        trio.run(
            on_store,
            args,
            server,
            partial(
                serve_http,
                host=args.host,
                port=args.port,
                allow_hosts=frozenset(args.allow_host),
                transcript=args.transcript,
                max_body=args.max_body,
                read_timeout=args.read_timeout,
                keep_alive=args.keep_alive,
                shutdown_grace=args.shutdown_grace,
                drain_delay=args.drain_delay,
                metrics=args.metrics,
                rate_limit=args.rate_limit,
                auth=auth,
            ),
        )
    except ServeRefused as refused:
        raise UsageError(str(refused)) from None
    except OSError as error:  # only binding raises it bare; later faults come grouped
        reason = error.strerror or str(error)
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {reason}") from None


def server_to_serve(args: argparse.Namespace) -> Server:
    """The server ``serve`` or ``stdio`` runs: built, its listen streams bounded, its task
    events on if asked, and the garbage collector settled for serving."""
    server = chosen_server(args.target, state_sealer(args.state_key))
    server.max_listen_streams_per_client = args.listen_max_streams_per_client
    use_task_events(server, args)
    settle_for_serving()
    return server


def serve_on_stdio(args: argparse.Namespace) -> None:
    """Claim stdin and stdout, then load the server: what its modules print goes to stderr."""
    from presa_trio.stdio import StreamNotOpen, claim_standard_streams, serve_stdio

    try:
        with claim_standard_streams() as streams:
            server = server_to_serve(args)
            trio.run(on_store, args, server, partial(serve_stdio, streams=streams))
    except StreamNotOpen as error:
        raise UsageError(str(error)) from None


def render(path: Path) -> None:
    from presa_trio.http.transcript_render import render_lines

    try:
        # A write cut short can end inside a character: its line is left out, not the file.
        with path.open(encoding="utf-8", errors="replace") as lines:
            rendered = render_lines(lines)
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror}") from None
    except (ValueError, KeyError, TypeError) as error:
        raise UsageError(f"{path} is not a transcript: {error}") from None
    print_out(rendered)


def print_out(text: str) -> None:
    """``text`` on stdout, as the client prints (:mod:`presa_trio.client.streams`): a
    reader gone ends the process with 141 and no word, a full disk is a usage error."""
    try:
        with writing_stdout(sys.stdout):
            print(text, end="", flush=True)
    except OutputCut as cut:
        sys.exit(cut.exit_code)
    except UsageProblem as problem:
        raise UsageError(str(problem)) from None


def run(argv: Sequence[str] | None) -> None:
    try:
        words, stdio = split_stdio(sys.argv[1:] if argv is None else argv)
    except UsageProblem as problem:
        raise UsageError(str(problem)) from None
    args = parse_args(words)
    if args.command in CLIENT_COMMANDS:
        from presa_trio.client.commands import run_client

        sys.exit(run_client(args, stdio))
    if args.command == "transcript":
        render(args.file)
        return
    logs.configure(args.log_level, args.log_format)
    check_needed_options(args)
    if args.command == "serve" and args.workers != 1:
        # What the parent can check is checked once here, not once per worker.
        state_sealer(args.state_key)
        try:
            store_opener(args.store)
        except StoreUnavailable as error:
            raise UsageError(str(error)) from None
        try:
            sys.exit(trio.run(serve_workers, sys.argv[1:] if argv is None else argv, args))
        except ServeRefused as refused:
            raise UsageError(str(refused)) from None
    if args.command == "serve" and args.reload:
        if args.target is None:
            raise UsageError("--reload watches the files of MODULE:ATTR; name one")
        from presa_trio.cli.reload import serve_reloading, watched_root

        given = list(sys.argv[1:] if argv is None else argv)
        bound = stop_bound(args.drain_delay, args.shutdown_grace, args.store_timeout)
        trio.run(serve_reloading, given, watched_root(args.target), bound)
        return
    if args.command == "stdio":
        serve_on_stdio(args)
        return
    keep_inherited()  # a worker's descriptors: before the target's code runs
    serve(args, server_to_serve(args))


def main(argv: Sequence[str] | None = None) -> None:
    try:
        run(argv)
    except UsageError as error:
        print(f"presa-trio: error: {error}", file=sys.stderr)
        if json_asked(sys.argv[1:] if argv is None else argv):
            document = json.dumps(error_document(str(error), EXIT_USAGE), indent=2)
            # A stdout that takes no document changes nothing: the line said it all.
            with suppress(ClientError), writing_stdout(sys.stdout):
                print(document, flush=True)
        sys.exit(EXIT_USAGE)
    except ServerFailed as error:
        print(f"presa-trio: error: the server cannot run: {error}", file=sys.stderr)
        sys.exit(EXIT_FAILED)
    except KeyboardInterrupt:  # before the signal handlers are in place
        sys.exit(EXIT_CANCELLED)
    except BaseExceptionGroup as group:
        # Ctrl-C inside Trio's nurseries, where no handler receives SIGINT (stdio).
        if group.split(KeyboardInterrupt)[1] is not None:
            raise
        sys.exit(EXIT_CANCELLED)
