"""``presa-trio serve`` as a subprocess beside the authorization server, and a client of it."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio

from presa_trio.server.methods import CORE_METHODS, name_params
from presa_trio.tasks.extension import TasksExtension
from presa_trio.testing import headers_for, request
from tests.auth.authorization_server import AuthorizationServer

#: ``Mcp-Name`` sources: the core's and the Tasks extension's.
ALL_NAME_PARAMS = name_params([*CORE_METHODS, *TasksExtension().methods()])


#: Polls of the metadata document while presa starts (each waits 50 ms).
STARTUP_POLLS = 400


def free_port() -> int:
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
    log: Path | None = None,
    port: int | None = None,
) -> Presa:
    """``presa-trio serve`` with ``flags`` on a free port, once it answers.

    The process is a child of ``nursery``: cancelling it (the test's end)
    terminates the server. With ``log``, its stderr (the log) goes to that file.
    """
    port = free_port() if port is None else port
    url = f"http://127.0.0.1:{port}/mcp"
    command = [sys.executable, "-m", "presa_trio", "serve", "--port", str(port), *flags]
    with contextlib.ExitStack() as files:
        stderr = None if log is None else files.enter_context(log.open("wb"))
        process: trio.Process = await nursery.start(
            partial(trio.run_process, command, stdin=subprocess.DEVNULL, stderr=stderr, check=False)
        )
    for _ in range(STARTUP_POLLS):
        if process.returncode is not None:
            break
        try:
            await http.get(f"http://127.0.0.1:{port}/")
            return Presa(url, http, process)
        except httpx.TransportError:
            await trio.sleep(0.05)
    raise AssertionError(f"presa did not start: {command}")


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
