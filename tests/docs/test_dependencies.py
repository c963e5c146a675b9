"""Every dependency ``pyproject.toml`` declares is named where the reader looks for why.

The README's "Dependencies" section names each run-time dependency and each
one of the ``postgresql`` and ``metrics`` extras; docs/dependencies.md
names those and the test extra's too, each with its reason.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def names(requirements: list[str]) -> set[str]:
    """The distribution names of ``requirements``, presa's own extras left out."""
    return {re.split(r"[^\w.-]", requirement)[0] for requirement in requirements} - {"presa-trio"}


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
    """presa-defined (docs/dependencies.md): each dependency, the test extra's
    included, is named on the page that says why it is there."""
    page = (ROOT / "docs" / "dependencies.md").read_text()
    wanted = served() | names(PROJECT["optional-dependencies"]["test"])
    assert unnamed(wanted, page) == []
