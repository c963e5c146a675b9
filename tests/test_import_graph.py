"""The modules of ``presa_trio`` import each other without a cycle, and so do its areas.

Imports made only for type checking count too (``if TYPE_CHECKING:``), and
so do imports inside functions: a cycle of types, or of lazy imports, is
still a cycle a reader has to hold in mind. An area is a subpackage
(``auth``, ``http``, ``server``, ``tasks``, ``wire``…) or a top-level module.
The request context is the bottom of the server's graph: handlers see the
server through its ``ServerView``, not by importing the registry.
"""

from __future__ import annotations

import ast
import graphlib
import subprocess
import sys
from pathlib import Path

import pytest

import presa_trio

ROOT = Path(presa_trio.__file__).parent
PACKAGE = "presa_trio"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in ROOT.rglob("*.py")}


def imports(path: Path) -> set[str]:
    """The project modules ``path`` imports, anywhere in the file (a package counts as one)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module.split(".")[0] == PACKAGE:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    found.add(submodule if submodule in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == PACKAGE)
    return found & set(MODULES)


def module_graph() -> dict[str, set[str]]:
    return {name: imports(path) - {name} for name, path in MODULES.items()}


def area(module: str) -> str:
    return ".".join(module.split(".")[:2])


def area_graph() -> dict[str, set[str]]:
    areas: dict[str, set[str]] = {}
    for module, imported in module_graph().items():
        areas.setdefault(area(module), set()).update(
            area(other) for other in imported if area(other) != area(module)
        )
    return areas


def test_no_module_of_the_package_is_part_of_an_import_cycle() -> None:
    """presa-defined (docs/architecture.md, layers): ``graphlib`` finds a topological
    order of every module's imports."""
    graph = module_graph()
    assert len(graph) > 60
    list(graphlib.TopologicalSorter(graph).static_order())


def test_no_area_imports_one_that_imports_it() -> None:
    """presa-defined (docs/architecture.md, layers): auth, http, server, tasks and wire
    import one another in one direction only (auth knows no HTTP edge)."""
    areas = area_graph()
    assert {"presa_trio.auth", "presa_trio.http", "presa_trio.server", "presa_trio.tasks"} <= set(
        areas
    )
    list(graphlib.TopologicalSorter(areas).static_order())
    assert "presa_trio.http" not in areas["presa_trio.auth"]


def test_the_check_finds_a_cycle_made_only_of_type_checking_imports(tmp_path: Path) -> None:
    """presa-defined: the check is not vacuous; an import under TYPE_CHECKING counts."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from presa_trio.server.registry import Server\n"
    )
    graph = {"presa_trio.server.registry": {"sample"}, "sample": imports(sample)}
    assert graph["sample"] == {"presa_trio.server.registry"}
    with pytest.raises(graphlib.CycleError):
        list(graphlib.TopologicalSorter(graph).static_order())


def test_no_library_module_imports_the_command_line() -> None:
    """presa-defined: the command-line package is the top of the graph; outside it,
    only ``__main__`` imports it, to run it."""
    cli = "presa_trio.cli"
    importers = {
        module
        for module, imported in module_graph().items()
        if area(module) != cli and any(area(other) == cli for other in imported)
    }
    assert importers == {"presa_trio.__main__"}


def test_the_request_context_imports_nothing_of_the_server() -> None:
    """presa-defined: ``RequestContext.server`` is a ``ServerView`` protocol, so the
    context needs neither the registry nor the extensions."""
    imported = module_graph()["presa_trio.server.context"]
    assert {m for m in imported if m.startswith("presa_trio.server")} == set()


def test_the_client_loads_no_module_of_the_server_its_edge_or_the_tasks_runtime() -> None:
    """presa-defined (docs/client.md): the client knows only the wire; a fresh
    interpreter that imports its commands has loaded nothing of ``server``,
    ``http`` or ``tasks``, not even through a package's ``__init__``."""
    probe = (
        "import sys, presa_trio.client.commands\n"
        "print(len([m for m in sys.modules if m.startswith('presa_trio.')]))\n"
        "print(*sorted(m for m in sys.modules if m.startswith(('presa_trio.server',"
        " 'presa_trio.tasks', 'presa_trio.http'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert int(loaded[0]) > 10  # the client's own modules and the wire's were loaded
    assert loaded[1] == ""
