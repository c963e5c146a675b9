"""Where sign-in keeps what it got: one file per resource, readable by its owner only.

A sign-in leaves the access token, the refresh token if one came, the
authorization server it came from and the client registration used with
it. They live in ``$PRESA_TRIO_CONFIG`` (default
``$XDG_CONFIG_HOME/presa-trio``, else ``~/.config/presa-trio``), under
``tokens/``, one JSON file per resource named by a hash of its URL; each
file is created with mode 0600 and replaced whole, never edited in place.
``presa-trio logout URL`` removes the resource's file.

Spec: 2026-07-28 basic/authorization §Token Handling (refresh tokens kept
confidential in storage, OAuth 2.1 §4.3.1); client-registration (credentials
belong to the authorization server that issued them).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import trio

from presa_trio.wire.models import JSONObject

CONFIG_ENV = "PRESA_TRIO_CONFIG"


def config_dir() -> Path:
    """The user's configuration directory for presa-trio."""
    if chosen := os.environ.get(CONFIG_ENV):
        return Path(chosen)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "presa-trio"


def token_path(resource: str) -> Path:
    """The file that holds the sign-in for ``resource``."""
    name = hashlib.sha256(resource.encode()).hexdigest()[:32]
    return config_dir() / "tokens" / f"{name}.json"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_suffix(".tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)
    os.replace(partial, path)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


async def load(resource: str) -> JSONObject | None:
    """The saved sign-in for ``resource``, or None."""
    found = await trio.to_thread.run_sync(_read, token_path(resource))
    return found if isinstance(found, dict) and found.get("resource") == resource else None


async def save(record: JSONObject) -> Path:
    """Keep ``record`` (it names its ``resource``) in its file, mode 0600."""
    path = token_path(str(record["resource"]))
    await trio.to_thread.run_sync(_write, path, json.dumps(record, indent=2))
    return path


async def forget(resource: str) -> bool:
    """Remove the sign-in for ``resource``; whether there was one."""
    path = token_path(resource)
    try:
        await trio.to_thread.run_sync(path.unlink)
    except FileNotFoundError:
        return False
    return True
