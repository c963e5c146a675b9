"""Where sign-in keeps what it got: one file per resource, readable by its owner only.

A sign-in leaves the access token, the refresh token if one came, the
authorization server it came from and the client registration used with
it. They live in ``$PRESA_TRIO_CONFIG`` (default
``$XDG_CONFIG_HOME/presa-trio``, else ``~/.config/presa-trio``), under
``tokens/``, one JSON file per server named by a hash of its URL; each
file is written new with mode 0600 and moved over the old one, never
edited in place, nor written through a file found there.
``presa-trio logout URL`` removes the server's file.

Spec: 2026-07-28 basic/authorization §Token Handling (refresh tokens kept
confidential in storage, OAuth 2.1 §4.3.1); client-registration (credentials
belong to the authorization server that issued them).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Any

import trio

from presa_trio.client.errors import UsageProblem
from presa_trio.wire.http_values import is_bearer_token
from presa_trio.wire.models import JSONObject

CONFIG_ENV = "PRESA_TRIO_CONFIG"


def config_dir() -> Path:
    """The user's configuration directory for presa-trio."""
    if chosen := os.environ.get(CONFIG_ENV):
        return Path(chosen)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "presa-trio"


def token_path(endpoint: str) -> Path:
    """The file that holds the sign-in for the MCP endpoint ``endpoint``."""
    name = hashlib.sha256(endpoint.encode()).hexdigest()[:32]
    return config_dir() / "tokens" / f"{name}.json"


def _write(path: Path, text: str) -> None:
    """``text`` in a new file beside ``path`` (mkstemp: mode 0600, created, never one
    found there, whoever left it), then moved over ``path``: two commands writing at
    once each move a whole file of their own."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(partial, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(partial)
        raise


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


async def load(endpoint: str) -> JSONObject | None:
    """The saved sign-in for the MCP endpoint ``endpoint``, or None: also when the file
    holds no access token that can be sent (edited, or cut short), so a sign-in
    replaces it."""
    found = await trio.to_thread.run_sync(_read, token_path(endpoint))
    if not isinstance(found, dict) or found.get("endpoint") != endpoint:
        return None
    return found if is_bearer_token(found.get("access_token")) else None


async def save(endpoint: str, record: JSONObject) -> Path:
    """Keep ``record`` as the sign-in for ``endpoint``, in its file, mode 0600.

    The file is named by the endpoint the person gave, not by the resource
    the metadata names (which may be a prefix of it, and the same for several).
    """
    path = token_path(endpoint)
    kept = {**record, "endpoint": endpoint}
    try:
        await trio.to_thread.run_sync(_write, path, json.dumps(kept, indent=2))
    except OSError as error:  # the configuration directory a file, or not the user's
        raise UsageProblem(f"cannot keep the sign-in in {path}: {error.strerror}") from None
    return path


async def forget(endpoint: str) -> bool:
    """Remove the sign-in for ``endpoint``; whether there was one (none can be kept where
    the configuration directory is a file)."""
    path = token_path(endpoint)
    try:
        await trio.to_thread.run_sync(path.unlink)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        raise UsageProblem(f"cannot remove {path}: {error.strerror}") from None
    return True
