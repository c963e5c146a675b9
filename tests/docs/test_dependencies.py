"""Every dependency ``pyproject.toml`` declares is named where the reader looks for why.

The README's "Dependencies" section names each run-time dependency and each
one of the ``postgresql`` and ``metrics`` extras; docs/dependencies.md
names those, the test extra's, and what the nox sessions pin besides
(``noxfile.py``'s ``name==version`` constants), each with its reason. And
every library the package imports is one it declares, so none arrives
unnamed as another's dependency.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
#: The package's modules each extra serves; only they may import an extra's libraries.
EXTRA_MODULES = {
    "postgresql": ("presa_trio/tasks/stores/postgres/",),
    "metrics": ("presa_trio/http/metrics.py", "presa_trio/http/workers.py"),
}


def names(requirements: list[str]) -> set[str]:
    """The distribution names of ``requirements``, presa's own extras left out."""
    return {re.split(r"[^\w.-]", requirement)[0] for requirement in requirements} - {"presa-trio"}


def normal(name: str) -> str:
    """A distribution's name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_libraries(path: Path) -> set[str]:
    """The distributions whose modules ``path`` imports: neither the standard library nor presa."""
    tops: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    tops -= {*sys.stdlib_module_names, "presa_trio"}
    found = importlib.metadata.packages_distributions()
    return {normal(dist) for top in tops for dist in found.get(top, [top])}


def undeclared(modules: dict[str, set[str]]) -> list[str]:
    """Each ``module: library`` of ``modules`` (a path and what it imports) that
    ``pyproject.toml`` does not declare for it: a run-time dependency, or one of
    an extra whose modules it is."""
    extras = PROJECT["optional-dependencies"]
    problems = []
    for module, libraries in sorted(modules.items()):
        allowed = {normal(name) for name in names(PROJECT["dependencies"])}
        for extra, homes in EXTRA_MODULES.items():
            if module.startswith(homes):
                allowed |= {normal(name) for name in names(extras[extra])}
        problems += [f"{module}: {library}" for library in sorted(libraries - allowed)]
    return problems


def pinned_by_nox() -> set[str]:
    """The distributions ``noxfile.py`` pins in a constant of its own (``"ruff==0.17.5"``)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    constants = [
        node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
    ]
    return names([value for value in constants if isinstance(value, str) and "==" in value])


def served() -> set[str]:
    extras = PROJECT["optional-dependencies"]
    return names(PROJECT["dependencies"] + extras["postgresql"] + extras["metrics"])


def unnamed(wanted: set[str], text: str) -> list[str]:
    return sorted(name for name in wanted if not re.search(rf"(?<![\w-]){name}(?![\w-])", text))


def test_the_readme_names_every_dependency_and_extra() -> None:
    """presa-defined (README.md, Dependencies): each dependency of serving, and of its
    two extras, is named there."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Dependencies\n")[1].split("\n## ")[0]
    assert unnamed(served(), section) == []


def test_the_dependencies_page_names_every_dependency() -> None:
    """presa-defined (docs/dependencies.md): each dependency, the test extra's and
    the nox sessions' included, is named on the page that says why it is there."""
    page = (ROOT / "docs" / "dependencies.md").read_text()
    wanted = served() | names(PROJECT["optional-dependencies"]["test"]) | pinned_by_nox()
    assert unnamed(wanted, page) == []


def test_every_library_the_package_imports_is_declared() -> None:
    """presa-defined (README.md, Dependencies): a library presa imports is one of its
    run-time dependencies, or of the extra whose modules import it (psycopg only in
    the PostgreSQL store); one that only arrives as another's dependency (hypercorn's
    h11, trio's outcome) is declared all the same, with its reason."""
    package = ROOT / "presa_trio"
    modules = {
        path.relative_to(ROOT).as_posix(): imported_libraries(path)
        for path in package.rglob("*.py")
    }
    assert undeclared(modules) == []


def test_the_import_check_finds_an_undeclared_library() -> None:
    """presa-defined: an extra's library outside its modules, and a library only
    another declares, are both named."""
    modules = {
        "presa_trio/tasks/stores/postgres/store.py": {"psycopg", "trio"},
        "presa_trio/tasks/stores/sqlite/store.py": {"psycopg", "wsproto"},
    }
    assert undeclared(modules) == [
        "presa_trio/tasks/stores/sqlite/store.py: psycopg",
        "presa_trio/tasks/stores/sqlite/store.py: wsproto",
    ]
