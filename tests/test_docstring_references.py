"""Every cross-reference in ``presa_trio``'s docstrings and comments names something that exists.

Docstrings and comments name code with a role (``:mod:``, ``:class:``,
``:meth:``, ``:func:``, ``:data:``, ``:attr:``, ``:exc:``, ``:obj:``). When
code moves, a reference to a module, class or method that is gone sends
the reader who follows it nowhere. Each reference is resolved the way a
reader would look it up: a dotted name from the module it starts with; a
name with a leading dot from the module's own package; otherwise from the
class the text sits in, then the module's namespace and the builtins, and,
in the module's docstring, the classes the module defines.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import io
import pkgutil
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import attrs
import pytest

import presa_trio
from presa_trio.tasks import supervisor

#: A role and its target: ``:meth:`~a.b.C.d```, ``:func:`title <a.b.f>```.
ROLE = re.compile(r":(?:mod|class|meth|func|data|attr|exc|obj):`([^`]+)`")


def target_of(text: str) -> str:
    """The dotted name a role's text points at, without ``~``, a title or ``()``."""
    titled = re.fullmatch(r"[^<]*<([^>]+)>", text.strip())
    name = (titled.group(1) if titled else text).strip().lstrip("~")
    return name.removesuffix("()")


def declared(owner: type, name: str) -> bool:
    """Whether ``owner`` or a base declares ``name`` as an attribute without a class value."""
    for klass in owner.__mro__:
        if name in inspect.get_annotations(klass):
            return True
        if attrs.has(klass) and name in {field.name for field in attrs.fields(klass)}:
            return True
    return False


def reachable(start: object, names: list[str]) -> bool:
    """Whether ``start.names[0].names[1]…`` exists, an attribute declared on a class included."""
    current = start
    for index, name in enumerate(names):
        if hasattr(current, name):
            current = getattr(current, name)
        elif isinstance(current, type) and declared(current, name):
            # An instance attribute: its value has no attributes to look up.
            return index == len(names) - 1
        else:
            return False
    return True


def importable(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or reachable from the longest module it begins with."""
    names = dotted.split(".")
    for cut in range(len(names), 0, -1):
        try:
            module = importlib.import_module(".".join(names[:cut]))
        except ImportError:
            continue
        return reachable(module, names[cut:])
    return False


def resolves(target: str, module: ModuleType, context: list[type]) -> bool:
    """Whether ``target``, written in ``module`` inside ``context`` (classes), exists."""
    if target.startswith("."):
        package = module.__name__ if hasattr(module, "__path__") else module.__package__
        return importable(f"{package}{target}")
    names = target.split(".")
    return (
        any(reachable(klass, names) for klass in context)
        or reachable(module, names)
        or reachable(builtins, names)
        or importable(target)
    )


def texts(source: str) -> Iterator[tuple[int, str]]:
    """Each docstring and comment of ``source``, with the line it starts on."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = node.body[0] if node.body else None
            if (
                isinstance(docstring, ast.Expr)
                and isinstance(docstring.value, ast.Constant)
                and isinstance(docstring.value.value, str)
            ):
                yield docstring.lineno, docstring.value.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def enclosing(tree: ast.Module, line: int, module: ModuleType) -> list[type]:
    """The classes around ``line``, innermost first; for the module docstring, every class."""
    classes: list[tuple[int, list[str]]] = []

    def visit(node: ast.AST, outer: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                path = [*outer, child.name]
                if child.lineno <= line <= (child.end_lineno or child.lineno):
                    classes.append((len(path), path))
                visit(child, path)

    visit(tree, [])
    docstring = tree.body[0] if tree.body else None
    if (
        isinstance(docstring, ast.Expr)
        and isinstance(docstring.value, ast.Constant)
        and docstring.lineno <= line <= (docstring.end_lineno or docstring.lineno)
    ):
        classes = [(1, [node.name]) for node in tree.body if isinstance(node, ast.ClassDef)]
    found: list[type] = []
    for _, path in sorted(classes, reverse=True):
        klass: object = module
        for name in path:
            klass = getattr(klass, name, None)
        if isinstance(klass, type):
            found.append(klass)
    return found


def unresolved(source: str, module: ModuleType) -> list[str]:
    """The role references in ``source`` (the text of ``module``) that name nothing."""
    tree = ast.parse(source)
    missing = []
    for line, text in texts(source):
        for reference in ROLE.finditer(text):
            if not resolves(target_of(reference[1]), module, enclosing(tree, line, module)):
                missing.append(f"line {line}: {reference[0]}")
    return missing


#: Every module of the package but ``__main__``, which runs the command line when imported.
MODULES = [
    "presa_trio",
    *sorted(
        found.name
        for found in pkgutil.walk_packages(presa_trio.__path__, "presa_trio.")
        if not found.name.endswith(".__main__")
    ),
]


def test_there_are_modules_to_check() -> None:
    assert "presa_trio.tasks.supervisor" in MODULES
    assert len(MODULES) > 100


@pytest.mark.parametrize("name", MODULES)
def test_every_reference_in_a_docstring_or_comment_resolves(name: str) -> None:
    """presa-defined (docs/architecture.md): no stale names in docstrings."""
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert unresolved(Path(module.__file__).read_text(encoding="utf-8"), module) == []


def test_the_check_finds_a_reference_to_what_is_gone() -> None:
    """presa-defined: the check is not vacuous."""
    source = '''"""Runs :class:`Supervisor` (:meth:`Supervisor.launch`, :meth:`launch`)."""


class Supervisor:
    """Its nursery: :meth:`_supervise`, not :meth:`TaskRunner._supervise`."""

    # Stopped by :meth:`stop`, never by :meth:`~presa_trio.tasks.runner.TaskRunner.stop`.
    _stopping: bool = False
'''
    assert unresolved(source, supervisor) == [
        "line 5: :meth:`TaskRunner._supervise`",
        "line 7: :meth:`~presa_trio.tasks.runner.TaskRunner.stop`",
    ]
    assert unresolved('"""See :mod:`.runner` and :func:`.runner.new_task_id`."""', supervisor) == []
    assert unresolved('"""See :mod:`.coordination`."""', supervisor) == [
        "line 1: :mod:`.coordination`"
    ]
