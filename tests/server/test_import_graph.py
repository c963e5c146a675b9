"""The modules of ``presa_trio.server`` import each other without a cycle.

Imports made only for type checking count too: a cycle of types is still a
cycle a reader has to hold in mind. The request context is the bottom of the
graph: handlers see the server through its ``ServerView``, not by importing
the registry.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import presa_trio.server

SERVER_DIR = Path(presa_trio.server.__file__).parent
PACKAGE = "presa_trio.server"


def server_imports(path: Path) -> set[str]:
    """The ``presa_trio.server`` modules that ``path`` imports, anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module == PACKAGE:
                found.update(f"{PACKAGE}.{alias.name}" for alias in node.names)
            elif node.module.startswith(PACKAGE + "."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(PACKAGE + "."))
    modules = {f"{PACKAGE}.{p.stem}" for p in SERVER_DIR.glob("*.py")}
    return found & modules


def graph() -> dict[str, set[str]]:
    return {
        f"{PACKAGE}.{path.stem}": server_imports(path)
        for path in SERVER_DIR.glob("*.py")
        if path.stem != "__init__"
    }


def test_the_server_modules_import_each_other_without_a_cycle() -> None:
    """presa-defined: ``graphlib`` finds a topological order of the imports."""
    imports = graph()
    assert len(imports) > 10
    list(graphlib.TopologicalSorter(imports).static_order())


def test_the_request_context_imports_nothing_of_the_server() -> None:
    """presa-defined: ``RequestContext.server`` is a ``ServerView`` protocol, so the
    context needs neither the registry nor the extensions."""
    assert graph()[f"{PACKAGE}.context"] == set()
