"""The command line: ``presa-trio serve`` runs the fixture over HTTP.

The server binds to loopback by default; the DNS-rebinding allowlist of the
HTTP edge admits loopback names only, so a non-loopback ``--host`` also needs
``--allow-host``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from presa_trio.fixtures import build_app
from presa_trio.http.admission import LOOPBACK_HOSTS, AdmissionPolicy
from presa_trio.wire.request_state import StateSealer

STATE_KEY_ENV = "PRESA_STATE_KEY"


def sealer_from(keys: Sequence[str]) -> StateSealer:
    """A key ring from the given keys, else a random per-process key (wire §10.4)."""
    if keys:
        return StateSealer([key.encode() for key in keys])
    return StateSealer.with_random_key()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="presa-trio", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="serve the fixture over Streamable HTTP")
    serve_cmd.add_argument("--host", default="127.0.0.1")
    serve_cmd.add_argument("--port", type=int, default=3000)
    serve_cmd.add_argument(
        "--allow-host", action="append", default=[],
        help="another Host/Origin name to admit (DNS-rebinding allowlist)",
    )
    serve_cmd.add_argument(
        "--state-key", action="append", default=[],
        help=f"requestState HMAC key (repeat to rotate; first signs). Env: {STATE_KEY_ENV}",
    )
    serve_cmd.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr)
    keys = args.state_key or [k for k in os.environ.get(STATE_KEY_ENV, "").split(",") if k]
    allowed = LOOPBACK_HOSTS | {name.lower() for name in args.allow_host}
    app = build_app(sealer=sealer_from(keys))
    app.policy = AdmissionPolicy(allowed_hosts=allowed, allowed_origin_hosts=allowed)
    config = Config()
    config.bind = [f"{args.host}:{args.port}"]
    config.accesslog = None
    print(f"presa-trio serving http://{args.host}:{args.port}/mcp", file=sys.stderr)
    trio.run(serve, app, config)  # type: ignore[arg-type]
