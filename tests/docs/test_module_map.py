"""docs/architecture.md's module map names every module of the package.

Each ``.py`` file under ``presa_trio/`` (``__init__.py`` aside) must be
named in the map, the fenced block at the top of the page, by its file name
or, inside a store's package, by its stem (``sqlite/ (store, database…)``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "presa_trio"
MODULES = sorted(
    path.relative_to(PACKAGE) for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"
)


def module_map() -> str:
    """The first fenced block of docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    return text.split("```")[1]


@pytest.mark.parametrize("module", MODULES, ids=str)
def test_the_module_map_names_every_module(module: Path) -> None:
    """presa-defined (docs/architecture.md): no module missing from the map."""
    assert re.search(rf"\b{re.escape(module.stem)}\b", module_map()), (
        f"docs/architecture.md does not name presa_trio/{module}"
    )
