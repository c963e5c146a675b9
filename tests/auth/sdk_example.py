"""The official Python SDK's OAuth example, ``examples/servers/simple-auth``, as its README runs it.

The example is no package of its own on the index: the ``mcp`` sdist
carries the SDK's ``examples/`` tree. :func:`install_example` downloads the
sdist of the ``mcp`` the tests run, and installs the example from it with
that ``mcp`` into a venv of its own (it needs pydantic-settings and click,
which the tests do not), once per checkout, in pytest's cache directory.
When the sdist, or the example in it, cannot be had it raises
:class:`Unavailable`, whose message is the reason to skip.

:func:`serve_example` starts its two servers exactly as the README does:

- ``mcp-simple-auth-as --port P``: the authorization server at
  ``http://localhost:P`` (the SDK's ``create_auth_routes``): RFC 8414
  metadata, dynamic registration (RFC 7591), the authorization code grant
  with PKCE through a login form with demo credentials, opaque tokens, no
  refresh tokens, and an RFC 7662 introspection endpoint that asks no
  client authentication;
- ``mcp-simple-auth-rs --port Q --auth-server http://localhost:P``: an SDK
  ``MCPServer`` at ``http://localhost:Q/mcp`` that requires the scope
  ``user``, checks tokens at that introspection endpoint and has one tool,
  ``get_time``.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tarfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import httpx

from tests.auth.harness import free_port
from tests.e2e.serve_process import REPOSITORY, serving

#: The SDK the tests run; the example comes from the same release.
MCP_VERSION = importlib.metadata.version("mcp")
#: Where the example lives in the SDK's tree (and so in its sdist).
EXAMPLE = "examples/servers/simple-auth"
#: uvicorn's line once the socket is bound; the URL is its first group.
LISTENING = r"Uvicorn running on (http://\S+)"
INSTALL_TIMEOUT_S = 600
#: pip's words for a distribution the index does not have or cannot serve.
NOT_TO_BE_HAD = ("No matching distribution", "Could not find a version", "Network is unreachable")


class Unavailable(Exception):
    """The example cannot be had here; the message says why."""


def pip(python: Path | str, *arguments: str | Path) -> None:
    """``python -m pip ARGUMENTS``; a distribution the index lacks is :class:`Unavailable`."""
    done = subprocess.run(
        [str(python), "-m", "pip", *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )
    said = done.stdout + done.stderr
    if done.returncode != 0 and any(words in said for words in NOT_TO_BE_HAD):
        last = said.strip().splitlines()[-1]
        raise Unavailable(f"pip {' '.join(map(str, arguments))}: {last}")
    assert done.returncode == 0, said


def install_example(root: Path) -> Path:
    """The ``bin`` directory of a venv in ``root`` with the example installed; built once."""
    venv = root / "venv"
    ready = root / "installed"
    if ready.exists():
        return venv / "bin"
    sdists = root / "sdist"
    wanted = f"mcp=={MCP_VERSION}"
    pip(sys.executable, "download", "--no-binary", ":all:", "--no-deps", "--dest", sdists, wanted)
    [archive] = sdists.glob("mcp-*.tar.gz")
    with tarfile.open(archive) as sdist:
        members = [m for m in sdist.getmembers() if f"/{EXAMPLE}/" in m.name]
        if not members:
            raise Unavailable(f"the mcp {MCP_VERSION} sdist carries no {EXAMPLE}")
        sdist.extractall(root / "source", members=members, filter="data")
    [project] = (root / "source").glob(f"*/{EXAMPLE}")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=INSTALL_TIMEOUT_S)
    constraints = REPOSITORY / "constraints.txt"
    pip(venv / "bin" / "python", "install", "-q", "-c", constraints, wanted, project)
    ready.write_text(f"mcp {MCP_VERSION}\n")
    return venv / "bin"


@attrs.frozen
class Example:
    """The example's two servers, running."""

    #: The authorization server's issuer, exactly as its metadata names it.
    issuer: str
    #: The resource server's MCP endpoint.
    mcp_url: str


@asynccontextmanager
async def serve_example(bin_dir: Path, http: httpx.AsyncClient) -> AsyncIterator[Example]:
    """Both servers of the example, on free loopback ports, until the block ends."""
    authorization = [str(bin_dir / "mcp-simple-auth-as"), f"--port={free_port()}"]
    async with serving(authorization, LISTENING) as issuer:
        resource = [
            str(bin_dir / "mcp-simple-auth-rs"),
            f"--port={free_port()}",
            f"--auth-server={issuer.url}",
            "--transport=streamable-http",
        ]
        metadata = await http.get(issuer.url + "/.well-known/oauth-authorization-server")
        async with serving(resource, LISTENING) as mcp:
            yield Example(issuer=metadata.json()["issuer"], mcp_url=mcp.url + "/mcp")
