"""``presa-trio serve`` as a subprocess beside the authorization server, and a client of it."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import attrs
import httpx
import trio

from presa_trio.server.methods import CORE_METHODS, name_params
from presa_trio.tasks.extension import TasksExtension
from presa_trio.testing import headers_for, request
from tests.auth.authorization_server import AuthorizationServer
from tests.e2e.serve_process import SERVING, ServeProcess

#: ``Mcp-Name`` sources: the core's and the Tasks extension's.
ALL_NAME_PARAMS = name_params([*CORE_METHODS, *TasksExtension().methods()])


def free_port() -> int:
    """A loopback port nothing listens on right now, for a program that must be told
    its port before it starts (another may take the port meanwhile)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@attrs.frozen
class Presa:
    """A running ``presa-trio serve``: its endpoint, and a client for it."""

    url: str
    http: httpx.AsyncClient
    process: trio.Process
    # Its stderr (the log), read line by line; None where the test reads it itself.
    log: ServeProcess | None = None

    @property
    def resource(self) -> str:
        return self.url

    async def post(
        self,
        message: Mapping[str, Any],
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        sent = {k: v for k, v in headers_for(message, ALL_NAME_PARAMS).items() if k != "host"}
        if token is not None:
            sent["authorization"] = f"Bearer {token}"
        sent.update(headers or {})
        return await self.http.post(self.url, json=message, headers=sent)

    async def call(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        token: str | None = None,
        **kw: Any,
    ) -> httpx.Response:
        return await self.post(request(method, params, **kw), token)


async def start_presa(
    nursery: trio.Nursery,
    http: httpx.AsyncClient,
    flags: Sequence[str],
    port: int = 0,
) -> Presa:
    """``presa-trio serve`` with ``flags``, once it says where it serves.

    The port is the one the server binds (``--port 0``) unless ``port`` names
    one. The process and the reading of its stderr are children of
    ``nursery``: cancelling it (the test's end) terminates the server.
    """
    command = [sys.executable, "-m", "presa_trio", "serve", "--port", str(port), *flags]
    process: trio.Process = await nursery.start(
        partial(
            trio.run_process,
            command,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
    )
    log = ServeProcess(process)
    nursery.start_soon(log.read_stderr)
    with trio.fail_after(30):
        url = (await log.wait_for_line(SERVING.pattern))[1]
    return Presa(url, http, process, log)


async def token_from_endpoint(
    http: httpx.AsyncClient,
    issuer: AuthorizationServer,
    client: str,
    resource: str,
    scope: str = "",
) -> str:
    """A token from the token endpoint: client credentials, RFC 8707 ``resource``."""
    form = {"grant_type": "client_credentials", "resource": resource}
    if scope:
        form["scope"] = scope
    response = await http.post(
        issuer.issuer + "/token", data=form, auth=(client, issuer.secret(client))
    )
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


#: Slack on every bound: process scheduling on a loaded machine, never the design.
SLACK_S = 1.5
