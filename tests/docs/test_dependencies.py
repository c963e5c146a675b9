"""Every dependency ``pyproject.toml`` declares is named where the reader looks for why.

The README's "Dependencies" section names each run-time dependency and each
one of the ``postgresql`` and ``metrics`` extras; docs/dependencies.md
names those, the test extra's, and what the nox sessions pin besides
(``noxfile.py``'s ``name==version`` constants), each with its reason.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def names(requirements: list[str]) -> set[str]:
    """The distribution names of ``requirements``, presa's own extras left out."""
    return {re.split(r"[^\w.-]", requirement)[0] for requirement in requirements} - {"presa-trio"}


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
