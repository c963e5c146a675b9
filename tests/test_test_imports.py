"""Tests share code through fixtures and plain modules, never by importing a test module.

A test module (``test_*.py``) or a ``conftest.py`` imported by another
module is collected twice, or runs its fixtures in a module that did not
ask for them, and hides from its reader that other tests lean on it. What
several tests use lives in a plain module of the package (``tests/expect.py``,
``tests/auth/harness.py``…), and a ready-made object is a fixture of the
package's ``conftest.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
MODULES = sorted(TESTS.rglob("*.py"))


def is_shared_only_by_pytest(module: str) -> bool:
    """Whether ``module`` (dotted) names a test module or a conftest."""
    last = module.rsplit(".", 1)[-1]
    return last == "conftest" or last.startswith("test_")


def imported_test_modules(source: str) -> list[str]:
    """The test modules and conftests ``source`` imports, anywhere in the file."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module.split(".")[0] != TESTS.name:
                continue
            candidates = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names if a.name.split(".")[0] == TESTS.name]
        else:
            continue
        found.extend(name for name in candidates if is_shared_only_by_pytest(name))
    return found


def test_there_are_modules_to_check() -> None:
    assert len(MODULES) > 100


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(TESTS)))
def test_no_module_of_the_tests_imports_a_test_module_or_a_conftest(path: Path) -> None:
    assert imported_test_modules(path.read_text()) == []


def test_the_check_catches_each_way_of_importing_a_test_module() -> None:
    source = (
        "from tests.auth.conftest import http\n"
        "from tests.e2e.test_restart import Peer\n"
        "from tests.e2e import test_stdio\n"
        "import tests.test_cli\n"
        "from tests.expect import result_of\n"
        "from tests.auth.harness import Presa\n"
    )
    assert imported_test_modules(source) == [
        "tests.auth.conftest",
        "tests.e2e.test_restart",
        "tests.e2e.test_stdio",
        "tests.test_cli",
    ]
