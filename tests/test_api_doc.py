"""docs/api.md names only what exists: every listed name imports from the module it gives.

The page's tables have the columns ``name | import from | what it is``; a
name ``A.b`` is the attribute ``b`` of ``A`` (a method, or an attrs field).
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import attrs
import pytest

from presa_trio.testing import Client, TaskHandle

PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.md"
HEADER = "| name | import from | what it is |"
ROW = re.compile(r"^\| `(?P<name>[A-Za-z_][\w.]*)` \| `(?P<module>[\w.]+)` \|")


def listed() -> list[tuple[str, str]]:
    """The (module, name) of every row of the page's API tables."""
    rows: list[tuple[str, str]] = []
    in_table = False
    for line in PAGE.read_text().splitlines():
        if line == HEADER:
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and not line.startswith("| ---"):
            match = ROW.match(line)
            assert match is not None, f"an API row docs/api.md cannot parse: {line}"
            rows.append((match["module"], match["name"]))
    return rows


def resolve(module_name: str, dotted: str) -> object:
    """Import ``dotted`` from ``module_name``, an attrs field counting as an attribute."""
    first, *rest = dotted.split(".")
    target: object = getattr(importlib.import_module(module_name), first)
    for part in rest:
        if isinstance(target, type) and attrs.has(target) and part in attrs.fields_dict(target):
            target = attrs.fields_dict(target)[part]
        else:
            target = getattr(target, part)
    return target


def test_the_page_lists_the_api() -> None:
    """presa-defined (docs/api.md): the tables are found and hold the main entry points."""
    names = {name for _, name in listed()}
    assert {"Server.tool", "serve_http", "serve_stdio", "connect", "ToolError"} <= names


@pytest.mark.parametrize(("module_name", "name"), listed())
def test_every_listed_name_imports_from_its_module(module_name: str, name: str) -> None:
    """presa-defined (docs/api.md): each name is importable from the module the page gives."""
    assert resolve(module_name, name) is not None


@pytest.mark.parametrize("owner", [Client, TaskHandle], ids=lambda owner: owner.__name__)
def test_the_testing_table_lists_every_public_call_of_the_typed_client(owner: type) -> None:
    """presa-defined (docs/api.md, Testing): each public method of the typed client
    and of a task handle has its row, so the table cannot fall behind."""
    public = {
        name
        for name, value in vars(owner).items()
        if not name.startswith("_") and inspect.isfunction(value)
    }
    rows = {name for module, name in listed() if module == "presa_trio.testing"}
    missing = {f"{owner.__name__}.{name}" for name in public} - rows
    assert missing == set()
