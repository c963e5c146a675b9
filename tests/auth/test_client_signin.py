"""Sign-in end to end: ``presa-trio login`` against presa guarded by a real authorization server.

presa runs with ``--auth-issuer`` pointing at the loopback authorization
server of the tests; the client discovers it from presa's 401, registers
itself (RFC 7591), and prints the authorization URL (``--no-browser``); the
test plays the browser of a person who has consented, following the URL
to the client's loopback redirect. Then ``presa-trio list`` sends the kept
token, and once that token has expired, refreshes it without a sign-in.

Spec: 2026-07-28 basic/authorization §Authorization Flow Steps, §Token Handling.
"""

from __future__ import annotations

import json
import subprocess
import time
from functools import partial
from pathlib import Path

import httpx
import trio

from presa_trio.client.tokens import CONFIG_ENV
from tests.auth.authorization_server import AuthorizationServer
from tests.auth.harness import start_presa
from tests.client.helpers import client, client_command, client_environment
from tests.e2e.serve_process import REPOSITORY


async def login(url: str, http: httpx.AsyncClient, env: dict[str, str]) -> tuple[int, str]:
    """``presa-trio login URL --no-browser``, the printed URL followed as a browser would."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            process: trio.Process = await nursery.start(
                partial(
                    trio.run_process,
                    client_command("login", url, "--no-browser"),
                    stdin=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    cwd=REPOSITORY,
                    env=env,
                    check=False,
                )
            )
            assert process.stderr is not None
            said = b""
            while b"/authorize?" not in said or not said.endswith(b"\n"):
                said += await process.stderr.receive_some(4096)
            line = next(w for w in said.decode().split() if "/authorize?" in w)
            browser = await http.get(line, follow_redirects=True)
            assert browser.status_code == 200
            async for chunk in process.stderr:
                said += chunk
    assert process.returncode is not None
    return process.returncode, said.decode()


async def test_login_then_list_then_a_refresh_without_signing_in_again(
    nursery: trio.Nursery, issuer: AuthorizationServer, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    presa = await start_presa(nursery, http, ["--auth-issuer", issuer.issuer])
    env = {**client_environment(), CONFIG_ENV: str(tmp_path)}

    status, said = await login(presa.url, http, env)
    assert status == 0, said
    assert f"signed in to {presa.url}" in said
    [kept] = (tmp_path / "tokens").iterdir()
    assert kept.stat().st_mode & 0o777 == 0o600
    record = json.loads(kept.read_text())
    assert record["resource"] == presa.url
    assert record["endpoint"] == presa.url
    assert record["issuer"] == issuer.issuer

    listed = await client("list", presa.url, "--json", env=env)
    assert listed.status == 0, listed.stderr
    assert json.loads(listed.stdout)["tools"]
    assert "Open this URL" not in listed.stderr

    record["expires_at"] = time.time() - 1  # the access token's life is over
    kept.write_text(json.dumps(record))
    again = await client("list", presa.url, "--json", env=env)
    assert again.status == 0, again.stderr
    assert "Open this URL" not in again.stderr
    renewed = json.loads(kept.read_text())
    assert renewed["access_token"] != record["access_token"]
    assert renewed["refresh_token"] != record["refresh_token"]
    assert kept.stat().st_mode & 0o777 == 0o600

    out = await client("logout", presa.url, env=env)
    assert out.status == 0
    assert not list((tmp_path / "tokens").iterdir())
