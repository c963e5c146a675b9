"""The set of JSON-RPC error codes presa can send: the spec's, and nothing else.

Two views of the same rule. Every error class in the package carries one of
the defined codes; and no code in the package writes a literal from the
reserved range (-32768…-32000) that is not one of them, so no handler can
build a legacy or retired code by hand.
"""

from __future__ import annotations

import importlib
import io
import itertools
import pkgutil
import tokenize
from pathlib import Path

import presa_trio
from presa_trio.wire import errors

#: JSON-RPC 2.0's own codes and the three the 2026-07-28 spec defines (basic/index §Error Codes).
DEFINED = {-32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022}
#: Codes an older document or SDK still names, which presa must never send.
RETIRED = {-32002, -32003, -32042}
#: The one code of a draft presa serves only behind an opt-in, and where it is spelled:
#: SEP-2694's ``events_gone``, in the sub-range the base spec calls legacy (spec-notes §50).
DRAFT = {-32010: "wire/tasks.py"}
#: The ends of the reserved range, which the check of every error sent spells (E-09).
BOUNDS = {("wire/errors.py", -32768), ("wire/errors.py", -32000)}


def error_classes() -> set[type[errors.McpError]]:
    """Every McpError subclass defined anywhere in the package (``__main__`` aside: it runs)."""
    for module in pkgutil.walk_packages(presa_trio.__path__, "presa_trio."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: set[type[errors.McpError]] = set()
    pending: list[type[errors.McpError]] = [errors.McpError]
    while pending:
        cls = pending.pop()
        found.add(cls)
        pending.extend(cls.__subclasses__())
    return found


def reserved_literals(source: str) -> list[int]:
    """Negative integer literals in the JSON-RPC reserved range, comments and strings aside."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    return [
        -int(token.string)
        for before, token in itertools.pairwise(tokens)
        if before.string == "-"
        and token.type == tokenize.NUMBER
        and token.string.isdigit()
        and 32000 <= int(token.string) <= 32768
    ]


def test_every_error_class_carries_a_defined_code() -> None:
    """Spec-mandated (2026-07-28 basic/index §Error Codes: -32000…-32019 are legacy,
    -32020…-32099 belong to the spec, -32002 and -32042 are retired; changelog:
    -32003 became -32021; E-09, T-73): each error class presa can raise has a code of
    JSON-RPC 2.0 or one of -32020, -32021, -32022, and the capability error is -32021;
    the one exception is SEP-2694's -32010, sent only with --task-events (spec-notes §50)."""
    classes = error_classes()
    assert {cls.code for cls in classes} <= DEFINED | set(DRAFT)
    assert [cls.__name__ for cls in classes if cls.code in DRAFT] == ["EventsGone"]
    assert errors.MissingRequiredClientCapability.code == -32021
    assert not {cls.code for cls in classes} & RETIRED


def test_no_code_in_the_package_spells_another_reserved_code() -> None:
    """Spec-mandated (2026-07-28 basic/index §Error Codes; E-09, T-73): no module
    writes a reserved-range number that is not a defined code (the range's own ends
    aside), so an error can only be sent with one of them."""
    package = Path(presa_trio.__file__).parent
    files = sorted(package.rglob("*.py"))
    assert Path(errors.__file__) in files
    found = {
        (path.relative_to(package).as_posix(), code)
        for path in files
        for code in reserved_literals(path.read_text(encoding="utf-8"))
    }
    drafted = {(where, code) for code, where in DRAFT.items()}
    assert {code for _, code in found - drafted - BOUNDS} <= DEFINED, sorted(found)
    assert ("wire/errors.py", -32021) in found


def test_the_literal_scan_sees_numbers_but_not_prose() -> None:
    """presa-defined: the scan above is not vacuous; it reads code, not comments."""
    source = 'CODE = -32003  # not -32004\nTEXT = "-32005"\nOTHER = 5 - 32006\n'
    assert reserved_literals(source) == [-32003, -32006]
