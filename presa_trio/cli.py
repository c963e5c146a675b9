"""The command line: ``presa-trio serve`` (Streamable HTTP), ``presa-trio stdio``,
and ``presa-trio transcript`` (render a recorded transcript as Markdown).

Both serve the conformance fixture, the built-in demo. The HTTP server binds
to loopback by default, and the DNS-rebinding allowlist admits loopback names
only, so a non-loopback ``--host`` also needs ``--allow-host``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import trio

from presa_trio.auth.options import add_auth_arguments, auth_requested, guard_from_args
from presa_trio.fixtures import build_server
from presa_trio.http.app import DEFAULT_MAX_BODY
from presa_trio.http.serving import serve_http
from presa_trio.http.transcript_render import render_lines
from presa_trio.stdio import serve_stdio
from presa_trio.wire.request_state import StateSealer

STATE_KEY_ENV = "PRESA_STATE_KEY"


def sealer_from(keys: Sequence[str]) -> StateSealer:
    """A key ring from the given keys, else a random per-process key (wire §10.4)."""
    if keys:
        return StateSealer([key.encode() for key in keys])
    return StateSealer.with_random_key()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--state-key",
        action="append",
        default=[],
        help=f"requestState HMAC key; repeat to rotate, the first signs (env {STATE_KEY_ENV}, "
        "comma-separated). Default: a random key, valid for this process only",
    )
    common.add_argument("--log-level", default="INFO", help="logging level (logs go to stderr)")
    parser = argparse.ArgumentParser(prog="presa-trio", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    http = commands.add_parser("serve", parents=[common], help="serve over Streamable HTTP")
    http.add_argument("--host", default="127.0.0.1")
    http.add_argument("--port", type=int, default=3000)
    http.add_argument(
        "--allow-host",
        action="append",
        default=[],
        help="another Host/Origin name to admit (DNS-rebinding allowlist)",
    )
    http.add_argument(
        "--max-body",
        type=int,
        default=DEFAULT_MAX_BODY,
        metavar="BYTES",
        help=f"largest request body accepted; larger is 413 (default {DEFAULT_MAX_BODY})",
    )
    http.add_argument(
        "--transcript",
        type=Path,
        metavar="FILE",
        help="append every HTTP exchange to FILE as JSON lines (off by default)",
    )
    add_auth_arguments(http)
    commands.add_parser("stdio", parents=[common], help="serve over stdin/stdout")
    render = commands.add_parser("transcript", help="render a transcript file as Markdown")
    render.add_argument("file", type=Path)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.command == "transcript":
        with args.file.open(encoding="utf-8") as lines:
            sys.stdout.write(render_lines(lines))
        return
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    keys = args.state_key or [k for k in os.environ.get(STATE_KEY_ENV, "").split(",") if k]
    server = build_server(sealer=sealer_from(keys))
    if args.command == "stdio":
        trio.run(serve_stdio, server)
        return
    auth = None
    if auth_requested(args):
        try:
            auth = guard_from_args(args, args.host, args.port)
        except ValueError as exc:
            print(f"presa-trio: {exc}", file=sys.stderr)
            sys.exit(2)
    print(f"presa-trio serving http://{args.host}:{args.port}/mcp", file=sys.stderr)
    trio.run(
        partial(
            serve_http,
            server,
            host=args.host,
            port=args.port,
            allow_hosts=frozenset(args.allow_host),
            transcript=args.transcript,
            max_body=args.max_body,
            auth=auth,
        )
    )
