"""The modules a Python file imports, read from its syntax tree.

A relative import is read as one inside ``presa_trio.wire``, the package whose
layering the tests check most closely.
"""

from __future__ import annotations

import ast
from pathlib import Path


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, as dotted names (relative imports resolved)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = "presa_trio.wire".rsplit(".", node.level - 1)[0]
                found.add(f"{base}.{node.module}" if node.module else base)
            elif node.module is not None:
                found.add(node.module)
    return found
