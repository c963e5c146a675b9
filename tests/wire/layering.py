"""What a module of the pure wire layer may not import: I/O packages and the layers above it."""

from __future__ import annotations

#: Top-level packages that do I/O; wire must import none of them.
IO_PACKAGES = {"trio", "hypercorn", "anyio", "asyncio", "socket", "h11", "h2"}


#: Project packages above wire.
UPPER_LAYERS = {"server", "http", "tasks", "stdio", "cli", "fixtures"}


def forbidden(module: str) -> bool:
    parts = module.split(".")
    if parts[0] in IO_PACKAGES:
        return True
    return parts[0] == "presa_trio" and len(parts) > 1 and parts[1] in UPPER_LAYERS
