"""The files whose text may cite the specification: code, tests, tools and docs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Where citations are written: the package, its tests and tools, the docs.
SOURCES = ("presa_trio", "tests", "examples", "conformance", "tools", "bench", "docs")
SUFFIXES = {".py", ".md", ".toml"}


def citing_files(but: str) -> Iterator[Path]:
    """Every file that may cite a source, but ``but`` (a checker, whose examples are wrong)."""
    for source in SOURCES:
        found = (ROOT / source).rglob("*")
        yield from (p for p in found if p.suffix in SUFFIXES and p != Path(but).resolve())
    yield ROOT / "README.md"
